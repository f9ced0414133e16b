"""What this process made for sandboxes, by name: jail homes (their cgroups share the
home's name, and a desktop's host display link points into its home), the cgroups that
track a desktop's processes (``sandboxes.isolation.tracked``), network
namespaces (their veth host ends are the name plus ``h``) and the service addresses it
holds now (an address is reused: once this process removed it, another run may add it).

Leak checks (``sandboxes.leftovers``) count only these, so another run's sandboxes on the
same machine (another test suite, another collector) are never taken for ours. The names
are kept for the life of the process: a few bytes per sandbox.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["home", "namespace", "address", "cgroup"]

_MADE: dict[Kind, set[str]] = {"home": set(), "namespace": set(), "address": set(), "cgroup": set()}


def remember(kind: Kind, name: str) -> None:
    """Note that this process made ``name`` (before making it, so a half-made one counts)."""
    _MADE[kind].add(name)


def forget(kind: Kind, name: str) -> None:
    """Note that this process removed ``name``, which another run may now make."""
    _MADE[kind].discard(name)


def made(kind: Kind) -> frozenset[str]:
    """Every name of ``kind`` this process made."""
    return frozenset(_MADE[kind])
