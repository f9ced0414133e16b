"""The type checker over every package (CI fails on a type error, as `make lint` does)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(600)
def test_mypy_is_clean() -> None:
    from mypy import api

    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                "--cache-dir", str(ROOT / ".mypy_cache")])
    assert status == 0, out + err


#: Public parameters annotated exactly ``Any`` (156 before issue 25 typed the seams). Lower it
#: when you type one; it may only grow for a parameter that really takes anything.
ANY_PARAMETERS_AT_MOST = 88


def _any_parameters() -> list[str]:
    import ast

    def is_any(node: ast.expr | None) -> bool:
        return (isinstance(node, ast.Name) and node.id == "Any") or (
            isinstance(node, ast.Attribute) and node.attr == "Any")

    def public(name: str) -> bool:
        return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))

    found: list[str] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and public(child.name):
                visit(child, where)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and public(child.name):
                args = child.args
                every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                found.extend(f"{where}:{child.lineno} {child.name}({a.arg})" for a in every
                             if a is not None and not a.arg.startswith("_") and is_any(a.annotation))

    for package in ("harness", "sandboxes", "fsm_sites", "trainers"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if public(path.stem) or path.stem == "__init__":
                visit(ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(ROOT)))
    return found


def test_public_parameters_typed_any_do_not_grow() -> None:
    found = _any_parameters()
    assert len(found) <= ANY_PARAMETERS_AT_MOST, (
        f"expected at most {ANY_PARAMETERS_AT_MOST} public parameters typed exactly Any, got "
        f"{len(found)}; type the new ones (a Protocol, the library's type under TYPE_CHECKING, "
        "object), e.g.:\n" + "\n".join(found[-10:]))
