"""The harness image: the repo's Dockerfile built through the Docker SDK, once per input.

The tag is ``cua-harness:<hash>``, the hash of the build context (the files .dockerignore
lets in, as the SDK sends them) and the base image (its name, and its id where the engine
has it), so an image of the same inputs
is reused and any change to the code, the Dockerfile or the wheelhouse builds a new one
(the engine's layer cache keeps that fast: the dependencies sit in layers of their own).

    python -m harness.containers.image --base-image localhost/cua-debian:bookworm
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness.errors import ConfigError
from sandboxes.errors import InfrastructureError
from sandboxes.extras import import_extra

if TYPE_CHECKING:
    from docker import DockerClient

REPO = "cua-harness"
INPUTS_LABEL = "cua.inputs"
DEFAULT_BASE_IMAGE = "python:3.11-slim-bookworm"


def repo_root() -> Path:
    """The checkout this package runs from (where the Dockerfile is)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "Dockerfile").is_file():
        raise ConfigError(f"expected the repo's Dockerfile at {root / 'Dockerfile'}, got none; "
                          "build from a checkout of the repo, or pass an image (docker:image=...)")
    return root


def context_files(root: Path) -> list[str]:
    """The build context's files, relative to ``root``, as the SDK would send them."""
    from docker.utils.build import exclude_paths

    ignore = root / ".dockerignore"
    patterns = [line.strip() for line in ignore.read_text().splitlines()
                if line.strip() and not line.startswith("#")] if ignore.is_file() else []
    return sorted(p for p in exclude_paths(str(root), patterns) if (root / p).is_file())


def inputs_hash(root: Path, base_image: str) -> str:
    """A hash of everything the image is built from."""
    digest = hashlib.sha256(f"base={base_image}\n".encode())
    for rel in context_files(root):
        digest.update(f"{rel}\0".encode())
        with open(root / rel, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def ensure_image(client: DockerClient, base_image: str = DEFAULT_BASE_IMAGE, *,
                 root: Path | None = None, log: TextIO | None = None) -> str:
    """The tag of the harness image for these inputs; built (with ``client``) when missing."""
    import docker.errors

    root = root or repo_root()
    try:  # a base image made again (same name, new content) makes a new harness image
        base_id = client.images.get(base_image).id
    except docker.errors.ImageNotFound:
        base_id = base_image  # pulled by the build
    digest = inputs_hash(root, f"{base_image}@{base_id}")
    tag = f"{REPO}:{digest}"
    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    if log is not None:
        print(f"building {tag} from {root / 'Dockerfile'} on {base_image}", file=log, flush=True)
    try:
        client.images.build(path=str(root), tag=tag, buildargs={"BASE_IMAGE": base_image},
                            labels={INPUTS_LABEL: digest}, rm=True, pull=False)
    except docker.errors.BuildError as exc:
        tail = "".join(str(c.get("stream", c.get("error", ""))) for c in list(exc.build_log)[-15:])
        raise InfrastructureError(f"expected the harness image to build on {base_image}, got: "
                                  f"{exc.msg}\n{tail}") from exc
    except docker.errors.APIError as exc:
        raise InfrastructureError(f"expected the Docker engine to build {tag}, got {exc}; is "
                                  "the base image there (docker images) and the engine up?") from exc
    return tag


def docker_client(timeout_s: float = 600.0) -> DockerClient:
    """A Docker SDK client from the environment (``DOCKER_HOST``), or a clear error."""
    docker = import_extra("docker", "docker", "the Docker engine (the Docker SDK for Python)")
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except docker.errors.DockerException as exc:
        raise ConfigError(f"expected a Docker engine at $DOCKER_HOST, got {exc}; start one, or "
                          "run scripts/podman_setup.sh and source its env file") from exc
    return client


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the harness image unless it exists.")
    parser.add_argument("--base-image", default=DEFAULT_BASE_IMAGE)
    args = parser.parse_args(argv)
    print(ensure_image(docker_client(), args.base_image, log=sys.stderr))
    return 0


if __name__ == "__main__":
    sys.exit(main())
