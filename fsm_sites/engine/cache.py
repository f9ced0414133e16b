"""Spec hashes and the on-disk cache beside a spec file (the only I/O of the engine's caches).

The engine stays pure: it hands out what it learned (``Machine.export_knowledge``) and
takes it back (``import_knowledge``); this module reads and writes it as JSON in a
``.fsm_cache/`` folder beside the spec, one file per spec content hash, so an edited spec
never sees a stale cache. Set ``FSM_CACHE=0`` to turn it off. A cache that cannot be read
or written is ignored (a read-only checkout still works).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from fsm_sites.spec.site import SiteSpec

CACHE_DIR = ".fsm_cache"
FORMAT = 2  # 2: reports carry goal_status; a report from before may have accepted an unreachable goal


def spec_hash(spec: SiteSpec) -> str:
    """A short hash of the spec's content (its canonical JSON)."""
    return hashlib.sha256(spec.model_dump_json().encode("utf-8")).hexdigest()[:20]


def enabled() -> bool:
    return os.environ.get("FSM_CACHE", "1") not in ("0", "false", "no", "off")


def cache_path(spec_path: Path, spec: SiteSpec) -> Path:
    return spec_path.resolve().parent / CACHE_DIR / f"{spec.name}-{spec_hash(spec)}.json"


def read(spec_path: Path, spec: SiteSpec) -> dict[str, Any] | None:
    """The cached data of this spec (None when there is none or it is unreadable)."""
    if not enabled():
        return None
    try:
        data = json.loads(cache_path(spec_path, spec).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def write(spec_path: Path, spec: SiteSpec, data: dict[str, Any]) -> bool:
    """Store ``data`` for this spec; False if the folder cannot be written."""
    if not enabled():
        return False
    path = cache_path(spec_path, spec)
    try:
        path.parent.mkdir(exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"format": FORMAT, **data}, separators=(",", ":")), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        return False
    return True


_PENDING: dict[Path, tuple[SiteSpec, Any]] = {}


def remember_at_exit(spec_path: Path, spec: SiteSpec, machine: Any) -> None:
    """Write what ``machine``'s searches learned beside the spec when the process ends, so
    the next command starts from it (one file per spec hash: an edited spec starts afresh)."""
    if not enabled():
        return
    if not _PENDING:
        atexit.register(_flush)
    _PENDING[spec_path.resolve()] = (spec, machine)


def _flush() -> None:
    for path, (spec, machine) in list(_PENDING.items()):
        data = read(path, spec) or {}
        knowledge = data.get("distances", {})
        knowledge.update(machine.export_knowledge())
        if knowledge:
            data["distances"] = knowledge
            data.pop("format", None)
            write(path, spec, data)
