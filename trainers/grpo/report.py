"""``OUT/report.html`` of a GRPO run: curves, held-out evaluation, the task pool, filmstrips.

Built from ``metrics.jsonl`` into ``trainers/templates/grpo_report.html.jinja``, with the
training report's matplotlib charts (``trainers.charts``): held-out success before and after
as bars with their 95% Wilson intervals, held-out success at every evaluation with its
interval as a band, a line chart per update metric (reward, success,
held-out success, progress, loss, KL, entropy, clip fraction, time split), a per-update
table (clip fraction, KL, no-op steps, groups trained, dropped and resampled, env steps),
why the run stopped (updates or the env-step budget) with the env steps it used, the curriculum's
pool with its success rates, and filmstrips of a few rollouts of the last update (each step's
screenshot, action and FSM verdict), saved under ``OUT/filmstrips/``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from markupsafe import Markup
from PIL import Image

from harness.evaluation.stats import format_rate
from harness.step_display import verdict_words
from harness.templating import render as render_template
from trainers.charts import Series, curve, eval_chart, line_chart
from trainers.grpo.checkpoint import stop_text

CURVES = ("reward", "success", "heldout_success", "heldout_exact_match", "heldout_token_accuracy",
          "progress", "loss", "kl", "entropy",
          "clip_fraction", "ratio", "grad_norm", "rollout_s", "train_s")
THUMB = 220


def save_filmstrips(out: Path, update: int, rollouts: Sequence[Any]) -> None:
    """Thumbnails and verdicts of ``rollouts`` (the last update's first few) in
    ``OUT/filmstrips/`` (replacing the previous update's)."""
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
                           "verdict": None if verdict is None else verdict.model_dump()})
        strips.append({"task": episode.task_id, "seed": episode.seed, "success": episode.success,
                       "return": round(episode.total_reward, 3), "frames": frames})
    (folder / "filmstrips.json").write_text(json.dumps({"update": update, "strips": strips}), encoding="utf-8")


def _filmstrips(out: Path) -> dict[str, Any] | None:
    path = Path(out) / "filmstrips" / "filmstrips.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _verdict_words(verdict: dict[str, Any] | None) -> str:
    """A filmstrip step's verdict in the eval report's words (``verdict_words``)."""
    return verdict_words(verdict)[1] or "no verdict"


PER_UPDATE = (("reward", "reward", "{:.3f}"), ("success", "success", "{:.0%}"),
              ("clip fraction", "clip_fraction", "{:.1%}"), ("KL", "kl", "{:.4f}"),
              ("entropy", "entropy", "{:.3f}"), ("no-op steps", "no_op_steps", "{}"),
              ("groups trained", "groups", "{}"), ("without signal", "silent_groups", "{}"),
              ("dropped", "dropped_groups", "{}"), ("resampled", "resampled_groups", "{}"),
              ("env steps", "update_env_steps", "{}"))


def render(config: Any, records: Sequence[dict[str, Any]]) -> str:
    """The report page."""
    by_update = {r["update"]: r for r in records if r.get("event") == "update"}
    updates = [by_update[u] for u in sorted(by_update)]  # a resumed run may log an update twice
    evals = [r for r in records if r.get("event") == "eval"]
    phases = {r["phase"]: r for r in evals if r["phase"] in ("before", "after")}
    charts = [curve(name, [(r["update"], r[name]) for r in updates if r.get(name) is not None], "update")
              for name in CURVES if any(r.get(name) is not None for r in updates)]
    if evals:
        charts.append(_heldout_chart(evals))
    last = updates[-1] if updates else {}
    split = " · ".join(f"{k} {v:.0f} s" for k, v in last.get("seconds", {}).items())
    stops = [r for r in records if r.get("event") == "stop"]
    return render_template(
        "trainers", "grpo_report.html.jinja", config=config, out=str(config.out), updates=updates,
        last=last, split=split, phases=phases, eval_chart=eval_chart(phases) if phases else "",
        success_line=_success_line(phases), charts=charts, columns=PER_UPDATE,
        stop_line=stop_text(stops[-1]) if stops else "",
        filmstrips=_filmstrips(Path(config.out)), verdict_words=_verdict_words, thumb=THUMB,
        config_text=yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))


def _heldout_chart(evals: Sequence[dict[str, Any]]) -> Markup:
    """Held-out success at every evaluation, with its 95% Wilson interval as a band."""
    evals = sorted(evals, key=lambda r: r["update"])
    band = [(r["update"], *r["success_ci"]) for r in evals] if all("success_ci" in r for r in evals) else None
    return Markup(line_chart("held-out success (all evaluations)", Series(
        "held-out success", [[(r["update"], r["success_rate"]) for r in evals]], band),
        x_label="update", percent=True))


def _success_line(phases: dict[str, dict[str, Any]]) -> str:
    """Held-out success before and after, each with its 95% Wilson interval."""
    return " · ".join(f"{phase}: {format_rate(r['success_rate'], r['success_ci'])} of {r['episodes']} episodes"
                      for phase, r in phases.items() if "success_ci" in r)


def write_report(out: Path, config: Any, records: Sequence[dict[str, Any]]) -> Path:
    path = Path(out) / "report.html"
    path.write_text(render(config, records), encoding="utf-8")
    return path
