"""Origins (scheme://host:port) and the confinement rule of an episode."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from sandboxes.errors import ConfigError

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}

#: Schemes that never leave the browser; always allowed.
LOCAL_SCHEMES = frozenset({"about", "data", "blob", "javascript"})


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s)/ws(s) URL with the default port spelled out,
    ``file://`` for every local file (they share one pseudo-origin), None for URLs
    without an origin (about:, data:, ...)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "file":
        return "file://"
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    try:
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        return None
    host = parts.hostname.lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def normalize_origins(origins: tuple[str, ...] | list[str], start_url: str) -> frozenset[str]:
    """The episode's allowed origins: ``origins`` normalized, plus the start URL's origin."""
    allowed = set()
    for origin in origins:
        normalized = origin_of(origin)
        if normalized is None or (
            normalized != "file://" and urlsplit(origin).path not in ("", "/")
        ):
            raise ConfigError(
                "expected allowed_origins entries like 'http://127.0.0.1:8000' or 'file://', "
                f"got {origin!r}"
            )
        allowed.add(normalized)
    start = origin_of(start_url)
    if start is not None:
        allowed.add(start)
    return frozenset(allowed)


def is_allowed(url: str, allowed: frozenset[str]) -> bool:
    """True when ``url`` stays inside ``allowed`` (or never touches the network)."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in LOCAL_SCHEMES:
        return True
    origin = origin_of(url)
    return origin is not None and origin in allowed


def _parts(origin: str) -> tuple[str, str, str, bool]:
    """(scheme, host, port, port is the scheme's default) of a normalized http(s) origin."""
    scheme, _, authority = origin.partition("://")
    host, _, port = authority.rpartition(":")
    return scheme, host, port, port.isdigit() and _DEFAULT_PORTS.get(scheme) == int(port)


def web_origin(origin: str) -> str:
    """A normalized origin as browsers write it: the default port left out."""
    scheme, host, _, default = _parts(origin)
    return f"{scheme}://{host}" if default else origin


def outside_pattern(allowed: frozenset[str]) -> re.Pattern[str]:
    """A regex that matches every URL ``is_allowed`` refuses (and maybe a few it allows).

    Routing only the URLs it matches keeps the episode's own requests off the Python
    round trip of Playwright's interception; the route handler still decides with
    ``is_allowed``. A URL escapes the pattern only by starting with a local scheme or
    with an allowed origin followed by ``/`` (so ``http://host:port@elsewhere/`` does not).
    """
    kept = [r"(?:about|data|blob|javascript):"]
    for origin in sorted(allowed):
        if origin == "file://":
            kept.append("file:")
            continue
        scheme, host, port, default = _parts(origin)
        port_re = f"(?::{port})?" if default else f":{port}"
        kept.append(f"{re.escape(scheme)}://{re.escape(host)}{port_re}/")
    return re.compile(f"^(?!{'|'.join(kept)})", re.IGNORECASE)
