"""``cua serve``: a policy behind an OpenAI-compatible HTTP endpoint (``app``, ``protocol``)."""
