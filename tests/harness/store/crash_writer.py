"""A collector process for the kill -9 test: prints each episode id once it is committed."""

from __future__ import annotations

import sys
import time

from harness.store import Frame, TrajectoryStore
from tests.harness.store.helpers import click, screenshot, step


def main(path: str) -> None:
    store = TrajectoryStore(path)
    root = Frame(screenshot=screenshot("home"), url="http://site/home", state_key="fsm:home")
    first = store.begin_episode("fsm:shop", root)
    first.add_step(step("claimed", click(0, 0)))
    claimed = first.commit().leaf_id
    store.claim_node(claimed)  # left 'exploring' when we are killed
    print(f"claimed {claimed}", flush=True)
    n = 0
    while True:
        writer = store.begin_episode("fsm:shop", root, agent="crash")
        for depth in range(6):
            writer.add_step(step(f"s{(n + depth) % 9}", click(n % 4, depth)))
            time.sleep(0.001)  # an env step: the kill lands mid-episode most of the time
        episode = writer.commit(success=n % 3 == 0)
        print(f"committed {episode.id}", flush=True)
        n += 1


if __name__ == "__main__":
    main(sys.argv[1])
