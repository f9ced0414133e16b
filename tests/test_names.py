"""Names that say which thing they are: no two public classes of ours share a name, so a
class name read in a traceback, a doc or a review points at one definition.

A private class (``_Strict``) is invisible outside its module and does not count.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fsm_sites", "sandboxes", "harness", "trainers")
#: names defined twice on purpose, with the reason: each pair lives in one package's own
#: vocabulary and is never imported next to the other
SHARED = {
    # an expression's syntax tree node (fsm_sites.spec.expr) and a trajectory tree's state
    # node (harness.store.models): the fsm_sites engine also names its search states Node
    "Node",
    # an expression's evaluation context (fsm_sites.spec.check) and an element's drawing
    # context (fsm_sites.render.base); a function takes one or the other, never both
    "Ctx",
}


def class_definitions(root: Path = ROOT) -> dict[str, list[str]]:
    """Public class name -> where each definition of it is (``path:line``)."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    found[node.name].append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_two_classes_share_a_name() -> None:
    twice = {name: where for name, where in class_definitions().items() if len(where) > 1}
    assert {name: where for name, where in twice.items() if name not in SHARED} == {}, (
        "give one of each pair a name that says what it is")
    assert set(twice) == SHARED  # an entry whose pair is gone leaves the allow-list


def test_the_scan_finds_a_name_defined_twice(tmp_path: Path) -> None:
    for package, source in (("harness", "class Episode:\n    pass\n"),
                            ("trainers", "class Episode:\n    class _Inner: ...\n")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text(source)
    found = class_definitions(tmp_path)
    assert found == {"Episode": ["harness/a.py:1", "trainers/a.py:1"]}
