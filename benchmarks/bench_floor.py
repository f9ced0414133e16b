"""The floor of the side-by-side benchmark: a bare Playwright + CDP loop that only
clicks and takes a screenshot, with none of the harness around it. Every env is
measured against this number.

    python -m benchmarks.bench_floor http://127.0.0.1:8000/page.html --steps 200
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Sequence

from playwright.async_api import async_playwright

from harness.actions import Click
from sandboxes.chromium import CHROMIUM_FLAGS, find_chromium


async def floor_loop(
    url: str,
    actions: Sequence[Click | tuple[int, int]],
    viewport: tuple[int, int] = (1024, 768),
    steps: int = 100,
    image_format: str = "png",
) -> float:
    """Open ``url`` and run ``steps`` x (mouse click at the next action's point, CDP
    ``Page.captureScreenshot``), cycling through ``actions``; return steps per second.
    Browser launch and page load are excluded from the timing."""
    if not actions or steps <= 0:
        raise ValueError(
            f"expected actions and steps > 0, got {len(actions)} actions, {steps} steps"
        )
    points = [(a.x, a.y) if isinstance(a, Click) else (int(a[0]), int(a[1])) for a in actions]
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=find_chromium(), headless=True, args=list(CHROMIUM_FLAGS)
        )
        try:
            page = await browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            await page.goto(url, wait_until="domcontentloaded")
            cdp = await page.context.new_cdp_session(page)
            started = time.perf_counter()
            for x, y in itertools.islice(itertools.cycle(points), steps):
                await page.mouse.click(x, y)
                await cdp.send(  # the env's capture settings (BrowserConfig defaults)
                    "Page.captureScreenshot", {"format": image_format, "optimizeForSpeed": True}
                )
            elapsed = time.perf_counter() - started
        finally:
            await browser.close()
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--point", action="append", default=[], help="x,y to click (repeatable)")
    args = parser.parse_args()
    points = [tuple(int(v) for v in p.split(",")) for p in args.point] or [(10, 10)]
    rate = asyncio.run(floor_loop(args.url, points, steps=args.steps))
    print(f"floor: {rate:.1f} steps/s over {args.steps} steps")


if __name__ == "__main__":
    main()
