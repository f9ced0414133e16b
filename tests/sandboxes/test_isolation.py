"""Jails for sandboxes: real network namespaces, nftables, bubblewrap and cgroups (root).

Each probe runs a small Python program inside a jail and, as a control, the same program
outside it: what the jail blocks must be reachable from the host, so a failure inside
is the jail's doing and not a server that is not there.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading

import pytest
from aiohttp import web

from sandboxes import procs
from sandboxes.isolation.jail import Isolation, IsolationConfig
from sandboxes.isolation.netns import ServiceNetwork
from sandboxes.leftovers import leftovers
from tests.conftest import wait_until

PROBE = """
import json, os, resource, sys, urllib.request
results = {}
for name, url in json.loads(sys.argv[1]).items():
    try:
        with urllib.request.urlopen(url, timeout=3) as response:
            results[name] = "ok " + response.read().decode()
    except Exception as exc:
        reason = getattr(exc, "reason", exc)
        results[name] = type(reason).__name__ + " " + str(getattr(reason, "errno", ""))
def writable(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return True
    except OSError:
        return False
results["home"] = os.environ.get("HOME")
results["home_writable"] = writable(os.path.join(os.environ["HOME"], "probe"))
results["etc_writable"] = writable("/etc/cua-probe")
results["pid"] = os.getpid()
results["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
results["core"] = resource.getrlimit(resource.RLIMIT_CORE)[0]
results["cgroup"] = open("/proc/self/cgroup").read()
print(json.dumps(results))
"""


async def _server(host: str, body: str) -> tuple[web.AppRunner, int]:
    async def answer(_request: web.Request) -> web.Response:
        return web.Response(text=body)

    app = web.Application()
    app.router.add_get("/", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    return runner, runner.addresses[0][1]


def _host_ip() -> str:
    """An address of this host other than loopback (every machine here has one)."""
    out = subprocess.run(["ip", "-o", "-4", "addr", "show", "scope", "global"],
                         capture_output=True, text=True, check=True).stdout
    addresses = [line.split()[3].split("/")[0] for line in out.splitlines()
                 if line.split()[1] != "lo" and not line.split()[1].startswith("cua")]
    assert addresses, f"expected a global IPv4 address on this host, got none in {out!r}"
    return addresses[0]


async def _probe(argv_prefix: list[str], targets: dict[str, str], jail: Isolation | None) -> dict:
    argv = [*argv_prefix, sys.executable, "-c", PROBE, json.dumps(targets)]
    if jail is not None:
        proc = await jail.spawn(argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    else:
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


@pytest.fixture
async def service():
    network = ServiceNetwork()
    await asyncio.to_thread(network.open)
    yield network
    network.close()


async def test_jail_reaches_only_loopback_and_granted_ports(service: ServiceNetwork) -> None:
    granted, granted_port = await _server(service.address, "granted")
    other, other_port = await _server(service.address, "not granted")
    anywhere, anywhere_port = await _server("0.0.0.0", "anywhere")
    local, local_port = await _server("127.0.0.1", "host loopback")
    host_ip = _host_ip()
    targets = {
        "granted": f"http://{service.address}:{granted_port}/",
        "other_port": f"http://{service.address}:{other_port}/",
        "wildcard_on_service": f"http://{service.address}:{anywhere_port}/",
        "host_address": f"http://{host_ip}:{anywhere_port}/",
        "host_loopback": f"http://127.0.0.1:{local_port}/",
        "outside": "http://1.1.1.1:80/",
    }
    jail = Isolation(IsolationConfig(), service=service.address, ports={granted_port})
    await jail.open()
    try:
        outside_view = await _probe([], targets, None)
        inside = await _probe([], targets, jail)
    finally:
        await jail.close()
        for runner in (granted, other, anywhere, local):
            await runner.cleanup()
    # The control: from the host every server answers.
    for name in ("granted", "other_port", "wildcard_on_service", "host_address", "host_loopback"):
        assert outside_view[name].startswith("ok"), (name, outside_view[name])
    assert inside["granted"] == "ok granted"
    # A port of the service address that was not granted: reset by the namespace's rules.
    assert inside["other_port"].startswith("ConnectionRefusedError"), inside
    assert inside["wildcard_on_service"].startswith("ConnectionRefusedError"), inside
    # Anything but the service address has no route; the jail's loopback is its own.
    assert inside["host_address"] == "OSError 101", (host_ip, inside)  # ENETUNREACH
    assert inside["outside"] == "OSError 101", inside
    assert inside["host_loopback"].startswith("ConnectionRefusedError"), inside


async def test_jail_has_its_own_home_pid_namespace_and_limits(service: ServiceNetwork) -> None:
    jail = Isolation(IsolationConfig(max_open_files=1234), service=service.address)
    await jail.open()
    try:
        inside = await _probe([], {}, jail)
        home_on_host = jail.home
        cgroup_name = os.path.basename(jail.root)
        assert os.path.exists(os.path.join(home_on_host, "probe"))  # the jail's $HOME
    finally:
        await jail.close()
    assert inside["home"] == "/tmp/home" and inside["home_writable"] is True
    assert inside["etc_writable"] is False  # bubblewrap's read-only root
    assert inside["pid"] < 10  # its own PID namespace
    assert inside["nofile"] == 1234 and inside["core"] == 0
    assert cgroup_name in inside["cgroup"]
    assert not os.path.exists(home_on_host)


async def test_memory_limit_kills_a_jail_that_exceeds_it(service: ServiceNetwork) -> None:
    hog = "x = bytearray(300 * 2**20); x[::4096] = b'y' * len(x[::4096]); print('survived')"
    for limit, expect_killed in ((64, True), (None, False)):
        jail = Isolation(IsolationConfig(memory_limit_mb=limit), service=service.address)
        await jail.open()
        try:
            proc = await jail.spawn([sys.executable, "-c", hog], stdout=asyncio.subprocess.PIPE)
            out, _ = await asyncio.wait_for(proc.communicate(), 60)
        finally:
            await jail.close()
        assert (b"survived" not in out) is expect_killed, (limit, out, proc.returncode)


async def test_every_process_of_a_jail_ends_with_it(service: ServiceNetwork) -> None:
    before = leftovers()
    jail = Isolation(IsolationConfig(), service=service.address)
    await jail.open()
    # A child, and a daemon that double-forks into a session of its own.
    shell = "sleep 1000 & setsid sh -c 'sleep 1000 &' ; wait"
    proc = await jail.spawn(["sh", "-c", shell])
    assert await wait_until(lambda: len(jail.pids()) >= 4, timeout=10), jail.pids()
    pids = jail.pids()
    namespace, root, host_end = jail.network.path, jail.root, f"/sys/class/net/{jail.network.name}h"
    assert os.path.exists(host_end)
    await jail.close()
    # gone when close returns: not left to the kernel's namespace clean-up, which lags under load
    assert not os.path.exists(host_end)
    await asyncio.wait_for(proc.wait(), 10)
    assert await wait_until(lambda: not any(procs.is_alive(p) for p in pids), timeout=10)
    assert not os.path.exists(namespace) and not os.path.exists(root)
    after = leftovers()
    assert after.namespaces == before.namespaces and after.homes == before.homes
    assert after.cgroups == before.cgroups and after.interfaces == before.interfaces


async def test_jail_processes_end_when_its_launcher_dies(service: ServiceNetwork) -> None:
    """The owner of a sandbox can die without closing it (a killed driver): bubblewrap's
    --die-with-parent and the PID namespace still end everything inside."""
    jail = Isolation(IsolationConfig(), service=service.address)
    await jail.open()
    try:
        launcher = jail.write_launcher("/bin/sh", "sh")
        parent = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", f"{launcher} -c 'sleep 1000 & wait' & wait")
        assert await wait_until(lambda: len(jail.pids()) >= 3, timeout=10), jail.pids()
        inside = jail.pids()
        os.kill(parent.pid, signal.SIGKILL)  # the launcher's parent; bwrap's pdeathsig fires
        await parent.wait()
        assert await wait_until(lambda: not any(procs.is_alive(p) for p in inside), timeout=10), \
            [procs.read_proc(p) for p in inside]
    finally:
        await jail.close()


OTHER_RUN = """
import asyncio, json, sys
from sandboxes.isolation.jail import Isolation, IsolationConfig
async def main():
    jail = Isolation(IsolationConfig(), service=sys.argv[1])
    await jail.open()
    print(json.dumps({"home": jail.root, "namespace": jail.network.name}), flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    await jail.close()
asyncio.run(main())
"""


async def test_another_runs_live_jail_is_not_counted_as_ours(service: ServiceNetwork) -> None:
    """Leak checks count what this process made: another run's sandboxes on the same
    machine (another suite, another collector) are not ours, but ``everyone`` sees them."""
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OTHER_RUN, service.address, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, cwd=os.getcwd())
    assert other.stdin is not None and other.stdout is not None
    try:
        made = json.loads(await asyncio.wait_for(other.stdout.readline(), 60))
        ours, everyone = leftovers(), leftovers(everyone=True)
        assert made["home"] in everyone.homes and made["namespace"] in everyone.namespaces
        assert made["home"] not in ours.homes and made["namespace"] not in ours.namespaces
        assert not any(made["namespace"] in i for i in ours.interfaces)
        assert not any(made["home"].rsplit("/", 1)[1] in c for c in ours.cgroups)
    finally:
        other.stdin.write(b"\n")
        await other.stdin.drain()
        await asyncio.wait_for(other.wait(), 30)
    assert other.returncode == 0
    assert made["home"] not in leftovers(everyone=True).homes


async def test_a_cancelled_open_leaves_nothing(service: ServiceNetwork) -> None:
    """A jail's open runs on a thread that cannot be stopped: cancelled midway (a reset's
    timeout), it runs to its end and is undone, so nothing it made stays."""
    before = leftovers()
    jail = Isolation(IsolationConfig(), service=service.address)
    gate, make_network = threading.Event(), jail.network.open

    def gated() -> None:  # hold the thread between the home and the namespace
        gate.wait(30)
        make_network()

    jail.network.open = gated  # type: ignore[method-assign]
    opening = asyncio.ensure_future(jail.open())
    assert await wait_until(lambda: bool(jail.root), timeout=10)  # the thread is making it
    opening.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await opening
    after = leftovers()
    assert (after.namespaces, after.homes, after.cgroups) == (before.namespaces, before.homes, before.cgroups)
    assert not jail.root and not os.path.exists(jail.network.path)
