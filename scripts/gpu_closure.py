"""The exact wheels a GPU machine needs: requirements/gpu.txt and everything it requires,
at the versions installed in this environment (the tested ones), less torch (the GPU
machine keeps its own build, and with it what only torch requires: sympy, networkx, CUDA).

    .venv/bin/python scripts/gpu_closure.py [requirements/gpu.txt]   # prints name==version lines

Markers are evaluated for this interpreter; the GPU machine's Python may differ in a minor
version, where the closure is the same for every package here. scripts/gpu_wheels.sh
downloads these lines with ``pip download --no-deps``.
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

#: never carried: the machine's own GPU build (torch) and what cannot travel (vllm)
NEVER = {"torch", "torchvision", "torchaudio", "vllm", "triton"}


def _requires(name: str) -> list[Requirement]:
    out = []
    for line in md.requires(name) or []:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(req)
    return out


def closure(requirements: Path) -> dict[str, str]:
    """name -> installed version of every distribution the file needs (see the docstring)."""
    lines = (line.split("#", 1)[0].strip() for line in requirements.read_text().splitlines())
    roots = [Requirement(line).name for line in lines if line]
    found: dict[str, str] = {}
    stack = list(roots)
    while stack:
        name = canonicalize_name(stack.pop())
        if name in found or name in NEVER or name.startswith("nvidia-"):
            continue
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            sys.exit(f"expected {name} installed here (the environment the project is tested in), "
                     "found none; run this with the project's .venv python")
        stack.extend(r.name for r in _requires(name))
    return dict(sorted(found.items()))


if __name__ == "__main__":
    file = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent.parent / "requirements" / "gpu.txt")
    print("\n".join(f"{name}=={version}" for name, version in closure(file).items()))
