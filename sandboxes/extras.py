"""The optional extras of ``cua-harness`` and the modules each one brings.

The core (``pip install cua-harness``) runs browser sandboxes, FSM sites, the harness and
the ``cua`` CLI; a feature whose package lives in an extra imports it at its point of use,
through ``import_extra``, and a command that needs one checks it once, up front, with
``require_extra``: either way a missing extra is one ``MissingExtraError`` that names the
extra to install. The README lists what each extra brings.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from sandboxes.errors import MissingExtraError

#: extra -> the top-level modules it provides (what pyproject.toml's extras install)
EXTRAS: dict[str, tuple[str, ...]] = {
    "desktop": ("mss", "Xlib"),  # the desktop sandbox: screen capture, XTEST input
    "miniwob": ("miniwob",),  # the MiniWoB++ task pages
    "export": ("datasets",),  # Hugging Face Parquet exports (image features)
    "train": ("torch", "transformers"),  # policies, their agents and trainers (trainers/)
    "ray": ("ray",),  # --ray
    "docker": ("docker",),  # --provider docker, the container image
}


def _message(extra: str, purpose: str, module: str) -> str:
    return (f"expected the `{extra}` extra for {purpose}, got no {module!r} module; "
            f"pip install 'cua-harness[{extra}]'")


def require_extra(extra: str, purpose: str) -> None:
    """Raise ``MissingExtraError`` unless every module of ``extra`` can be imported."""
    for module in EXTRAS[extra]:
        if not _installed(module):
            raise MissingExtraError(_message(extra, purpose, module))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a module without a spec
        return False


def import_extra(module: str, extra: str, purpose: str) -> ModuleType:
    """``import module``, or a ``MissingExtraError`` that names ``extra``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] != module.split(".")[0]:
            raise  # the extra is there but broken: its own error says more
        raise MissingExtraError(_message(extra, purpose, module)) from exc
