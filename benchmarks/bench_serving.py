"""Issue 10's serving layers: episodes per minute locally, through an env server (HTTP +
WebSocket, another process) and in a container (the docker provider), side by side.

    .venv/bin/python -m benchmarks.bench_serving [--layers local,env-server,container] [--quick]

The container layer needs a Docker engine: run scripts/podman_setup.sh and source its env
file first (``DOCKER_HOST``, ``CUA_BASE_IMAGE``).

Every layer runs the same episodes (the oracle on ``--task``, seeds 0..N-1) at the same
``--concurrency`` through ``EpisodeRunner(envs=layer)``; the agent and every sink stay in
this process. A round measures each layer once, in an order that rotates from round to
round; each measurement starts the layer (timed apart as ``startup_s``: a server process, a
container), runs ``concurrency`` warm-up episodes (untimed), then times ``--episodes``
episodes. A layer's cost is its episodes per minute over local's in the same round, the
median over rounds, with the load average seen. The image is built (or found) once before
the first round. (The same shape as bench_layers, whose ``LAYERS`` these layers can join.)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import console, fmt, median, print_table, write_results
from harness.agents.registry import make_agent
from harness.env_providers import EnvProvider, make_env_provider
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from harness.server.client import RemoteEnvs


class ServedEnvs(RemoteEnvs):
    """``cua env-server`` in a process of its own, and its envs through the remote client."""

    def __init__(self, sessions: int) -> None:
        super().__init__("http://unstarted", secrets.token_urlsafe(16))
        self.sessions = sessions
        self.proc: subprocess.Popen[str] | None = None

    async def start(self) -> None:
        if self.proc is not None:  # the runner starts its provider on every run: idempotent
            return
        env = {**os.environ, "CUA_ENV_TOKEN": self._token}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from harness.cli import main; main()", "env-server",
             "--port", "0", "--max-sessions", str(self.sessions)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout is not None
        line = await asyncio.to_thread(self.proc.stdout.readline)
        if " on " not in line:
            raise RuntimeError(f"expected cua env-server to start, got {line!r}")
        self.url = line.rsplit(" on ", 1)[1].strip()
        await super().start()

    async def close(self) -> None:
        await super().close()
        if self.proc is not None:
            self.proc.terminate()
            await asyncio.to_thread(self.proc.wait)


#: the harness image, built (or found) once before the first round
IMAGE: dict[str, str] = {}


def _container(concurrency: int) -> EnvProvider:
    from harness.containers.provider import DockerConfig, DockerEnvs

    return DockerEnvs(DockerConfig(image=IMAGE["tag"], containers=1, sessions=concurrency))


#: layer name -> (what it is, a function making its env provider for a concurrency)
LAYERS: dict[str, tuple[str, Callable[[int], EnvProvider]]] = {
    "local": ("LocalEnvs: contexts of one shared Chromium, in this process",
              lambda _c: make_env_provider("local")),
    "env-server": ("RemoteEnvs over HTTP/WebSocket to cua env-server in another process "
                   "(LocalEnvs there)", ServedEnvs),
    "container": ("DockerEnvs: cua env-server in one podman container (network none, limits), "
                  "over a Unix socket", _container),
}


async def measure(layer: str, *, task: str, episodes: int, concurrency: int) -> dict[str, Any]:
    """Start one layer, warm it up, and time ``episodes`` episodes through it."""
    envs = LAYERS[layer][1](concurrency)
    config = RunnerConfig(concurrency=concurrency, progress=False, save_screenshots=False)
    runner = EpisodeRunner(make_agent("oracle"), config, envs=envs)
    try:
        started = time.perf_counter()
        await envs.start()
        await runner.run(episode_specs([task], concurrency, seed=10_000))  # warm-up: every slot
        startup = time.perf_counter() - started
        load = os.getloadavg()[0]
        began = time.perf_counter()
        records = await runner.run(episode_specs([task], episodes, seed=0))
        wall = time.perf_counter() - began
    finally:
        await envs.close()
    return {"layer": layer, "episodes": episodes, "wall_s": wall, "startup_s": startup,
            "episodes_per_minute": 60 * episodes / wall, "load_1m": load,
            "succeeded": sum(r.success for r in records),
            "errors": sum(r.error is not None for r in records),
            "steps": sum(r.steps for r in records)}


def summarize(measurements: list[dict[str, Any]], layers: list[str]) -> dict[str, Any]:
    """Per layer: median episodes/min, start-up, and the median per-round ratio to local."""
    by_round: dict[int, dict[str, float]] = {}
    for m in measurements:
        by_round.setdefault(m["round"], {})[m["layer"]] = m["episodes_per_minute"]
    summary = {}
    for layer in layers:
        mine = [m for m in measurements if m["layer"] == layer]
        ratios = [r[layer] / r["local"] for r in by_round.values() if "local" in r and layer in r]
        summary[layer] = {
            "episodes_per_minute": median(m["episodes_per_minute"] for m in mine),
            "startup_s": median(m["startup_s"] for m in mine),
            "ratio_to_local": median(ratios),
            "load_1m": median(m["load_1m"] for m in mine),
            "errors": sum(m["errors"] for m in mine),
            "succeeded": sum(m["succeeded"] for m in mine),
        }
    return summary


async def run(layers: list[str], *, task: str, episodes: int, concurrency: int,
              rounds: int) -> dict[str, Any]:
    if "container" in layers:
        from harness.containers.image import docker_client, ensure_image
        from harness.containers.provider import DockerConfig

        IMAGE["tag"] = ensure_image(docker_client(), DockerConfig().base_image)
    measurements = []
    for round_index in range(rounds):
        order = layers[round_index % len(layers):] + layers[:round_index % len(layers)]
        for layer in order:
            result = await measure(layer, task=task, episodes=episodes, concurrency=concurrency)
            result["round"] = round_index
            measurements.append(result)
            console.print(f"round {round_index} {layer}: {result['episodes_per_minute']:.1f} "
                          f"episodes/min, start-up {result['startup_s']:.1f}s, "
                          f"load {result['load_1m']:.1f}")
    return {"task": task, "concurrency": concurrency, "episodes": episodes, "rounds": rounds,
            "layers": {name: LAYERS[name][0] for name in layers},
            "measurements": measurements, "summary": summarize(measurements, layers)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round of 12 episodes per layer")
    parser.add_argument("--layers", default="local,env-server,container",
                        help=f"comma-separated layers of {', '.join(LAYERS)}")
    parser.add_argument("--task", default="fsm:shop/open_mug", help="task id every layer runs")
    parser.add_argument("--episodes", type=int, default=None, help="timed episodes per measurement")
    parser.add_argument("--concurrency", type=int, default=2, help="episodes at once, every layer")
    parser.add_argument("--rounds", type=int, default=None, help="measurements per layer")
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)
    layers = [name.strip() for name in args.layers.split(",") if name.strip()]
    unknown = [name for name in layers if name not in LAYERS]
    if unknown:
        parser.error(f"expected layers of {', '.join(LAYERS)}, got {', '.join(unknown)}")
    if "local" not in layers:
        layers.insert(0, "local")  # every ratio is to local, measured in the same round
    episodes = args.episodes or (12 if args.quick else 30)
    rounds = args.rounds or (1 if args.quick else 3)
    result = asyncio.run(run(layers, task=args.task, episodes=episodes,
                             concurrency=args.concurrency, rounds=rounds))
    rows = [[name, fmt(s["episodes_per_minute"], 1), fmt(s["ratio_to_local"], 2),
             fmt(s["startup_s"], 1, " s"), fmt(s["load_1m"], 1), str(s["errors"])]
            for name, s in result["summary"].items()]
    print_table(f"episodes per minute at concurrency {args.concurrency} ({args.task}, oracle)",
                ["layer", "episodes/min", "ratio to local", "start-up", "load 1m", "errors"], rows)
    path = write_results("bench_serving", result, args.out, quick=args.quick)
    console.print(f"results: {path}")
    return result


if __name__ == "__main__":
    main()
