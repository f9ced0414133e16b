"""`cua sites gallery`: screenshots of the curated sites across theme families and viewports.

The page a person opens to judge how real the FSM sites look. For every chosen site it
takes the site's main states (the initial state, then the first state of each new page
along its goals' oracle paths), shows each in a theme family (the families take turns,
or every family with ``--every-family``) at every chosen viewport, in real Chromium
(the sandboxes' ``LocalProvider``), and writes ``index.html`` with the PNGs beside it
(``<site>/<n>-<page>-<theme>-<viewport>.png``).

``cua sites`` lives in ``fsm_sites.cli``; this command is added to it from here because
it needs a browser, which ``fsm_sites`` may not import (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import BaseModel, ConfigDict, Field, field_validator
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fsm_sites.cli import sites_app
from fsm_sites.engine.machine import Machine
from fsm_sites.engine.state import State
from fsm_sites.library import list_sites, load_machine, load_site
from fsm_sites.render.themes import FAMILIES, PALETTES, Theme, choose_style
from fsm_sites.serving.server import SiteServer
from harness.cli_config import check_output_dir, config_command, removed_on_failure
from harness.errors import ConfigError
from harness.templating import render
from sandboxes.viewports import VIEWPORTS, parse_viewport, viewport_name

if TYPE_CHECKING:
    from sandboxes.browser.sandbox import BrowserSandbox
    from sandboxes.providers import LocalProvider

console = Console(stderr=True)
_SEED_SEARCH = 10_000  # layout seeds searched for one that picks a wanted theme


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _known(text: str, known: list[str], what: str) -> str:
    """``text`` if it names only ``known`` things (comma-separated) or ``all``."""
    if not _names(text) or any(name not in known and name != "all" for name in _names(text)):
        raise ValueError(f"expected {what} ({', '.join(known)}) or all, got {text!r}")
    return text


class GalleryConfig(BaseModel):
    """What `cua sites gallery` shows and where it writes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path = Field(default=Path("runs/gallery"), description="folder for index.html and the PNGs")
    sites: str = Field(default="all", description="curated sites, comma-separated, or all")
    families: str = Field(default="all", description="theme families, comma-separated "
                          f"({', '.join(f.name for f in FAMILIES)}), or all")
    viewports: str = Field(default=",".join(VIEWPORTS), description="viewports, comma-separated: "
                           "names (desktop, laptop, tablet, phone) or WIDTHxHEIGHT")
    states: int = Field(default=3, ge=1, le=20, description="main states shown per site")
    every_family: bool = Field(default=False, description="show each state in every family "
                               "(else the families take turns)")
    concurrency: int = Field(default=2, ge=1, le=16, description="screenshots taken at once")

    @field_validator("sites")
    @classmethod
    def _known_sites(cls, sites: str) -> str:
        return _known(sites, list_sites(), "curated sites")

    @field_validator("families")
    @classmethod
    def _known_families(cls, families: str) -> str:
        return _known(families, [f.name for f in FAMILIES], "theme families")

    @field_validator("viewports")
    @classmethod
    def _known_viewports(cls, viewports: str) -> str:
        if not _names(viewports):
            raise ValueError(f"expected at least one viewport, got {viewports!r}")
        for name in _names(viewports):
            parse_viewport(name, option=None)
        return viewports

    def site_names(self) -> list[str]:
        return list(list_sites()) if "all" in _names(self.sites) else _names(self.sites)

    def family_names(self) -> list[str]:
        return [f.name for f in FAMILIES] if "all" in _names(self.families) else _names(self.families)

    def viewport_sizes(self) -> list[tuple[int, int]]:
        return list(dict.fromkeys(parse_viewport(v, option="--viewports") for v in _names(self.viewports)))


@dataclass(frozen=True)
class Shot:
    """One screenshot: a state of a site under one layout seed at one viewport."""

    site: str
    index: int  # the state's place among the site's main states
    state: State
    seed: int
    theme: Theme
    viewport: tuple[int, int]

    @property
    def path(self) -> str:
        page = self.state.page_id.replace("/", "_")
        return f"{self.site}/{self.index:02d}-{page}-{self.theme.name}-{viewport_name(self.viewport)}.png"


def main_states(machine: Machine, limit: int) -> list[State]:
    """The initial state, then the first state of each page not shown yet along the
    goals' oracle paths (goals in spec order), up to ``limit``."""
    states, pages = [machine.initial], {machine.initial.page}
    for goal in machine.spec.goals:
        paths = machine.shortest_paths(machine.initial, goal.id, limit=1)
        state = machine.initial
        for edge in paths[0] if paths else []:
            step = machine.step(state, edge.to_event())
            if step is None:
                break
            state = step[1]
            if state.page not in pages and len(states) < limit:
                states.append(state)
                pages.add(state.page)
    return states


def seed_for(family: str, turn: int) -> int:
    """The first layout seed whose style is ``family``'s variant number ``turn`` (mod the
    family's variants), so a gallery shows light and dark variants in turn."""
    variants = PALETTES[family]
    wanted = f"{family}-{variants[turn % len(variants)].name}"
    for seed in range(_SEED_SEARCH):
        if choose_style(seed)[0].name == wanted:
            return seed
    raise ConfigError(f"expected a layout seed below {_SEED_SEARCH} that picks theme {wanted}, got none")


def plan(config: GalleryConfig) -> list[Shot]:
    """Every screenshot of the gallery, site by site, state by state."""
    families, sizes = config.family_names(), config.viewport_sizes()
    shots: list[Shot] = []
    turn = 0
    for site in config.site_names():
        for index, state in enumerate(main_states(load_machine(site), config.states)):
            chosen = families if config.every_family else [families[turn % len(families)]]
            for family in chosen:
                seed = seed_for(family, turn // len(families))
                theme = choose_style(seed)[0]
                shots += [Shot(site, index, state, seed, theme, size) for size in sizes]
            turn += 1
    return shots


async def take(shots: list[Shot], out: Path, concurrency: int, show_progress: bool = True,
               provider: LocalProvider | None = None) -> None:
    """Take every screenshot in real Chromium (``provider``'s, else a provider of its own):
    one browser sandbox per worker, made again when the viewport changes."""
    if provider is None:
        from sandboxes.providers import LocalProvider  # Playwright: only when screenshots are taken

        async with LocalProvider() as own:
            await take(shots, out, concurrency, show_progress, own)
        return
    queue: asyncio.Queue[Shot] = asyncio.Queue()
    for shot in sorted(shots, key=lambda s: s.viewport):  # a worker resizes rarely
        queue.put_nowait(shot)
    specs = {site: load_site(site) for site in sorted({s.site for s in shots})}
    async with SiteServer(specs.values()) as server:
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*columns, console=console, disable=not show_progress) as progress:
            bar = progress.add_task("gallery screenshots", total=len(shots))

            async def worker() -> None:
                sandbox, size = None, None
                try:
                    while not queue.empty():
                        shot = queue.get_nowait()
                        if sandbox is None or size != shot.viewport:
                            if sandbox is not None:
                                await sandbox.close()
                            size = shot.viewport
                            sandbox = await provider.new_browser(viewport_width=size[0], viewport_height=size[1])
                        target = out / shot.path
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(await _shoot(server, sandbox, shot, specs[shot.site].goals[0].id))
                        progress.advance(bar)
                finally:
                    if sandbox is not None:
                        await sandbox.close()

            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(shots)))))


async def _shoot(server: SiteServer, sandbox: BrowserSandbox, shot: Shot, goal: str) -> bytes:
    """The PNG of ``shot``: a session of its seed jumped to its state, shown in ``sandbox``
    (``goal``: any of the site's; it does not change the page)."""
    session = server.create_session(shot.site, goal=goal, seed=shot.seed)
    try:
        server.jump(session.id, shot.state.key())
        # The page of the last shot shows the next session in place (site.js), as FSM
        # tasks do between episodes: the same pixels as a fresh load.
        await sandbox.reset(server.session_url(session.id), allowed_origins=(server.site_url,),
                            keep_page=True)
        return (await sandbox.screenshot()).data
    finally:
        server.delete_session(session.id)


def write_page(shots: list[Shot], out: Path, title: str = "FSM sites gallery") -> Path:
    """``index.html`` (``harness/templates/gallery.html.jinja``): a section per site, a row per
    state and theme, one picture per viewport (each drawn at a third of its size, linked to
    the full PNG)."""
    sites: dict[str, dict[tuple[int, str], list[Shot]]] = {}
    for shot in shots:
        sites.setdefault(shot.site, {}).setdefault((shot.index, shot.theme.name), []).append(shot)
    page = render("harness", "gallery.html.jinja", title=title, count=len(shots), sites=sites,
                  viewport_name=viewport_name)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


async def build_gallery(config: GalleryConfig, show_progress: bool = True,
                        provider: LocalProvider | None = None) -> Path:
    """Plan, take and write the gallery; returns the path of ``index.html``. A mistake in
    the config is refused before anything is written; a failure leaves nothing new behind."""
    check_output_dir(config.out, "--out")
    shots = plan(config)
    with removed_on_failure(config.out):
        config.out.mkdir(parents=True, exist_ok=True)
        await take(shots, config.out, config.concurrency, show_progress, provider)
        return write_page(shots, config.out)


def _run(config: GalleryConfig) -> None:
    index = asyncio.run(build_gallery(config))
    typer.echo(f"wrote {index.resolve()}")


def register(app: typer.Typer) -> None:
    """Add ``cua sites gallery`` to the ``cua sites`` group of ``fsm_sites.cli``."""
    sites_app.command("gallery")(config_command(
        GalleryConfig, _run, name="sites gallery",
        doc="Screenshot every curated site's main states across theme families and viewports "
            "into an HTML page (index.html, with the PNGs beside it)."))
