"""Origins (scheme://host:port) and the confinement rule of an episode."""

from __future__ import annotations

from urllib.parse import urlsplit

from harness.errors import ConfigError

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
