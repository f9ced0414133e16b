"""The docker provider in real podman containers: episodes run in a container of the repo's
image, under CPU, memory and pids limits, without any network; a container killed in the
middle of an episode is replaced and the episode retried to success; one that dies idle
is replaced by the health checks; one that cannot start is removed, with the reason."""

from __future__ import annotations

import asyncio
import os
import socket
import threading

import pytest

from harness.actions import Done, Key, TypeText
from harness.agents.base import AgentContext, AgentStep
from harness.agents.oracle import OracleAgent
from harness.agents.scripted import ScriptedAgent
from harness.containers.provider import DockerEnvs, parse_config
from harness.errors import ConfigError
from harness.observation import Observation
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs
from sandboxes.errors import InfrastructureError
from tests.conftest import wait_until

#: the first test may set podman up from nothing (scripts/podman_setup.sh: ~7 minutes on 2 cores)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

QUIET = RunnerConfig(concurrency=2, progress=False, save_screenshots=False, reward="step")


async def test_episodes_run_in_a_limited_container(docker_envs: DockerEnvs) -> None:
    records = await EpisodeRunner(OracleAgent(), QUIET, envs=docker_envs).run(
        episode_specs(["fsm:shop", "miniwob:click-test"], 1, seed=3))
    assert [(r.task, r.error, r.success) for r in records if r.error or not r.success] == []
    assert len(records) == 2
    verdicts = [s.verdict for r in records if r.task == "fsm:shop" for s in r.trajectory]
    assert verdicts and all(v is not None and v["transition_fired"] for v in verdicts)

    container = docker_envs.slots[0].container
    host = (await asyncio.to_thread(container.client.api.inspect_container, container.id))["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["NanoCpus"] == 1_500_000_000 or (host["CpuQuota"], host["CpuPeriod"]) == (150_000, 100_000)
    assert host["Memory"] == host["MemorySwap"] == 1536 * 2**20
    assert host["PidsLimit"] == 1024
    limits = await _exec(container, "ulimit -n; ulimit -u; cat /sys/fs/cgroup/pids.max "
                         "/sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory.max "
                         "/sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null")
    assert limits.split() == ["20000", "32768", "1024", str(1536 * 2**20)]  # containers.conf


async def test_the_container_reaches_nothing_outside(docker_envs: DockerEnvs) -> None:
    host_ip = _host_address()
    server = socket.create_server(("0.0.0.0", 0))
    port = server.getsockname()[1]
    threading.Thread(target=lambda: server.accept()[0].close(), daemon=True).start()
    try:
        socket.create_connection((host_ip, port), timeout=5).close()  # the host can
        probe = (
            "import socket\n"
            "print(sorted(n for _, n in socket.if_nameindex()))\n"
            f"for addr in [('{host_ip}', {port}), ('1.1.1.1', 80), ('deb.debian.org', 80)]:\n"
            "    try:\n"
            "        socket.create_connection(addr, timeout=3).close(); print('reached', addr)\n"
            "    except OSError as exc:\n"
            "        print('refused', type(exc).__name__)\n"
        )
        out = await _exec(docker_envs.slots[0].container, probe, shell=["python3", "-c"])
    finally:
        server.close()
    lines = out.splitlines()
    assert lines[0] == "['lo']", out
    assert len(lines) == 4 and all(line.startswith("refused") for line in lines[1:]), out


class KillingOracle(OracleAgent):
    """The oracle, which kills its env's container once, after its first step's decision."""

    def __init__(self, envs: DockerEnvs) -> None:
        self.envs = envs
        self.killed: list[str] = []

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        step = await super().act(obs, ctx)
        if not self.killed and ctx.step >= 1:
            container = self.envs.slots[0].container
            self.killed.append(container.id)
            await asyncio.to_thread(container.kill)
        return step


async def test_a_container_killed_mid_episode_is_replaced_and_the_episode_retried(
        docker_envs: DockerEnvs) -> None:
    slot = docker_envs.slots[0]
    replaced = slot.replacements
    agent = KillingOracle(docker_envs)
    config = RunnerConfig(concurrency=1, progress=False, save_screenshots=False)
    [record] = await EpisodeRunner(agent, config, envs=docker_envs).run(
        episode_specs(["fsm:shop"], 1, seed=4))
    assert agent.killed, "the agent never got to kill the container"
    assert (record.error, record.success, record.attempts) == (None, True, 2)
    assert slot.replacements == replaced + 1 and slot.container.id != agent.killed[0]

    # idle: the health checks notice a dead container on their own
    dead = slot.container.id
    await asyncio.to_thread(slot.container.kill)
    assert await wait_until(lambda: slot.container is not None and slot.container.id != dead
                            and slot.remote is not None, timeout=90)
    assert await docker_envs.healthy(slot)


async def test_an_adversarial_agent_in_a_container_scores_like_anywhere_else(
        docker_envs: DockerEnvs) -> None:
    """The escapes of tests/security/test_browser_escapes.py through the docker provider: the
    agent's script in the address bar's place, a blocked address, history keys and a reload
    change no verdict and the episode is scored, with no infrastructure error (docs/security.md)."""
    script = [Key(keys=("ctrl", "l")), TypeText(text="javascript:document.querySelectorAll('button')"
                                                 ".forEach(b=>b.click());void 0"), Key(keys=("enter",)),
              Key(keys=("ctrl", "l")), TypeText(text="chrome://version"), Key(keys=("enter",)),
              Key(keys=("alt", "left")), Key(keys=("f5",)), Done()]
    [record] = await EpisodeRunner(ScriptedAgent(script), QUIET, envs=docker_envs).run(
        episode_specs(["fsm:shop/add_lamp"], 1, seed=5))
    assert (record.error, record.success, record.steps) == (None, False, len(script))
    assert record.reward <= 0.0
    assert all(s.verdict is not None and not s.verdict["transition_fired"] for s in record.trajectory)


def test_provider_arguments_are_checked() -> None:
    config = parse_config("cpus=0.5,memory=512m,containers=3")
    assert (config.cpus, config.memory, config.containers) == (0.5, "512m", 3)
    with pytest.raises(ConfigError, match="key=value"):
        parse_config("cpus")
    with pytest.raises(ConfigError, match="memry"):
        parse_config("memry=1g")


async def _exec(container, script: str, shell: tuple[str, ...] | list[str] = ("bash", "-c")) -> str:
    _, out = await asyncio.to_thread(container.exec_run, [*shell, script])
    return out.decode()


def _host_address() -> str:
    """This machine's address on its default route (no packet is sent)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))
        return probe.getsockname()[0]
    finally:
        probe.close()


async def test_a_container_that_cannot_start_is_removed_and_says_why(engine) -> None:
    envs = DockerEnvs(parse_config(f"image={engine['CUA_BASE_IMAGE']},start_timeout_s=20"))
    with pytest.raises((InfrastructureError, ConfigError), match="env-server|exit code"):
        await envs.start()  # the base image has no `cua`: nothing to run
    base = await asyncio.to_thread(envs.client.images.get, engine["CUA_BASE_IMAGE"])
    mine = await asyncio.to_thread(envs.client.containers.list, all=True,
                                   filters={"label": f"cua.owner-pid={os.getpid()}"})
    assert [c.short_id for c in mine if c.attrs["Image"].removeprefix("sha256:") ==
            base.id.removeprefix("sha256:")] == []
