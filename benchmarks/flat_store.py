"""Flat trajectory storage, the baseline of ``bench_store``: how most harnesses keep
trajectories -- one JSONL line per step in ``steps.jsonl`` plus one image file per
screenshot (``<episode>/<step>.png``, the bytes as captured), nothing shared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.store.models import Trajectory


class FlatStore:
    """Append-only JSONL + image files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._lines = (root / "steps.jsonl").open("a")

    def insert(self, trajectory: Trajectory, episode_id: str) -> int:
        """Write one episode (root frame = step 0); flushed per episode, like a collector would."""
        folder = self.root / episode_id
        folder.mkdir()
        frames: list[tuple[Any, bytes, dict[str, Any]]] = [
            (None, trajectory.root.screenshot, {"url": trajectory.root.url, "state_key": trajectory.root.state_key})]
        frames += [(s.action, s.screenshot, {"url": s.url, "state_key": s.state_key, "reward": s.reward,
                                              "verdict": s.verdict, "action_text": s.action_text,
                                              "terminal": s.terminal}) for s in trajectory.steps]
        for step, (action, image, meta) in enumerate(frames):
            name = f"{episode_id}/{step:04d}.png"
            (self.root / name).write_bytes(image)
            self._lines.write(json.dumps({
                "episode_id": episode_id, "env": trajectory.env, "task_id": trajectory.task_id,
                "step": step, "action": action, "image": name, "success": trajectory.success, **meta,
            }, sort_keys=True) + "\n")
        self._lines.flush()
        return len(trajectory.steps)

    def close(self) -> None:
        self._lines.close()

    def export_sft(self, out: Path, history_images: int = 3) -> Path:
        """SFT rows from successful episodes: instruction-free flat equivalent of the store's
        SFT export (the last k screenshots, the action history, the target action)."""
        episodes: dict[str, list[dict[str, Any]]] = {}
        with (self.root / "steps.jsonl").open() as handle:
            for line in handle:
                row = json.loads(line)
                episodes.setdefault(row["episode_id"], []).append(row)
        images = out / "images"
        images.mkdir(parents=True, exist_ok=True)
        target = out / "sft.jsonl"
        with target.open("w") as handle:
            for rows in episodes.values():
                rows.sort(key=lambda r: r["step"])
                if not rows[-1]["success"]:
                    continue
                for i in range(1, len(rows)):
                    context = rows[max(0, i - history_images):i]
                    names = []
                    for ctx in context:
                        name = ctx["image"].replace("/", "_")
                        (images / name).write_bytes((self.root / ctx["image"]).read_bytes())
                        names.append(f"images/{name}")
                    handle.write(json.dumps({
                        "task_id": rows[i]["task_id"], "images": names,
                        "history": [r["action_text"] for r in rows[1:i]],
                        "target": json.dumps(rows[i]["action"], sort_keys=True),
                    }) + "\n")
        return target
