"""Network namespaces for sandboxes: only loopback and a route to the run's service address.

Two pieces, both made with iproute2 and nftables (root, or CAP_NET_ADMIN):

- ``ServiceNetwork``: one address on the host (a /32 on the host's loopback interface,
  which needs no kernel module, unlike a dummy interface) where a run's servers listen (the FSM site server, the MiniWoB page server:
  ``TaskResources(bind_host=network.address)``). It is reachable from every namespace
  of the run, and from the host itself.
- ``NetNamespace``: one sandbox's network. Inside it: ``lo`` and one end of a veth pair
  with a /30 address, and a single route, to the service address through the veth's
  host end. There is no default route, so any other address is unreachable. An nftables
  table in the namespace accepts output to loopback and to the service address on the
  *granted* TCP ports only, and rejects the rest (a TCP reset, so a refused connection
  fails at once rather than timing out). Processes enter it with ``enter_prefix()``
  (``nsenter --net=...``); once they drop CAP_NET_ADMIN (bubblewrap's ``--cap-drop ALL``
  does) they cannot change the rules.

Addresses come from ``subnet`` (10.213.0.0/16 by default), chosen under a lock file so
that concurrent runs (other processes, Ray actors on one machine) never collide;
deleting the namespace deletes its veth pair and its rules with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import ipaddress
import os
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from sandboxes.errors import SandboxStartError
from sandboxes.isolation.owned import forget, remember

DEFAULT_SUBNET = "10.213.0.0/16"
#: A lock file that serialises address choices between processes on this machine.
LOCK_PATH = "/run/cua-netns.lock"
#: Names of our namespaces and interfaces start with this (tests and clean-up find them).
PREFIX = "cua"
NETNS_DIR = "/run/netns"


def _run(argv: list[str], stdin: str | None = None) -> str:
    """Run an iproute2 / nftables command; a failure raises ``SandboxStartError``."""
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30)
    except FileNotFoundError as exc:
        raise SandboxStartError(
            f"expected {argv[0]} on PATH for network isolation, got none; install iproute2 and "
            "nftables (`make setup`)") from exc
    if done.returncode != 0:
        raise SandboxStartError(
            f"expected `{' '.join(argv[:4])} ...` to succeed, got exit {done.returncode}: "
            f"{done.stderr.strip()[:300]}; network isolation needs root (CAP_NET_ADMIN)")
    return done.stdout


@contextlib.contextmanager
def _address_lock() -> Iterator[None]:
    os.makedirs(os.path.dirname(LOCK_PATH), exist_ok=True)
    with open(LOCK_PATH, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _host_addresses() -> list[ipaddress.IPv4Interface]:
    """Every IPv4 address (with its prefix) configured on this host's interfaces."""
    out = _run(["ip", "-o", "-4", "addr", "show"])
    return [ipaddress.IPv4Interface(line.split()[3]) for line in out.splitlines() if " inet " in line]


def _free_block(subnet: str, prefix: int) -> ipaddress.IPv4Network:
    """A block of ``subnet`` that overlaps no address on the host (call under the lock)."""
    used = [iface.network for iface in _host_addresses()]
    for block in ipaddress.IPv4Network(subnet).subnets(new_prefix=prefix):
        if not any(block.overlaps(net) for net in used):
            return block
    raise SandboxStartError(f"expected a free /{prefix} in {subnet}, got every one in use; "
                            "close other isolated runs or pick another IsolationConfig.subnet")


def _name(kind: str) -> str:
    return f"{PREFIX}{kind}{uuid.uuid4().hex[:8]}"  # at most 15 characters: an interface name


class ServiceNetwork:
    """The host-side address where a run's servers listen (see the module docstring)."""

    def __init__(self, subnet: str = DEFAULT_SUBNET) -> None:
        self.subnet = subnet
        self.address = ""

    def open(self) -> str:
        """Add the address to the host's loopback; return it."""
        with _address_lock():
            block = _free_block(self.subnet, 30)
            address = str(block.network_address + 1)
            remember("address", address)
            _run(["ip", "addr", "add", f"{address}/32", "dev", "lo"])
        self.address = address
        return address

    def close(self) -> None:
        """Remove the address. Idempotent."""
        if self.address:
            done = subprocess.run(["ip", "addr", "del", f"{self.address}/32", "dev", "lo"],
                                  capture_output=True)
            if done.returncode == 0:
                forget("address", self.address)
            self.address = ""


@dataclass
class NetNamespace:
    """One sandbox's network namespace (see the module docstring).

    ``service`` is the address it may reach; ``ports`` the TCP ports granted there.
    """

    service: str
    ports: set[int] = field(default_factory=set)
    subnet: str = DEFAULT_SUBNET
    name: str = field(default_factory=lambda: _name("ns"))
    host_address: str = ""
    inner_address: str = ""

    @property
    def path(self) -> str:
        """The namespace's file (what ``nsenter --net=`` takes)."""
        return f"{NETNS_DIR}/{self.name}"

    def open(self) -> None:
        """Create the namespace, its veth pair, its route and its rules."""
        host_if, inner_if = f"{self.name}h", f"{self.name}s"
        remember("namespace", self.name)
        _run(["ip", "netns", "add", self.name])
        try:
            with _address_lock():
                block = _free_block(self.subnet, 30)
                self.host_address = str(block.network_address + 1)
                self.inner_address = str(block.network_address + 2)
                _run(["ip", "-batch", "-"], stdin=(
                    f"link add {host_if} type veth peer name {inner_if} netns {self.name}\n"
                    f"addr add {self.host_address}/30 dev {host_if}\n"
                    f"link set {host_if} up\n"))
            _run(["ip", "-n", self.name, "-batch", "-"], stdin=(
                "link set lo up\n"
                f"addr add {self.inner_address}/30 dev {inner_if}\n"
                f"link set {inner_if} up\n"
                f"route add {self.service}/32 via {self.host_address}\n"))
            _run([*self.enter_prefix(), "nft", "-f", "-"], stdin=self.rules())
        except BaseException:
            self.close()
            raise

    def rules(self) -> str:
        """The namespace's nftables ruleset: loopback, and the granted ports of the service."""
        ports = ", ".join(str(p) for p in sorted(self.ports))
        elements = f"elements = {{ {ports} }}" if ports else ""
        return (
            "table inet cua {\n"
            f"  set granted {{ type inet_service; {elements} }}\n"
            "  chain output {\n"
            "    type filter hook output priority 0; policy drop;\n"
            '    oif "lo" accept\n'
            f"    ip daddr {self.service} tcp dport @granted accept\n"
            "    meta l4proto tcp reject with tcp reset\n"
            "    reject with icmpx type admin-prohibited\n"
            "  }\n"
            "}\n")

    def grant(self, ports: Iterable[int]) -> None:
        """Let the namespace reach more TCP ports of the service address."""
        new = set(ports) - self.ports
        if not new:
            return
        _run([*self.enter_prefix(), "nft", "add", "element", "inet", "cua", "granted",
              "{ " + ", ".join(str(p) for p in sorted(new)) + " }"])
        self.ports |= new

    def enter_prefix(self) -> list[str]:
        """The command prefix that runs a program inside the namespace."""
        return ["nsenter", f"--net={self.path}"]

    def close(self) -> None:
        """Delete the veth pair, then the namespace (its rules go with it). Idempotent.

        The pair is deleted first, and explicitly: a deleted namespace's veth pair is torn
        down later, by the kernel's namespace clean-up worker, so on a loaded machine its host
        end outlived ``close`` (and a leak check right after found it). Deleting one end
        deletes both, before ``ip`` returns. Processes still inside keep the namespace alive
        in the kernel; end them first."""
        host_if = f"{self.name}h"
        if os.path.exists(f"/sys/class/net/{host_if}"):
            subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        if os.path.exists(self.path):
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True)

    async def aopen(self) -> None:
        """``open`` on a worker thread (it runs a few short commands)."""
        await asyncio.to_thread(self.open)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)


def leftover_namespaces() -> list[str]:
    """Names of our network namespaces that still exist (for leak checks)."""
    try:
        return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(PREFIX))
    except FileNotFoundError:
        return []


def leftover_interfaces() -> list[str]:
    """Names of our veth host ends that still exist."""
    return sorted(n for n in os.listdir("/sys/class/net") if n.startswith(PREFIX))


def leftover_service_addresses(subnet: str = DEFAULT_SUBNET) -> list[str]:
    """Service addresses of ``subnet`` still on the host's loopback."""
    block = ipaddress.IPv4Network(subnet)
    return sorted(str(i.ip) for i in _host_addresses() if i.ip in block and i.network.prefixlen == 32)
