"""The package graph: who may import whom, no import cycles, no private names across modules.

Every import counts: the lazy ones inside functions, and the ones under
``if TYPE_CHECKING:`` too (a type checker follows them). Importing ``a.b.c`` also runs the
``__init__`` of ``a.b``, so it counts as an import of that package too, except from a
module inside ``a.b`` (whose ``__init__`` has started before the module runs).

Inside each package the rooms (a subpackage, or a module directly in the package) sit in
layers (``LAYERS``, docs/ARCHITECTURE.md's tables): a room imports only rooms of its own
layer or a lower one, and the rooms' graph has no cycle, so a back-reference (the store
importing the runner, training importing GRPO) fails here. tests/ is not checked: a test
may reach into the privates of the code it tests.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fsm_sites", "sandboxes", "harness", "trainers")
#: what each package may import of ours (docs/ARCHITECTURE.md's table)
ALLOWED = {
    "fsm_sites": set(),
    "sandboxes": set(),
    "harness": {"sandboxes", "fsm_sites"},
    "trainers": {"harness", "sandboxes", "fsm_sites"},
}
#: each package's rooms, lowest layer first; a room imports only its own layer and lower ones
LAYERS: dict[str, list[tuple[str, ...]]] = {
    "fsm_sites": [
        ("errors",),
        ("spec",),  # the spec language: types, schema, expressions, checks, the site model
        ("engine",),  # states, edges, search, the full graph
        ("validation", "synthesis", "render"),  # what the engine's graph is used for
        ("generator",),  # spec templates, validated as they are made
        ("library",),  # the curated and generated sites
        ("serving",),  # server, sessions, site client, control, Tk app
        ("cli",),
    ],
    "sandboxes": [
        ("errors", "actions", "procs", "teardown"),
        ("base", "extras", "origins", "viewports", "isolation"),
        ("browser",),
        ("desktop",),  # its windowed Chromium reuses the browser's launch and policy
        ("isolated", "leftovers", "providers"),
    ],
    "harness": [
        ("errors", "actions", "observation", "rewards", "resources", "templating", "cli_config",
         "codecs", "prompts", "step_display"),
        ("tasks", "env", "env_providers", "isolated_envs"),
        ("agents", "rollout", "records"),
        ("store", "fsm_tasks_cli"),
        ("runner",),
        ("evaluation",),
        ("cli", "demo", "server", "containers", "sites_gallery", "gym_env", "gym_ids", "ray_envs"),
    ],
    "trainers": [
        ("errors", "charts"),
        ("models",),
        ("agents", "serve"),
        ("training",),  # SFT/DPO, and the run pieces GRPO reuses (config, metrics, held-out)
        ("grpo",),
        ("adapters", "cli"),
    ],
}


@cache  # parsed once for all the tests here (nothing mutates it)
def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found



@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    tree = _tree(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.add(full if full in modules else base)
    ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    edges = set()
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):  # the module and every package whose __init__ runs
            candidate = ".".join(parts[:i])
            if candidate in modules and candidate != name and (
                    candidate == target or candidate not in ancestors):
                edges.add(candidate)
    return edges


@cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_packages_import_only_what_the_architecture_allows() -> None:
    wrong = []
    for module, targets in _graph().items():
        package = module.split(".")[0]
        for target in targets:
            other = target.split(".")[0]
            if other != package and other not in ALLOWED[package]:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_no_module_import_cycles() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _room(module: str) -> str | None:
    """The room of ``module``: its package's subpackage or top-level module it is (in); None
    for the package's own ``__init__``."""
    parts = module.split(".")
    return f"{parts[0]}.{parts[1]}" if len(parts) > 1 else None


def _layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a room to a room of a higher layer of its package, and every room
    that LAYERS does not place (or places but that no longer exists)."""
    layer = {f"{package}.{room}": i for package, layers in LAYERS.items()
             for i, rooms in enumerate(layers) for room in rooms}
    rooms = {room for module in graph if (room := _room(module)) is not None}
    wrong = [f"{room} is in no layer of LAYERS: place it (and in docs/ARCHITECTURE.md)"
             for room in sorted(rooms - set(layer))]
    wrong += [f"LAYERS places {room}, which does not exist" for room in sorted(set(layer) - rooms)]
    for module, targets in sorted(graph.items()):
        mine = _room(module)
        for target in sorted(targets):
            theirs = _room(target)
            if mine in layer and theirs in layer and theirs.split(".")[0] == mine.split(".")[0] \
                    and layer[theirs] > layer[mine]:
                wrong.append(f"{module} imports {target}: {mine} (layer {layer[mine]}) may not "
                             f"import {theirs} (layer {layer[theirs]}); move what both need down")
    return wrong


def _room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Which rooms import which, inside each package."""
    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        mine = _room(module)
        if mine is not None:
            rooms.setdefault(mine, set()).update(
                theirs for target in targets if (theirs := _room(target)) is not None
                and theirs != mine and theirs.split(".")[0] == mine.split(".")[0])
    return rooms


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(name: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """Each private name of another of our modules that ``name`` imports (``from m import
    _x``) or reads as an attribute of a module it imported (``m._x``)."""
    tree = _tree(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    bound: dict[str, str] = {}  # a local name -> the module of ours it stands for
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
                if _private(alias.name):
                    found.append(f"{name} imports {alias.name} from {base}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    local = alias.asname or alias.name.split(".")[0]
                    bound[local] = alias.name if alias.asname else local
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                found.append(f"{name} uses {'.'.join([bound[value.id], *chain])}")
    return found


def test_rooms_import_only_their_own_layer_or_lower_ones() -> None:
    assert _layer_violations(_graph()) == []


def test_no_import_cycles_between_rooms() -> None:
    assert _cycles(_room_graph(_graph())) == []


def test_a_back_reference_is_a_layer_violation() -> None:
    graph = {"harness.store.viewer": {"harness.evaluation.report"},
             "harness.evaluation.report": {"harness.store.store"}}
    wrong = [w for w in _layer_violations(graph) if "imports" in w]
    assert wrong == ["harness.store.viewer imports harness.evaluation.report: harness.store (layer 3) "
                     "may not import harness.evaluation (layer 5); move what both need down"]


def test_no_module_imports_another_modules_private_name() -> None:
    modules = _modules()
    assert [use for name, path in sorted(modules.items()) for use in _private_uses(name, path, modules)] == []


def test_private_names_are_found_imported_and_as_attributes(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text("from harness.tasks.fsm import _library_tasks, FSMTask\n"
                    "from .miniwob import _STATE_JS\n"
                    "import harness.tasks.miniwob as miniwob\n"
                    "import harness.runner\n"
                    "from harness.tasks import fsm\n"
                    "print(miniwob._ORACLE_TARGETS, harness.runner._run, fsm.__name__, fsm._x)\n")
    assert sorted(_private_uses("harness.tasks.probe", path, _modules())) == [
        "harness.tasks.probe imports _STATE_JS from harness.tasks.miniwob",
        "harness.tasks.probe imports _library_tasks from harness.tasks.fsm",
        "harness.tasks.probe uses harness.runner._run",
        "harness.tasks.probe uses harness.tasks.fsm._x",
        "harness.tasks.probe uses harness.tasks.miniwob._ORACLE_TARGETS",
    ]
