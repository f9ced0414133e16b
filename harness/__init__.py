"""The typed core of the harness: actions and codecs, observations, envs, tasks, agents,
the episode runner, the trajectory tree store and the `cua` CLI."""

__version__ = "0.1.0"
