"""``OUT/report.html``: loss curves and the before/after evaluation of a training run.

One self-contained page (inline SVG, no script): the evaluation before and after training
as bars (success rate and progress) with links to each ``cua eval`` report and the command
that reproduces it, a line chart per logged training metric, and the run's config.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.evaluation.stats import format_rate

#: the training metrics drawn, in this order, where the run logged them
CURVES = ("loss", "mean_token_accuracy", "rewards/accuracies", "rewards/margins", "learning_rate",
          "grad_norm")
#: the dense held-out metric's curves (trainers.training.heldout), with their titles
HELDOUT_CURVES = (("heldout_exact_match", "held-out next-action exact match"),
                  ("heldout_token_accuracy", "held-out token accuracy"), ("heldout_nll", "held-out NLL"))
WIDTH, HEIGHT, PAD = 420, 180, 34


def latest_by_step(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Training lines, one per step (a resumed run logs some steps again: the last wins)."""
    by_step: dict[int, dict[str, Any]] = {}
    for record in records:
        if record.get("event") == "train":
            by_step[int(record["step"])] = record
    return [by_step[s] for s in sorted(by_step)]


def scale(points: Sequence[tuple[float, float]], width: float = WIDTH, height: float = HEIGHT,
          pad: float = PAD) -> list[tuple[float, float]]:
    """Data points to SVG coordinates inside a ``pad`` margin (y grows downward; a flat or
    single-point series sits mid-height)."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    inner_w, inner_h = width - 2 * pad, height - 2 * pad

    def sx(x: float) -> float:
        return pad + (inner_w * (x - x0) / (x1 - x0) if x1 > x0 else inner_w / 2)

    def sy(y: float) -> float:
        return pad + (inner_h * (y1 - y) / (y1 - y0) if y1 > y0 else inner_h / 2)

    return [(round(sx(x), 1), round(sy(y), 1)) for x, y in points]


def line_chart(name: str, points: Sequence[tuple[float, float]], x_label: str = "step") -> str:
    """An SVG line chart of one metric against the step (or ``x_label``)."""
    coords = scale(points)
    path = " ".join(f"{x},{y}" for x, y in coords)
    ys = [p[1] for p in points]
    labels = (f'<text x="{PAD}" y="{PAD - 8}" class="t">{html.escape(name)}</text>'
              f'<text x="4" y="{PAD + 4}" class="a">{max(ys):.4g}</text>'
              f'<text x="4" y="{HEIGHT - PAD + 4}" class="a">{min(ys):.4g}</text>'
              f'<text x="{PAD}" y="{HEIGHT - 10}" class="a">{x_label} {points[0][0]:g}</text>'
              f'<text x="{WIDTH - PAD}" y="{HEIGHT - 10}" class="a" text-anchor="end">'
              f'{x_label} {points[-1][0]:g}</text>')
    return (f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">'
            f'<rect x="{PAD}" y="{PAD}" width="{WIDTH - 2 * PAD}" height="{HEIGHT - 2 * PAD}" class="f"/>'
            f'<polyline points="{path}" class="l"/>{labels}</svg>')


def bar_chart(evals: dict[str, dict[str, Any]]) -> str:
    """Bars of success rate and progress, before and after training (0 to 1)."""
    phases = [p for p in ("before", "after") if p in evals]
    bars, x = [], PAD
    colors = {"before": "#9aa5b1", "after": "#2f7ed8"}
    for metric in ("success_rate", "progress"):
        for phase in phases:
            value = float(evals[phase][metric])
            h = (HEIGHT - 2 * PAD) * value
            bars.append(f'<rect x="{x}" y="{HEIGHT - PAD - h:.1f}" width="40" height="{h:.1f}" '
                        f'fill="{colors[phase]}"/><text x="{x + 20}" y="{HEIGHT - PAD - h - 4:.1f}" '
                        f'class="a" text-anchor="middle">{value:.0%}</text>'
                        f'<text x="{x + 20}" y="{HEIGHT - PAD + 14}" class="a" '
                        f'text-anchor="middle">{phase}</text>')
            x += 46
        bars.append(f'<text x="{x - 46 * len(phases) / 2 - 3}" y="{HEIGHT - 6}" class="t" '
                    f'text-anchor="middle">{metric.replace("_", " ")}</text>')
        x += 30
    return (f'<svg width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}">'
            f'<line x1="{PAD - 4}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" '
            f'stroke="#555"/><line x1="{PAD - 4}" y1="{PAD}" x2="{WIDTH - PAD}" y2="{PAD}" '
            f'stroke="#bbb" stroke-dasharray="4 3"/><text x="{WIDTH - PAD + 3}" y="{PAD + 4}" '
            f'class="a">100%</text>{"".join(bars)}</svg>')


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


def _heldout_section(records: Sequence[dict[str, Any]]) -> str:
    """Curves of the dense held-out metric (``heldout`` lines), where the run measured it."""
    lines = sorted((r for r in records if r.get("event") == "heldout"), key=lambda r: r["step"])
    if not lines:
        return ""
    charts = "".join(line_chart(title, [(r["step"], r[name]) for r in lines])
                     for name, title in HELDOUT_CURVES)
    last = lines[-1]
    return (f"<h2>Held-out states: the oracle's next step</h2><div>{charts}</div>"
            f"<p>{last['heldout_states']} held-out states; at step {last['step']}: exact match "
            f"{last['heldout_exact_match']:.1%}, token accuracy {last['heldout_token_accuracy']:.1%} "
            "(teacher-forced, docs/training.md)</p>")


def _eval_section(evals: dict[str, dict[str, Any]]) -> str:
    if not evals:
        return "<p>No evaluation was configured (eval: in the config).</p>"
    rows = "".join(
        f'<tr><td>{phase}</td><td>{e["episodes"]}</td><td>{_success(e)}</td><td>{_sampled(e)}</td>'
        f'<td>{e["progress"]:.3f}</td><td>{e.get("seconds", 0):.0f} s</td>'
        f'<td><a href="eval/{phase}/report.html">episodes</a></td>'
        f'<td><code>{html.escape(e["command"])}</code></td></tr>'
        for phase, e in evals.items())
    return (f'{bar_chart(evals)}<table><tr><th>model</th><th>episodes</th><th>success [95% CI]</th><th>sampled</th>'
            f'<th>progress</th><th>time</th><th>report</th><th>reproduce</th></tr>{rows}</table>')


def render(config: Any, kind: str, records: Sequence[dict[str, Any]]) -> str:
    """The report page."""
    train = latest_by_step(records)
    evals = {r["phase"]: r for r in records if r.get("event") == "eval"}
    runs = [r for r in records if r.get("event") == "run"]
    charts = "".join(line_chart(name, [(r["step"], r[name]) for r in train if name in r])
                     for name in CURVES if any(name in r for r in train))
    totals = ""
    if runs:
        last = runs[-1]
        totals = (f"<p>{last['rows']} training rows · {last['steps']} optimizer steps · "
                  f"{sum(r['train_seconds'] for r in runs):.0f} s of training"
                  f"{' (resumed)' if last.get('resumed_from') else ''}</p>")
    config_text = yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>cua train {kind}</title>
<style>body{{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}}
td,th{{border:1px solid #ccc;padding:.3rem .5rem;text-align:left}}table{{border-collapse:collapse}}
code{{font-size:.75rem}}svg{{margin:.3rem}}.f{{fill:#fafafa;stroke:#ddd}}
.l{{fill:none;stroke:#2f7ed8;stroke-width:2}}.t{{font-size:13px;font-weight:600}}.a{{font-size:11px;fill:#555}}
</style></head><body><h1>cua train {kind} · {html.escape(str(config.out))}</h1>{totals}
<h2>Evaluation before and after training</h2>{_eval_section(evals)}
{_heldout_section(records)}<h2>Training curves</h2><div>{charts or '<p>No training step was logged.</p>'}</div>
<details><summary>Config</summary><pre>{html.escape(config_text)}</pre></details></body></html>"""


def write_report(out: Path, config: Any, kind: str, records: Sequence[dict[str, Any]]) -> Path:
    path = Path(out) / "report.html"
    path.write_text(render(config, kind, records), encoding="utf-8")
    return path
