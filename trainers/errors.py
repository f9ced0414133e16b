"""Errors raised by the trainers package (policy models, model agents, the policy server).

    InfrastructureError          (sandboxes.errors) not the agent's fault; the runner retries
    ├── EndpointError            an OpenAI-compatible endpoint failed: no connection, a
    │                            timeout, a 5xx/408/429 status, or a body that is not a chat
    │                            completion
    └── GenerationError          a training framework's generation failed inside an agent's
                                 ``act`` (verl's LLM server or its token builder): not the
                                 model's output, so never the agent's mistake
    ConfigError                  (sandboxes.errors) a configuration value of the wrong shape
    ├── ModelDirError            a model directory that is missing, incomplete, or of an
    │                            architecture the loader does not know
    ├── MissingExtraError        (sandboxes.errors) a backend whose optional extra is not installed
    ├── EndpointRejected         the endpoint refused the request (another 4xx: a bad model
    │                            name, an unsupported field); retrying would not help
    ├── TrainingDataError        no training rows (an empty store or export) or rows whose
    │                            screenshots are missing from the store
    └── TrainingSignalError      a dead training signal: a loss that is not finite, or exactly
                                 zero before anything was learned

An agent's ``act`` lets ``EndpointError`` out (the rollout re-raises infrastructure errors
and the runner retries the episode); ``EndpointRejected`` ends the episode as the agent's
failure, with the server's own message.
"""

from __future__ import annotations

from sandboxes.errors import ConfigError, InfrastructureError, MissingExtraError


class EndpointError(InfrastructureError):
    """An OpenAI-compatible endpoint did not give a usable answer (retryable)."""


class GenerationError(InfrastructureError):
    """A framework's generation (verl's server or token builder) failed in an agent's act."""


class ModelDirError(ConfigError):
    """A model directory that cannot be loaded as a policy."""


class EndpointRejected(ConfigError):
    """The endpoint refused the request with a 4xx status that retrying would not fix."""


class TrainingDataError(ConfigError):
    """Nothing to train on, or training rows that cannot be read whole."""


class TrainingSignalError(ConfigError):
    """Training stopped: its signal is dead (see ``trainers.training.metrics.check_signal``)."""


__all__ = ["ConfigError", "EndpointError", "EndpointRejected", "GenerationError", "InfrastructureError",
           "MissingExtraError", "ModelDirError", "TrainingDataError", "TrainingSignalError"]
