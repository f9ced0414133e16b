"""`cua sites ...`: list, validate, print oracle paths, synthesize and serve FSM sites."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from fsm_sites.engine import cache
from fsm_sites.engine.machine import compile_site
from fsm_sites.errors import FsmSiteError, SpecInvalid
from fsm_sites.generator import DIFFICULTIES, synthesize_site
from fsm_sites.library import list_sites, load_machine
from fsm_sites.serving import server
from fsm_sites.serving.server import resolve_sites
from fsm_sites.spec.site import dump_spec
from fsm_sites.synthesis.tasks import describe_edge, resolve_start
from fsm_sites.validation.validate import check_spec, read_spec_data

sites_app = typer.Typer(help="FSM-synthesized websites: list, validate, path, synth, serve, gallery.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(sites_app, name="sites")


@sites_app.command("list")
def list_cmd(as_json: Annotated[bool, typer.Option("--json", help="print a JSON list")] = False) -> None:
    """The curated library's sites with their page, goal and state counts."""
    rows = []
    for name in list_sites():
        machine = load_machine(name)
        spec, report = machine.spec, machine.report or {}
        depths = report.get("goal_depths") or {g.id: machine.distance(machine.initial, g.id) for g in spec.goals}
        rows.append({
            "name": name, "title": spec.title, "domain": spec.domain, "pages": len(spec.pages),
            "goals": len(spec.goals), "states": report.get("reachable_states"),
            "states_exact": report.get("reachable_states_exact", False),
            "goal_depths": sorted(d for d in depths.values() if d is not None),
        })
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table("name", "title", "domain", "pages", "goals", "states", "goal depths")
    for r in rows:
        states = f'{r["states"]}' if r["states_exact"] else f'>= {r["states"]}'
        table.add_row(r["name"], r["title"], r["domain"], str(r["pages"]), str(r["goals"]), states,
                      ", ".join(map(str, r["goal_depths"])))
    Console().print(table)


@sites_app.command("validate")
def validate_cmd(
    path: Annotated[Path, typer.Argument(help="a spec file (.yaml/.yml/.json)")],
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    count: Annotated[int, typer.Option("--count", min=1, help="reachable states to count before giving a lower bound")] = 50_000,
    budget: Annotated[int, typer.Option("--budget", min=1, help="states each goal's search may expand before its "
                                        "reachability is left undecided")] = 50_000,
) -> None:
    """Validate a spec file; prints every problem and exits 1 if there is any, and which goals are
    proved reachable, proved unreachable or undecided."""
    if not path.is_file():
        typer.echo(f"error: expected a spec file (.yaml/.yml/.json), got {path}, which "
                   f"{'is a folder' if path.is_dir() else 'does not exist'}", err=True)
        raise typer.Exit(2)
    try:
        data = read_spec_data(path)
    except SpecInvalid as exc:
        typer.echo(json.dumps({"site": str(path), "valid": False, "problems": [
            {"place": p.place, "message": p.message} for p in exc.problems]}) if as_json else str(exc), err=not as_json)
        raise typer.Exit(1) from None
    with Console(stderr=True).status(f"validating {path} ...", spinner="dots"):
        spec, report = check_spec(data, count_budget=count, search_budget=budget)
    if spec is not None and report.valid:
        cache.write(path, spec, {"report": report.to_json()})
    if as_json:
        typer.echo(json.dumps(report.to_json(), indent=2))
    elif not report.valid:
        typer.echo(str(SpecInvalid(report.problems, str(path))), err=True)
        _print_goal_status(report)
    else:
        states = f"{report.states} reachable states" if report.states_exact else f"at least {report.states} reachable states"
        assert spec is not None
        typer.echo(f"{path}: valid ({len(spec.pages)} pages, {len(spec.transitions)} transitions, "
                   f"{len(spec.goals)} goals, {states}; checked in {report.seconds:.2f}s)")
        _print_goal_status(report)
        for warning in report.warnings:
            typer.echo(f"  warning: {warning}")
        for note in report.notes:
            typer.echo(f"  note: {note}")
    if not report.valid:
        raise typer.Exit(1)


def _print_goal_status(report) -> None:
    """One line per verdict: the goals proved reachable (with their depths), proved
    unreachable, and undecided (their search ran out of budget)."""
    by: dict[str, list[str]] = {}
    for goal, status in report.goal_status.items():
        depth = report.goal_depths.get(goal)
        steps = f"{depth} step{'' if depth == 1 else 's'}"
        by.setdefault(status, []).append(f"{goal} ({steps})" if status == "reachable" else goal)
    lines = (("reachable", "goals proved reachable"), ("unreachable", "goals proved unreachable"),
             ("undecided", f"goals undecided within the search budget of {report.search_budget} states "
                           "(raise --budget)"))
    for status, title in lines:
        if by.get(status):
            typer.echo(f"  {title}: {', '.join(by[status])}")


@sites_app.command("path")
def path_cmd(
    site: Annotated[str, typer.Argument(help="a library site name or a spec file (.yaml/.yml/.json)")],
    goal: Annotated[str, typer.Argument(help="a goal id of the spec, or 'expr:' and a condition over its variables")],
    start: Annotated[str | None, typer.Option(help="where the path starts: a start state the spec names or a state "
                                              "key; default: the goal's own start, else the site's initial state")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the path as JSON")] = False,
) -> None:
    """Print a site's oracle path to a goal (one shortest path), its length and how long the
    search took; exits 1 when no reachable state meets the goal."""
    try:
        machine = compile_site(resolve_sites([site])[0])
        first = (resolve_start(machine, start, random.Random(0)) if start is not None
                 else machine.goal_start(goal) or machine.initial)
        predicate = machine.resolve_goal(goal)
        began = time.perf_counter()
        paths = machine.shortest_paths(first, predicate, limit=1)
        seconds = time.perf_counter() - began
    except (FsmSiteError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    name = machine.spec.name
    if not paths:
        typer.echo(f"{name}: no state reachable from {first.page} meets goal {goal!r} (searched in {seconds:.3f}s)",
                   err=True)
        raise typer.Exit(1)
    steps, state = [], first
    for edge in paths[0]:
        steps.append({**edge.to_dict(), "description": describe_edge(machine, edge, state)})
        fired = machine.step(state, edge.to_event())
        assert fired is not None  # each edge of a shortest path fires from the state before it
        state = fired[1]
    if as_json:
        typer.echo(json.dumps({"site": name, "goal": goal, "start": first.key(), "length": len(steps),
                               "seconds": round(seconds, 4), "path": steps}, indent=2))
        return
    typer.echo(f"{name}: goal {goal!r} from {first.page}: {len(steps)} step(s), found in {seconds:.3f}s")
    for i, step in enumerate(steps, 1):
        value = f" {step['value']!r}" if step["value"] is not None else ""
        typer.echo(f"  {i}. {step['description']}  [{step['page']} {step['element']} {step['event']}{value}]")


@sites_app.command("synth")
def synth_cmd(
    seed: Annotated[int, typer.Option(help="random seed; each seed gives a different site")] = 0,
    difficulty: Annotated[str, typer.Option(help="easy, medium or hard")] = "medium",
    out: Annotated[Path, typer.Option(help="where to write the spec (.yaml or .json)")] = Path("site.yaml"),
) -> None:
    """Synthesize a new valid site from the domain templates and write it."""
    if difficulty not in DIFFICULTIES:
        typer.echo(f"error: expected --difficulty in {list(DIFFICULTIES)}, got {difficulty!r}", err=True)
        raise typer.Exit(2)
    spec = synthesize_site(seed, difficulty)  # type: ignore[arg-type]
    out.parent.mkdir(parents=True, exist_ok=True)
    dump_spec(spec, out)
    typer.echo(f"wrote {out}: site {spec.name!r} ({len(spec.pages)} pages, {len(spec.goals)} goals)")


@sites_app.command("serve")
def serve_cmd(
    sites: Annotated[list[str] | None, typer.Argument(help="library site names or spec files; default: all")] = None,
    host: Annotated[str, typer.Option(help="interface to bind (keep it local)")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65534, help="TCP port of the pages; the control API listens on port + 1")] = 8900,
) -> None:
    """Serve sites over HTTP (the site server lives in fsm_sites.serving.server)."""
    server.serve(list(sites or []), host, port)
