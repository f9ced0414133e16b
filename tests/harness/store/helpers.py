"""Builders for small hand-made trajectories (real PNG screenshots drawn with PIL)."""

from __future__ import annotations

import io
from functools import cache

from PIL import Image, ImageDraw

from harness.store import Frame, Step, Trajectory

SMALL = (160, 120)
LARGE = (640, 400)


@cache
def screenshot(label: str, size: tuple[int, int] = (160, 120)) -> bytes:
    """A deterministic PNG per label: same label, same bytes (as Chromium's encoder gives)."""
    seed = sum(map(ord, label))
    image = Image.new("RGB", size, (seed * 37 % 256, seed * 91 % 256, seed * 53 % 256))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 150, 40), fill=(255, 255, 255))
    draw.text((14, 18), label, fill=(0, 0, 0))
    for row in range(50, size[1] - 10, 18):  # UI-like lines of text on larger screenshots
        draw.text((14, row), f"{label} item {row} ${seed * row % 997}.99  [Add to cart]", fill=(20, 20, 20))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def click(x: int, y: int) -> dict:
    return {"type": "click", "x": x, "y": y}


def verdict(before: str, after: str, on_path: bool, d0: int, d1: int, goal: bool = False) -> dict:
    return {"state_before": before, "state_after": after, "transition_fired": before != after,
            "transition_id": None, "on_shortest_path": on_path, "distance_before": d0,
            "distance_after": d1, "goal_reached": goal}


def step(state: str, action: dict, *, reward: float = 0.0, verdict_: dict | None = None,
         terminal: bool = False, large: bool = False) -> Step:
    return Step(action=action, action_text=f"click({action.get('x')}, {action.get('y')})",
                screenshot=screenshot(state, LARGE if large else SMALL), url=f"http://site/{state}", state_key=f"fsm:{state}",
                reward=reward, verdict=verdict_, terminal=terminal)


def trajectory(states_actions: list[tuple[str, dict]], *, success: bool = False,
               task_id: str | None = None, env: str = "fsm:shop", large: bool = False) -> Trajectory:
    """A trajectory from the root state 'home' through (state, action) pairs."""
    root = Frame(screenshot=screenshot("home", LARGE if large else SMALL), url="http://site/home",
                 state_key="fsm:home")
    steps = tuple(step(state, action, large=large) for state, action in states_actions)
    return Trajectory(env=env, root=root, steps=steps, success=success, task_id=task_id,
                      reward=1.0 if success else 0.0, agent="test")


def filled_store(path, episodes: int = 8):  # -> Path
    """A closed store of ``episodes`` three-step episodes over one tree (its database is
    fully checkpointed: no -wal or -shm beside it)."""
    from harness.store import TrajectoryStore

    store = TrajectoryStore(path)
    for i in range(episodes):
        steps = [("a", click(1, 1)), ("b", click(2, 2)), (f"leaf{i % 4}", click(3, i % 4))]
        store.insert_trajectory(trajectory(steps, success=i % 4 == 0, task_id="t"))
    store.put_task("t", "buy the thing")
    store.close()
    return path


DAMAGE = ("empty", "not_sqlite", "truncated", "overwritten")


def damage_store(path, kind: str) -> None:
    """Damage a closed store's database: empty beside its blobs, not SQLite at all,
    truncated to half (header intact), or the nodes table's root page overwritten (the
    file looks whole; only a query that reads nodes finds out)."""
    import sqlite3

    db = path / "store.sqlite"
    if kind == "empty":
        db.write_bytes(b"")
    elif kind == "not_sqlite":
        db.write_text("these are my notes, not a database\n")
    elif kind == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 2])
    elif kind == "overwritten":
        conn = sqlite3.connect(db)
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'nodes'").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.close()
        with db.open("r+b") as handle:
            handle.seek((root - 1) * page_size)
            handle.write(b"\xff" * page_size)
    else:
        raise ValueError(f"expected a kind of damage in {DAMAGE}, got {kind!r}")


def folder_bytes(path) -> dict[str, bytes]:
    """Every file under ``path`` and its bytes, to prove a command wrote nothing."""
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}
