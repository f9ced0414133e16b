"""``OUT/report.html`` of a GRPO run: curves, held-out evaluation, the task pool, filmstrips.

Built from ``metrics.jsonl`` with the training report's charts (``trainers.training.report``):
held-out success before and after as bars, a line chart per update metric (reward, success,
held-out success, progress, loss, KL, entropy, clip fraction, time split), a per-update
table (clip fraction, KL, no-op steps, groups trained, dropped and resampled), the curriculum's
pool with its success rates, and filmstrips of a few rollouts of the last update (each step's
screenshot, action and FSM verdict), saved under ``OUT/filmstrips/``.
"""

from __future__ import annotations

import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.evaluation.stats import format_rate
from trainers.training.report import bar_chart, line_chart

CURVES = ("reward", "success", "heldout_success", "heldout_exact_match", "heldout_token_accuracy",
          "progress", "loss", "kl", "entropy",
          "clip_fraction", "ratio", "grad_norm", "rollout_s", "train_s")
THUMB = 220


def save_filmstrips(out: Path, update: int, rollouts: Sequence[Any]) -> None:
    """Thumbnails and verdicts of ``rollouts`` (the last update's first few) in
    ``OUT/filmstrips/`` (replacing the previous update's)."""
    from PIL import Image

    folder = Path(out) / "filmstrips"
    folder.mkdir(parents=True, exist_ok=True)
    strips = []
    for k, r in enumerate(rollouts):
        episode = r.episode
        frames = []
        for t in episode.transitions:
            name = f"e{k}-s{t.step}.jpg"
            image = Image.open(io.BytesIO(t.before.screenshot)).convert("RGB")
            image.thumbnail((THUMB, THUMB))
            image.save(folder / name, quality=70)
            verdict = t.info.verdict
            frames.append({"image": f"filmstrips/{name}", "action": t.info.action_text or str(t.info.action),
                           "error": t.after.last_action_error, "reward": round(t.reward, 3),
                           "verdict": None if verdict is None else {
                               "fired": verdict.transition_fired, "on_path": verdict.on_shortest_path,
                               "distance": [verdict.distance_before, verdict.distance_after],
                               "goal": verdict.goal_reached}})
        strips.append({"task": episode.task_id, "seed": episode.seed, "success": episode.success,
                       "return": round(episode.total_reward, 3), "frames": frames})
    (folder / "filmstrips.json").write_text(json.dumps({"update": update, "strips": strips}), encoding="utf-8")


def _filmstrips(out: Path) -> str:
    path = Path(out) / "filmstrips" / "filmstrips.json"
    if not path.is_file():
        return "<p>No rollout was kept.</p>"
    data = json.loads(path.read_text(encoding="utf-8"))
    parts = [f"<p>Rollouts of update {data['update']}.</p>"]
    for strip in data["strips"]:
        cells = []
        for f in strip["frames"]:
            v = f["verdict"]
            verdict = "no verdict" if v is None else (
                f"{'fired' if v['fired'] else 'nothing fired'} · {'on path' if v['on_path'] else 'off path'}"
                f" · d {v['distance'][0]}→{v['distance'][1]}{' · goal' if v['goal'] else ''}")
            cells.append(f'<figure><img src="{html.escape(f["image"])}" width="{THUMB}"><figcaption>'
                         f'<code>{html.escape(str(f["action"])[:80])}</code><br>{verdict} · r {f["reward"]}'
                         f'{"<br><i>" + html.escape(str(f["error"])[:80]) + "</i>" if f["error"] else ""}'
                         "</figcaption></figure>")
        parts.append(f'<h3>{html.escape(strip["task"])} · seed {strip["seed"]} · '
                     f'{"solved" if strip["success"] else "not solved"} · return {strip["return"]}</h3>'
                     f'<div class="strip">{"".join(cells)}</div>')
    return "".join(parts)


PER_UPDATE = (("reward", "reward", "{:.3f}"), ("success", "success", "{:.0%}"),
              ("clip fraction", "clip_fraction", "{:.1%}"), ("KL", "kl", "{:.4f}"),
              ("entropy", "entropy", "{:.3f}"), ("no-op steps", "no_op_steps", "{}"),
              ("groups trained", "groups", "{}"), ("without signal", "silent_groups", "{}"),
              ("dropped", "dropped_groups", "{}"), ("resampled", "resampled_groups", "{}"))


def _per_update(updates: Sequence[dict[str, Any]]) -> str:
    """One row per update: the figures tuning looks at (clip fraction 2-8%, KL under 0.1)
    beside what the batch held."""
    if not updates:
        return ""
    head = "".join(f"<th>{name}</th>" for name, _, _ in PER_UPDATE)
    rows = "".join("<tr><td>" + str(u["update"]) + "</td>" + "".join(
        f"<td>{'–' if u.get(key) is None else fmt.format(u[key])}</td>" for _, key, fmt in PER_UPDATE)
        + "</tr>" for u in updates)
    return f"<table><tr><th>update</th>{head}</tr>{rows}</table>"


def _rate(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _pool(updates: Sequence[dict[str, Any]]) -> str:
    if not updates:
        return ""
    pool = updates[-1]["pool"]
    rows = "".join(f"<tr><td>{html.escape(t)}</td><td>{p['kind']}</td><td>{_rate(p['rate'])}</td>"
                   f"<td>{p['n']}</td><td>{'retired' if p['retired'] else 'active'}</td></tr>"
                   for t, p in pool.items())
    events = "".join(f"<li>update {u['update']}: {html.escape(e)}</li>" for u in updates for e in u["events"])
    return (f"<table><tr><th>task</th><th>kind</th><th>recent success</th><th>episodes</th><th></th></tr>"
            f"{rows}</table><ul>{events}</ul>")


def render(config: Any, records: Sequence[dict[str, Any]]) -> str:
    """The report page."""
    updates = sorted((r for r in records if r.get("event") == "update"), key=lambda r: r["update"])
    by_update = {r["update"]: r for r in updates}
    updates = [by_update[u] for u in sorted(by_update)]  # a resumed run may log an update twice
    evals = [r for r in records if r.get("event") == "eval"]
    phases = {r["phase"]: {**r, "command": f"held-out eval at update {r['update']}"} for r in evals
              if r["phase"] in ("before", "after")}
    charts = "".join(line_chart(name, [(r["update"], r[name]) for r in updates if r.get(name) is not None],
                                "update")
                     for name in CURVES if any(r.get(name) is not None for r in updates))
    if evals:
        charts += line_chart("held-out success (all evaluations)",
                             [(r["update"], r["success_rate"]) for r in evals], "update")
    last = updates[-1] if updates else {}
    seconds = last.get("seconds", {})
    split = " · ".join(f"{k} {v:.0f} s" for k, v in seconds.items())
    config_text = yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>cua train grpo</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:80rem}}
td,th{{border:1px solid #ccc;padding:.3rem .5rem;text-align:left}}table{{border-collapse:collapse}}
code{{font-size:.75rem}}svg{{margin:.3rem}}.f{{fill:#fafafa;stroke:#ddd}}
.l{{fill:none;stroke:#2f7ed8;stroke-width:2}}.t{{font-size:13px;font-weight:600}}.a{{font-size:11px;fill:#555}}
.strip{{display:flex;overflow-x:auto;gap:.5rem}}figure{{margin:0;font-size:.75rem;max-width:{THUMB}px}}
</style></head><body><h1>cua train grpo · {html.escape(str(config.out))}</h1>
<p>{len(updates)} updates · {last.get('env_steps', 0)} env steps · reward mode {config.reward} ·
step weight {config.advantage.step_weight} · tree {config.tree.branch_states}×{config.tree.continuations}
· time: {split}</p>
<h2>Held-out evaluation before and after</h2>{bar_chart(phases) if phases else '<p>No evaluation (eval: in the config).</p>'}
{_success_line(phases)}
<h2>Curves</h2><div>{charts or '<p>No update was logged.</p>'}</div>
<h2>Per update</h2><p>Clip fraction and KL (token means over the update's minibatches; a
healthy run keeps the clip fraction near 2-8% and the KL under 0.1), and the batch.</p>{_per_update(updates)}
<h2>Task pool</h2>{_pool(updates)}
<h2>Rollouts</h2>{_filmstrips(Path(config.out))}
<details><summary>Config</summary><pre>{html.escape(config_text)}</pre></details></body></html>"""


def _success_line(phases: dict[str, dict[str, Any]]) -> str:
    """Held-out success before and after, each with its 95% Wilson interval."""
    parts = [f"{phase}: {format_rate(r['success_rate'], r['success_ci'])} of {r['episodes']} episodes"
             for phase, r in phases.items() if "success_ci" in r]
    return f"<p>Success (95% CI): {' · '.join(parts)}</p>" if parts else ""


def write_report(out: Path, config: Any, records: Sequence[dict[str, Any]]) -> Path:
    path = Path(out) / "report.html"
    path.write_text(render(config, records), encoding="utf-8")
    return path
