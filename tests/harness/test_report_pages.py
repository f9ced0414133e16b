"""The eval report in real Chromium: what a person sees and can do on it."""

from __future__ import annotations

from PIL import Image

from harness.evaluation.report import write_report
from harness.evaluation.stats import wilson_interval
from harness.records import EpisodeRecord, StepRecord

VERDICT = {"state_before": "fsm:a", "state_after": "fsm:b", "transition_fired": True,
           "transition_id": "add_to_cart", "on_shortest_path": True, "distance_before": 3,
           "distance_after": 2, "goal_reached": False}


def _episode(folder, name: str, success: bool) -> EpisodeRecord:
    (folder / "episodes" / name).mkdir(parents=True)
    Image.new("RGB", (640, 480), "#cde").save(folder / "episodes" / name / "step_1.jpg")
    step = StepRecord(step=1, action={"type": "click", "x": 320, "y": 240}, reward=0.33, raw_reward=0.0,
                      verdict=VERDICT, screenshot=f"episodes/{name}/step_1.jpg")
    return EpisodeRecord(task=f"fsm:shop/{name}", seed=0, index=0, episode=name, success=success,
                         steps=1, width=640, height=480, trajectory=[step], instruction=f"do <b>{name}</b>")


def _summary(records: list[EpisodeRecord]) -> dict:
    """A summary as written before ``refused_steps`` existed: old runs' reports still render."""
    def figures(rs: list[EpisodeRecord]) -> dict:
        k = sum(r.success for r in rs)
        return {"episodes": len(rs), "success_rate": k / len(rs), "success_ci": wilson_interval(k, len(rs)),
                "progress": 0.5, "mean_reward": 0.33, "steps": len(rs), "wall_seconds": 1.0,
                "steps_per_second": 1.0}

    return {**figures(records), "per_task": {r.task: figures([r]) for r in records}, "sampled": None}


async def test_the_eval_report_filters_failures_opens_full_size_and_says_its_verdicts(
        tmp_path, static_server_factory, browser_sandbox) -> None:
    records = [_episode(tmp_path, "solved", True), _episode(tmp_path, "unsolved", False)]
    write_report(tmp_path / "report.html", _summary(records), records)
    server = await static_server_factory(tmp_path)
    await browser_sandbox.reset(server.url("report.html"), allowed_origins=(server.origin,))
    page = browser_sandbox.page

    rows = page.locator("table.per-task tr")
    assert await rows.count() == 4  # header, two tasks, all
    assert "100.0% [20.7–100.0]" in await rows.nth(1).inner_text()  # the Wilson interval of 1/1
    verdict = page.locator(".episode .verdict").first
    assert await verdict.inner_text() == "✓ fired add_to_cart · on the shortest path · 3 → 2 steps to go"

    solved, unsolved = page.locator("#solved"), page.locator("#unsolved")
    assert "do <b>solved</b>" in await solved.inner_text()  # escaped text, not markup
    assert await solved.is_visible() and await unsolved.is_visible()
    await page.locator("#only-failed").check()
    assert await solved.is_hidden() and await unsolved.is_visible()
    assert await page.locator("#shown-count").inner_text() == "showing 1 of 2"
    await page.locator("#only-failed").uncheck()
    assert await solved.is_visible()

    await page.locator("#unsolved a.frame").click()
    box = page.locator("#lightbox")
    assert await box.is_visible()
    await page.wait_for_function("document.querySelector('#lightbox .full img').complete")
    image = await page.eval_on_selector("#lightbox .full img", "i => [i.naturalWidth, i.clientWidth]")
    assert image[0] == 640 and image[1] > 400  # the full picture, far larger than the 200 px thumbnail
    overlay = await page.eval_on_selector("#lightbox .full svg", "s => s.getBoundingClientRect().width")
    assert abs(overlay - image[1]) < 2  # the action drawn over the whole picture
    assert await page.locator("#lightbox .full svg circle").count() == 1  # the click's crosshair
    assert "add_to_cart" in await box.inner_text()
    await page.locator("#lightbox button").click()
    assert await box.is_hidden()


async def test_the_demo_index_shows_each_stage_and_its_success_with_the_interval(
        tmp_path, static_server_factory, browser_sandbox) -> None:
    from harness.demo import Stage, write_index
    from harness.evaluation import write_summary

    for name, solved in (("tiny_before", 0), ("tiny_after", 3)):
        (tmp_path / name).mkdir()
        records = [_episode(tmp_path / name, f"e{i}", i < solved) for i in range(4)]
        write_summary(tmp_path / name / "summary.json", records)
    stages = [(Stage("eval before", ["eval", "--out", "tiny_before"], {"report": "tiny_before/summary.json"}), 0, 1.5),
              (Stage("eval after", ["eval", "--out", "tiny_after"], {"report": "tiny_after/summary.json"}), 0, 2.5)]
    write_index(tmp_path, stages)
    server = await static_server_factory(tmp_path)
    await browser_sandbox.reset(server.url("index.html"), allowed_origins=(server.origin,))
    text = await browser_sandbox.page.locator("body").inner_text()
    assert "eval before" in text and "eval after" in text
    # Wilson: 0/4 -> [0, 49%]; 3/4 -> [30%, 95%], shown before and after in that order
    assert "0% [0–49]" in text and "75% [30–95]" in text and text.index("0% [0–49]") < text.index("75% [30–95]")
    hrefs = await browser_sandbox.page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
    assert {"tiny_before/summary.json", "tiny_after/summary.json"} <= set(hrefs)
