"""The training reports in real Chromium: their matplotlib charts have axes with ticks,
legends and confidence bands, and the pages escape what they print."""

from __future__ import annotations

from types import SimpleNamespace

from trainers.grpo.report import write_report as write_grpo_report
from trainers.training.report import write_report


def _config(out):
    return SimpleNamespace(out=out, reward="step", advantage=SimpleNamespace(step_weight=1.0),
                           tree=SimpleNamespace(branch_states=1, continuations=2),
                           model_dump=lambda mode: {"out": str(out), "note": "<b>not bold</b>"})


def _eval(phase: str, rate: float, update: int = 0) -> dict:
    return {"event": "eval", "phase": phase, "update": update, "episodes": 8, "success_rate": rate,
            "success_ci": [max(0.0, rate - 0.3), min(1.0, rate + 0.3)], "progress": rate,
            "seconds": 3, "command": "cua eval --suite fsm:shop"}


async def _open(browser_sandbox, static_server_factory, folder):
    server = await static_server_factory(folder)
    await browser_sandbox.reset(server.url("report.html"), allowed_origins=(server.origin,))
    return browser_sandbox.page


async def test_the_sft_report_draws_charts_with_ticks_legends_and_intervals(
        tmp_path, static_server_factory, browser_sandbox) -> None:
    records = [{"event": "train", "step": s, "loss": 2.0 / s} for s in range(1, 11)]
    records += [_eval("before", 0.25), _eval("after", 0.75)]
    write_report(tmp_path, _config(tmp_path), "sft", records)
    page = await _open(browser_sandbox, static_server_factory, tmp_path)

    charts = page.locator(".charts > svg")
    assert await charts.count() == 2  # the evaluation bars and the loss curve
    bars, loss = charts.nth(0), charts.nth(1)
    for chart in (bars, loss):
        assert (await chart.bounding_box() or {}).get("width", 0) > 250
        assert await chart.locator('g[id^="legend_"]').is_visible()
        assert await chart.locator('g[id^="ytick_"]').count() >= 3
    assert await loss.locator('g[id^="xtick_"]').count() >= 3
    ticks = [t.strip() for t in await bars.locator('g[id^="ytick_"]').all_text_contents()]
    assert ticks[0] == "0%" and "100%" in ticks
    assert await bars.locator('g[id^="LineCollection_"]').count() == 2  # a Wilson interval per phase
    assert "<b>not bold</b>" in (await page.locator("details pre").text_content() or "")  # escaped, not markup


async def test_the_grpo_report_draws_held_out_success_with_its_interval_as_a_band(
        tmp_path, static_server_factory, browser_sandbox) -> None:
    updates = [{"event": "update", "update": u, "reward": u / 5, "env_steps": 10 * u, "events": [],
                "pool": {"fsm:shop/open_mug": {"kind": "fsm", "rate": 0.5, "n": 4, "retired": False}}}
               for u in range(1, 5)]
    records = [*updates, _eval("before", 0.25, 0), _eval("mid", 0.5, 2), _eval("after", 0.75, 4)]
    write_grpo_report(tmp_path, _config(tmp_path), records)
    page = await _open(browser_sandbox, static_server_factory, tmp_path)

    held_out = page.locator(".charts > svg", has_text="held-out success (all evaluations)")
    assert await held_out.count() == 1
    assert await held_out.locator('g[id^="FillBetweenPolyCollection_"]').count() == 1
    assert "held-out success: 95% CI" in await held_out.locator('g[id^="legend_"]').text_content()
    assert await page.locator("table td", has_text="fsm:shop/open_mug").count() == 1
