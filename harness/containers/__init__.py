"""Envs in containers: the harness image (``image``) and the ``docker`` env provider
(``provider``: ``--provider docker``), driven through the Docker SDK for Python, against
Docker or podman's Docker-compatible API. See docs/containers.md."""
