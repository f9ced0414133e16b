"""Today's FSM engine (before issue 11), loaded from git for side-by-side timings.

    from benchmarks.legacy_fsm import load_legacy
    legacy = load_legacy()                       # a module namespace: spec, engine, validate, ...
    legacy.validate.load_and_validate(path)      # the full-graph validation of today
    legacy.library_dir                           # today's curated YAML files

The files of ``LEGACY_COMMIT`` are written to a temporary package ``legacy_fsm`` (their
``fsm_sites.`` imports renamed), so both engines run in one process without clashing.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

LEGACY_COMMIT = "484f163d04dcf9f496c296f3ec4ae793b2704829"  # main before issue 11
_MODULES = ("errors", "spec", "state", "verdict", "engine", "validate")
_ROOT = Path(__file__).resolve().parent.parent


def _git_show(path: str) -> str:
    return subprocess.run(["git", "show", f"{LEGACY_COMMIT}:{path}"], cwd=_ROOT, capture_output=True,
                          text=True, check=True).stdout


def load_legacy() -> SimpleNamespace:
    """Today's spec, engine and validator as modules of a package ``legacy_fsm``."""
    if "legacy_fsm" in sys.modules:
        return sys.modules["legacy_fsm"].namespace  # type: ignore[attr-defined]
    folder = Path(tempfile.mkdtemp(prefix="legacy-fsm-"))
    package = folder / "legacy_fsm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in _MODULES:
        text = _git_show(f"fsm_sites/{name}.py").replace("fsm_sites.", "legacy_fsm.")
        (package / f"{name}.py").write_text(text)
    library = folder / "sites"
    library.mkdir()
    listing = subprocess.run(["git", "ls-tree", "--name-only", LEGACY_COMMIT, "fsm_sites/library/sites/"],
                             cwd=_ROOT, capture_output=True, text=True, check=True).stdout.split()
    for path in listing:
        (library / Path(path).name).write_text(_git_show(path))
    sys.path.insert(0, str(folder))
    modules = {name: importlib.import_module(f"legacy_fsm.{name}") for name in _MODULES}
    namespace = SimpleNamespace(**modules, library_dir=library)
    sys.modules["legacy_fsm"].namespace = namespace  # type: ignore[attr-defined]
    return namespace
