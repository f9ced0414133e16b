"""Drives one BrowserGym MiniWoB env for ``bench_env``; runs inside the BrowserGym venv.

Standalone on purpose: that venv has BrowserGym (which pins Playwright 1.44) and none of
this project. Protocol: argv[1] is a JSON job; the driver creates the env, times its
resets, prints ``READY`` (the parent then reads the memory of the process tree), waits
for a line on stdin, runs the timed steps, and prints one JSON line of results.

Two shims, both needed because BrowserGym 0.14 launches Chromium itself:
- ``pw_chromium_kwargs`` cannot carry ``args`` (BrowserGym passes its own ``args=`` next to
  them: "got multiple values for keyword argument 'args'"), and its chat window launches a
  second Chromium that ignores ``pw_chromium_kwargs`` entirely and so would look for
  Playwright's downloaded browser (never installed here). ``BrowserType.launch`` is
  therefore wrapped to default ``executable_path`` to Debian's Chromium and to append the
  team's flags to every launch.
- BrowserGym's MiniWoB screenshots are scaled by 1.5 and its ``mouse_click(x, y)`` divides
  by 1.5, so the driver multiplies the shared click points by 1.5 to hit the same CSS pixel.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _patch_launch(chromium: str, flags: list[str]) -> None:
    from playwright.sync_api._generated import BrowserType

    original = BrowserType.launch

    def launch(self, **kwargs):  # noqa: ANN001, ANN003, ANN202 - mirrors Playwright's signature
        kwargs.setdefault("executable_path", chromium)
        args = list(kwargs.get("args") or [])
        kwargs["args"] = args + [f for f in flags if f not in args]
        return original(self, **kwargs)

    BrowserType.launch = launch


def main() -> None:
    job = json.loads(sys.argv[1])
    os.environ["MINIWOB_URL"] = job["miniwob_url"]
    _patch_launch(job["chromium"], job["flags"])
    import browsergym.miniwob  # noqa: F401 - registers the browsergym/miniwob.* envs
    import gymnasium
    from browsergym.core.action.highlevel import HighLevelActionSet

    env = gymnasium.make(
        f"browsergym/miniwob.{job['task']}",
        action_mapping=HighLevelActionSet(subsets=["coord"]).to_python_code,
        viewport={"width": job["viewport"][0], "height": job["viewport"][1]},
        slow_mo=job["slow_mo"],
        pre_observation_delay=job["pre_observation_delay"],
        pw_chromium_kwargs={"executable_path": job["chromium"]},
    )
    scale, ended = 1.5, 0
    resets = []
    for seed in job["reset_seeds"]:
        start = time.perf_counter()
        env.reset(seed=seed)
        resets.append(time.perf_counter() - start)

    def click(x: int, y: int) -> bool:
        _, _, terminated, truncated, info = env.step(f"mouse_click({x * scale}, {y * scale})")
        return bool(terminated or truncated)

    for x, y in job["points"][: job["warmup"]]:
        click(x, y)
    print("READY", flush=True)
    sys.stdin.readline()
    latencies = []
    t_start = time.time()
    for x, y in job["points"][: job["steps"]]:
        start = time.perf_counter()
        done = click(x, y)
        latencies.append(time.perf_counter() - start)
        if done:  # the click points are chosen not to end episodes; count it if one does
            ended += 1
            env.reset(seed=job["reset_seeds"][0])
    t_end = time.time()
    env.close()
    print(json.dumps({"resets": resets, "latencies": latencies, "t_start": t_start,
                      "t_end": t_end, "ended": ended}), flush=True)


if __name__ == "__main__":
    main()
