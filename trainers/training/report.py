"""``OUT/report.html``: loss curves and the before/after evaluation of a training run.

One self-contained page (``trainers/templates/training_report.html.jinja``; matplotlib
charts inline as SVG, ``trainers.charts``; no script, no network): the evaluation before
and after training as bars (success rate with its 95% Wilson interval, and progress) with
links to each ``cua eval`` report and the command that reproduces it, a line chart per
logged training metric, and the run's config.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.evaluation.stats import format_rate
from harness.templating import render as render_template
from trainers.charts import curve, eval_chart

#: the training metrics drawn, in this order, where the run logged them
CURVES = ("loss", "mean_token_accuracy", "rewards/accuracies", "rewards/margins", "learning_rate",
          "grad_norm")
#: the dense held-out metric's curves (trainers.training.heldout), with their titles
HELDOUT_CURVES = (("heldout_exact_match", "held-out next-action exact match"),
                  ("heldout_token_accuracy", "held-out token accuracy"), ("heldout_nll", "held-out NLL"))


def latest_by_step(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Training lines, one per step (a resumed run logs some steps again: the last wins)."""
    by_step: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.get("event") == "train":
            by_step[int(record["step"])] = record
    return [by_step[s] for s in sorted(by_step)]


def _success(evaluation: dict[str, Any]) -> str:
    """The success rate with its Wilson interval (runs logged before intervals: the rate)."""
    if "success_ci" not in evaluation:
        return f'{evaluation["success_rate"]:.1%}'
    return format_rate(evaluation["success_rate"], evaluation["success_ci"])


def _sampled(evaluation: dict[str, Any]) -> str:
    """The sampled episodes' success with its interval and temperature (eval.samples)."""
    sampled = evaluation.get("sampled")
    if not sampled:
        return "-"
    temperatures = ", ".join(f"{t:g}" for t in sampled["temperatures"])
    return f'{_success(sampled)} of {sampled["episodes"]} at T={temperatures}'


def _heldout(records: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Curves of the dense held-out metric (``heldout`` lines), where the run measured it."""
    lines = sorted((r for r in records if r.get("event") == "heldout"), key=lambda r: r["step"])
    if not lines:
        return None
    return {"charts": [curve(title, [(r["step"], r[name]) for r in lines]) for name, title in HELDOUT_CURVES],
            "last": lines[-1]}


def render(config: Any, kind: str, records: Sequence[dict[str, Any]]) -> str:
    """The report page."""
    train = latest_by_step(records)
    evals = {r["phase"]: r for r in records if r.get("event") == "eval"}
    runs = [r for r in records if r.get("event") == "run"]
    charts = [curve(name, [(r["step"], r[name]) for r in train if name in r])
              for name in CURVES if any(name in r for r in train)]
    return render_template(
        "trainers", "training_report.html.jinja", kind=kind, out=str(config.out), evals=evals,
        eval_chart=eval_chart(evals) if evals else "", heldout=_heldout(records), charts=charts,
        last_run=runs[-1] if runs else None, train_seconds=sum(r["train_seconds"] for r in runs),
        success=_success, sampled=_sampled,
        config_text=yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))


def write_report(out: Path, config: Any, kind: str, records: Sequence[dict[str, Any]]) -> Path:
    path = Path(out) / "report.html"
    path.write_text(render(config, kind, records), encoding="utf-8")
    return path
