"""`cua data corpus`: SFT data at scale, from sites whose every step the FSM verifies.

For each site (the curated library's, and sites from the generator at many seeds and
difficulties), one after another, ``concurrency`` at a time:

1. the site's spec (``site.yaml`` where it is not a library site, so its tasks file
   resolves it);
2. tasks synthesized over every goal kind (named, state, expr: ``fsm_sites.synthesis.tasks``) and
   kept only where the oracle verifies in a real browser (``cua tasks synth``'s
   ``verify_tasks``): ``tasks.jsonl``;
3. a tree per task, grown by the oracle (``cua collect --explore tree``) with wrong element
   steps as its off-path candidates (``off_path="elements"``): a click on another listed
   element, or a name the list lacks, which the env refuses. The oracle continues every
   branch, so the tree holds on-path steps, recovery steps (off the shortest path, or after
   a refused action, whose prompt shows the env's error) and long histories; ``store/``;
4. the store's SFT export (the oracle's own steps, typing included; one prompt builder;
   verdict columns):
   ``sft.parquet``; then ``done.json``, written last.

A site with ``done.json`` is skipped on a rerun; a site folder without it (a crash) is
built again from scratch, so a crash loses at most the sites in flight. Finally the
corpus is assembled from every finished site (``corpus_split``): split by site,
deduplicated, with its statistics. The layout::

    OUT/corpus.yaml              the recipe (a rerun must match it; the site list may grow)
    OUT/sites/KEY/               site.yaml, tasks.jsonl, store/, sft.parquet, done.json
    OUT/train/sft.parquet        training rows (TRL's layout, as `cua store export` writes)
    OUT/heldout/sft.parquet      rows of the held-out sites (never in training)
    OUT/stats.json               sites, goal kinds, depths, recovery share, rows, build time

With ``source`` set, no site is built: the source corpus's stores are exported again in
``prompt`` (``corpus_reexport``: the same rows in another prompt format).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from fsm_sites.errors import FsmSiteError
from fsm_sites.generator import synthesize_site
from fsm_sites.library import list_sites
from fsm_sites.serving.server import resolve_sites
from fsm_sites.spec.site import SiteSpec, dump_spec
from fsm_sites.synthesis.tasks import TaskSpec, save_tasks, synthesize_tasks
from harness.errors import ConfigError
from harness.fsm_tasks_cli import verify_tasks
from harness.prompts import PromptConfig
from harness.resources import TaskResources
from harness.store.collect import CollectConfig, collect_async
from harness.store.corpus_split import assemble
from harness.store.export import ExportConfig, export
from harness.store.store import TrajectoryStore
from sandboxes.base import SandboxProvider

Difficulty = Literal["easy", "medium", "hard"]
DONE = "done.json"
RECIPE_FILE = "corpus.yaml"
#: the fields a rerun must share with the corpus it resumes (the site list may grow)
RECIPE_FIELDS = ("seed", "tasks", "budget", "candidates", "max_depth", "prompt", "source")


def _curated() -> list[str]:
    return list(list_sites())


class CorpusConfig(BaseModel):
    """`cua data corpus`: which sites, how many tasks and steps each, and the split."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(description="the corpus folder (resumed when it holds one)")
    sites: list[str] = Field(default_factory=_curated, description="library sites or spec "
                             "files; default: the 12 curated sites")
    generated: int = Field(default=40, ge=0, description="generated sites (`cua sites synth`), "
                           "seeds seed, seed+1, ...")
    difficulties: list[Difficulty] = Field(default=["easy", "medium", "hard"], min_length=1,
                                           description="difficulties of the generated sites, in turn")
    seed: int = Field(default=0, description="first generated site's seed; task synthesis and "
                      "exploration seed")
    tasks: int = Field(default=30, ge=1, description="tasks synthesized per site (fewer where "
                       "the site has fewer goals; only verified ones are kept)")
    budget: int = Field(default=40, ge=1, description="env steps per task tree")
    candidates: int = Field(default=3, ge=1, description="first steps tried at each expanded "
                            "node: the oracle's, then wrong element steps")
    max_depth: int = Field(default=30, ge=1, description="deepest step of a branch (typing "
                           "steps count: a form's fields add two steps each to a task's path)")
    held_out: list[str] | None = Field(default=None, description="site keys held out (never in "
                                       "training); None: a stable draw of held_out_share of them")
    held_out_share: float = Field(default=0.2, gt=0, lt=1, description="share of sites held out "
                                  "when held_out is None (drawn per site: stable as sites are added)")
    concurrency: int = Field(default=2, ge=1, description="sites built at once")
    prompt: PromptConfig = Field(
        default=PromptConfig(codec="json", observation="elements", system_prompt=False, element_refs="index"),
        description="the prompt rows are rendered with (train with the same one); element_refs: "
        "index (set-of-marks numbers) trained a model that solves 3.6x the held-out tasks of "
        "label's (BENCHMARKS.md, issue 21 row 1)")
    source: Path | None = Field(default=None, description="a corpus built by `cua data corpus`: "
                                "re-export its stores in `prompt` instead of building sites (the "
                                "same rows and held-out sites, another prompt; no browser)")

    @field_validator("source")
    @classmethod
    def _absolute(cls, source: Path | None) -> Path | None:
        return None if source is None else Path(source).resolve()  # the recipe names one folder

    @field_validator("sites")
    @classmethod
    def _known_sites(cls, sites: list[str]) -> list[str]:
        try:
            resolve_sites(sites)  # an unknown name or a bad file is refused before any work
        except (FsmSiteError, KeyError, OSError) as exc:
            raise ValueError(str(exc).strip('"')) from None
        return sites


@dataclass(frozen=True)
class SiteSource:
    """One site of the corpus: its folder key and how to get its spec."""

    key: str
    name: str | None = None  # a library site or a spec file
    difficulty: Difficulty | None = None  # a generated site ...
    seed: int = 0  # ... of this seed

    def spec(self) -> SiteSpec:
        if self.name is not None:
            return resolve_sites([self.name])[0]
        assert self.difficulty is not None
        return synthesize_site(self.seed, self.difficulty)


def plan_sites(config: CorpusConfig) -> list[SiteSource]:
    """The corpus's sites in build order: the listed ones, then the generated ones."""
    listed = [SiteSource(Path(name).stem if Path(name).suffix else name, name=name) for name in config.sites]
    generated = []
    for i in range(config.generated):
        difficulty = config.difficulties[i % len(config.difficulties)]
        seed = config.seed + i
        generated.append(SiteSource(f"gen_{difficulty}_{seed}", difficulty=difficulty, seed=seed))
    return listed + generated


def held_out_keys(config: CorpusConfig, keys: list[str]) -> set[str]:
    """The held-out site keys: the config's list, else each site with a hash-drawn chance of
    ``held_out_share`` (a site keeps its side of the split as the corpus grows)."""
    if config.held_out is not None:
        unknown = sorted(set(config.held_out) - set(keys))
        if unknown:
            raise ConfigError(f"held_out: expected site keys of this corpus ({', '.join(keys[:6])}, "
                              f"...), got {unknown}; name sites the corpus builds")
        return set(config.held_out)

    def draw(key: str) -> float:
        digest = hashlib.sha256(f"held-out|{config.seed}|{key}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64
    return {key for key in keys if draw(key) < config.held_out_share}


def check_recipe(config: CorpusConfig) -> None:
    """Refuse resuming a corpus built with another recipe; record the recipe of a new one."""
    out = Path(config.out)
    recipe = config.model_dump(mode="json", include=set(RECIPE_FIELDS))
    path = out / RECIPE_FILE
    if path.is_file():
        before = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(before.get("prompt"), dict):  # a prompt field added since takes its default
            before["prompt"] = PromptConfig.model_validate(before["prompt"]).model_dump(mode="json")
        changed = sorted(k for k in RECIPE_FIELDS if before.get(k) != recipe[k])
        if changed:
            raise ConfigError(f"--out: expected the recipe of the corpus in {out} to resume it, got "
                              f"other {', '.join(changed)} ({', '.join(f'{k}={before.get(k)!r}' for k in changed)} "
                              "there); use the same values or another --out")
        return
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")


async def build_site(source: SiteSource, config: CorpusConfig, provider: SandboxProvider | None,
                     resources: TaskResources | None, advance: Callable[[int], None] | None) -> dict:
    """Build one site's folder (see the module docstring); returns its ``done.json``."""
    folder = Path(config.out) / "sites" / source.key
    if (folder / DONE).is_file():
        return json.loads((folder / DONE).read_text(encoding="utf-8"))
    shutil.rmtree(folder, ignore_errors=True)  # what a crash left behind
    folder.mkdir(parents=True)
    started = time.perf_counter()
    spec = source.spec()
    if spec.name not in _curated():  # the tasks file finds a spec that is not the library's beside it
        dump_spec(spec, folder / "site.yaml")
    tasks = synthesize_tasks(spec, n=config.tasks, seed=config.seed)
    verdicts = await verify_tasks(tasks, [spec], seed=config.seed, concurrency=1,
                                  show_progress=False, provider=provider)
    kept = [t for t, v in zip(tasks, verdicts, strict=True) if v.kept]
    save_tasks(kept, folder / "tasks.jsonl")
    collected = await _grow_trees(folder, [t.id for t in kept], config, provider, resources, advance)
    rows = export_site(folder / "store", folder, config.prompt)
    done = {"key": source.key, "site": spec.name, "generated": source.name is None,
            "difficulty": source.difficulty, "tasks_synthesized": len(tasks), "tasks_kept": len(kept),
            "goal_kinds": {kind: sum(t.goal_kind == kind for t in kept) for kind in ("named", "state", "expr")},
            "goals": {t.id: goal_text(spec, t) for t in kept},
            "rows": rows, **collected, "seconds": round(time.perf_counter() - started, 2)}
    (folder / f"{DONE}.tmp").write_text(json.dumps(done, indent=1), encoding="utf-8")
    (folder / f"{DONE}.tmp").replace(folder / DONE)  # atomic: a site is finished or it is not
    return done


def goal_text(spec: SiteSpec, task: TaskSpec) -> str:
    """What a task's goal asks, comparable across sites: a named goal's description (its
    id, such as ``form``, names different goals on different sites), else the goal itself
    (a state key or an ``expr:`` condition)."""
    if task.goal_kind == "named":
        return next(g.description for g in spec.goals if g.id == task.goal)
    return str(task.goal)


async def _grow_trees(folder: Path, task_ids: list[str], config: CorpusConfig,
                      provider: SandboxProvider | None, resources: TaskResources | None,
                      advance: Callable[[int], None] | None) -> dict:
    """One oracle tree per task into ``folder/store`` (``cua collect --explore tree``)."""
    totals = {"env_steps": 0, "episodes": 0}
    tasks_file = (folder / "tasks.jsonl").resolve()
    for task_id in task_ids:
        collect = CollectConfig(suite=f"fsm:{tasks_file}#{task_id}", store=folder / "store",
                                budget=config.budget, agent="oracle", explore="tree",
                                candidates=config.candidates, max_depth=config.max_depth,
                                # the oracle's focus and typing fire no transition: never a
                                # failure that ends its branch (depth and budget bound it)
                                max_failures=config.max_depth,
                                off_path="elements", seed=config.seed,
                                elements=config.prompt.observation != "screenshot", hindsight=False)
        report = await collect_async(collect, provider=provider, resources=resources, progress=advance)
        totals["env_steps"] += report["env_steps"]
        totals["episodes"] += report["episodes"]
    return totals


def export_site(store_dir: Path, folder: Path, prompt: PromptConfig, *, read_only: bool = False) -> int:
    """A site store's SFT export (the oracle's own steps) as ``folder/sft.parquet``; its rows."""
    import pyarrow.parquet as pq

    store = TrajectoryStore(store_dir, read_only=read_only)
    try:
        path = export(store, "sft", folder, ExportConfig(**prompt.model_dump(), steps="agent"))
    finally:
        store.close()
    return pq.read_metadata(path).num_rows


async def build_corpus_async(config: CorpusConfig, *, provider: SandboxProvider | None = None,
                             show_progress: bool = True) -> dict:
    """Build (or resume) the corpus and assemble it; returns its statistics."""
    from sandboxes.providers import LocalProvider

    if config.source is not None:
        raise ConfigError(f"source: expected no source for a build, got {config.source}; a "
                          "re-export is corpus_reexport.reexport_corpus (what `cua data corpus "
                          "--source` runs)")
    plan = plan_sites(config)
    held_out = held_out_keys(config, [s.key for s in plan])  # refused before anything is written
    check_recipe(config)
    started = time.perf_counter()
    todo = [s for s in plan if not (Path(config.out) / "sites" / s.key / DONE).is_file()]
    async with AsyncExitStack() as stack:
        if provider is None:
            provider = await stack.enter_async_context(LocalProvider())
        resources = await stack.enter_async_context(TaskResources())
        with corpus_progress(show_progress) as progress:
            sites_bar = progress.add_task("sites", total=len(plan), completed=len(plan) - len(todo))
            steps_bar = progress.add_task("env steps", total=len(todo) * config.tasks * config.budget)
            queue: asyncio.Queue[SiteSource] = asyncio.Queue()
            for source in todo:
                queue.put_nowait(source)

            async def worker() -> None:
                while not queue.empty():
                    source = queue.get_nowait()
                    await build_site(source, config, provider, resources,
                                     lambda n: progress.advance(steps_bar, n))
                    progress.advance(sites_bar)

            await asyncio.gather(*(worker() for _ in range(min(config.concurrency, len(todo)))))
    return assemble(Path(config.out), [s.key for s in plan], held_out, config.prompt,
                    built=[s.key for s in todo], seconds=time.perf_counter() - started)


def corpus_progress(show: bool) -> Progress:
    """The progress display of a corpus build or re-export (bars added by the caller)."""
    return Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), disable=not show)


def build_corpus(config: CorpusConfig) -> dict:
    """Synchronous entry point of `cua data corpus`."""
    return asyncio.run(build_corpus_async(config))
