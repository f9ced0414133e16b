"""Imports sit at the top of their module. A function imports something itself only when
the module would otherwise need what the core install lacks, or what ``cua --help`` must
not load:

- an optional extra's module (``sandboxes.extras.EXTRAS`` and the rest of pyproject.toml's
  extras), or one of ours that imports one at its top; a command checks the extra up front
  (``require_extra``), a feature at its point of use (``import_extra``);
- in a module that ``cua --help`` imports, a heavy core library (``HEAVY_CORE``), or one of
  ours that imports one at its top;
- in a module that ``cua train sft`` imports before it trains, Playwright (``BROWSER``), or
  one of ours that imports it at its top: SFT trains on a GPU machine that has no browser.

No local import breaks a cycle: ``tests/test_architecture.py`` counts local imports too, and
finds none.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandboxes.extras import EXTRAS

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fsm_sites", "sandboxes", "harness", "trainers")
#: top-level modules of the extras (pyproject.toml's optional-dependencies)
EXTRA_MODULES = {module for modules in EXTRAS.values() for module in modules} | {
    "selenium",  # miniwob
    "qwen_vl_utils", "accelerate", "peft", "tokenizers", "safetensors", "trl", "tensorboard",
    "wandb", "matplotlib",  # train
    "verl", "omegaconf", "hydra", "cachetools", "uvicorn", "fastapi",  # verl
    "skyrl_gym",  # skyrl
    "openenv", "openenv_core",  # openenv
    "vllm",  # gpu
}
#: core libraries that cost 50-500 ms to import, which `cua --help` leaves unloaded
HEAVY_CORE = {"PIL", "numpy", "imagehash", "pyarrow", "playwright"}
#: what `cua train sft` leaves unloaded until a collection starts sandboxes
BROWSER = {"playwright"}
#: "path: imported module" -> why it is local although neither rule above asks for it
ALLOWED: dict[str, str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = (name if path.name == "__init__.py" else name.rpartition(".")[0]).split(".")
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import with whether it runs inside a function; not those under TYPE_CHECKING."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for other in child.orelse:
                    visit(other, local)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, local))
            else:
                visit(child, local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return found


class Graph:
    """Our modules, what each imports at its top and in its functions."""

    def __init__(self) -> None:
        self.modules = _modules()
        self.top: dict[str, set[str]] = {}
        self.local: dict[str, list[tuple[int, list[str]]]] = {}
        for name, path in self.modules.items():
            self.top[name], self.local[name] = set(), []
            for node, local in _imports(ast.parse(path.read_text(encoding="utf-8"))):
                targets = _targets(name, path, node, self.modules)
                if local:
                    self.local[name].append((node.lineno, targets))
                else:
                    self.top[name].update(targets)
        self._brings: dict[str, set[str]] = {}

    def brings(self, target: str) -> set[str]:
        """The extras' and heavy core modules that importing ``target`` loads."""
        if target.split(".")[0] not in PACKAGES:
            return {target.split(".")[0]} & (EXTRA_MODULES | HEAVY_CORE)
        found: set[str] = set()
        parts = target.split(".")
        for module in (".".join(parts[:i]) for i in range(1, len(parts) + 1)):
            if module in self.modules:
                found |= self._module_brings(module)
        return found

    def _module_brings(self, module: str) -> set[str]:
        if module not in self._brings:
            self._brings[module] = set()  # a package's __init__ and its modules import each other
            self._brings[module] = set().union(*(self.brings(t) for t in self.top[module] if t != module))
        return self._brings[module]


def needless_local_imports(graph: Graph, help_modules: set[str], sft_modules: frozenset[str] = frozenset()
                           ) -> list[str]:
    """``path:line: module`` of each local import that no rule asks for."""
    wrong = []
    for name, imports in graph.local.items():
        path = graph.modules[name].relative_to(ROOT).as_posix()
        has = graph.brings(name)
        for line, targets in imports:
            for target in targets:
                brought = graph.brings(target) - has
                if brought & EXTRA_MODULES or (name in help_modules and brought & HEAVY_CORE) or (
                        name in sft_modules and brought & BROWSER):
                    continue
                if f"{path}: {target}" not in ALLOWED:
                    wrong.append(f"{path}:{line}: {target}")
    return wrong


def _loaded_by(imports: str) -> list[str]:
    """Every module a fresh interpreter has loaded after ``import {imports}``."""
    code = f"import json, sys, {imports}; print(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def help_modules() -> list[str]:
    """What ``cua --help`` loads: ``harness.cli`` and the commands of every entry point."""
    return _loaded_by("harness.cli")


@pytest.fixture(scope="module")
def sft_modules() -> list[str]:
    """What ``cua train sft`` loads before it trains: the CLI, then ``run_sft``'s import."""
    return _loaded_by("harness.cli, trainers.cli, trainers.training.sft")


def test_cua_help_loads_no_extra_and_no_heavy_library(help_modules: list[str]) -> None:
    assert sorted({m.split(".")[0] for m in help_modules} & (EXTRA_MODULES | HEAVY_CORE)) == []


def test_cua_train_sft_loads_no_playwright(sft_modules: list[str]) -> None:
    assert "trainers.training.sft" in sft_modules
    assert sorted({m.split(".")[0] for m in sft_modules} & BROWSER) == []


def test_functions_import_only_extras_and_what_the_cli_keeps_lazy(help_modules: list[str],
                                                                  sft_modules: list[str]) -> None:
    ours = {m for m in help_modules if m.split(".")[0] in PACKAGES}
    sft = frozenset(m for m in sft_modules if m.split(".")[0] in PACKAGES)
    assert needless_local_imports(Graph(), ours, sft) == [], "move these imports to the module's top"


def test_every_allowed_local_import_is_still_there() -> None:
    graph = Graph()
    present = {f"{graph.modules[n].relative_to(ROOT).as_posix()}: {t}"
               for n, imports in graph.local.items() for _, targets in imports for t in targets}
    assert set(ALLOWED) - present == set()


def test_a_local_import_of_a_core_module_is_found() -> None:
    graph = Graph()
    graph.local["harness.env"] = [(1, ["json"]), (2, ["harness.codecs"]), (3, ["torch"])]
    graph.local["harness.observation"] = [(4, ["PIL"])]
    wrong = needless_local_imports(graph, {"harness.observation"})
    assert [w for w in wrong if w.startswith(("harness/env.py", "harness/observation.py"))] == [
        "harness/env.py:1: json", "harness/env.py:2: harness.codecs"]
    assert "harness/observation.py:4: PIL" in needless_local_imports(graph, set())
