"""Configuration of the browser sandbox: one pydantic model, every field described."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandboxes.errors import ConfigError

#: Fields that belong to the shared Chromium process, not to one sandbox's context.
HOST_FIELDS = frozenset({"executable_path", "headless", "extra_flags"})


class BrowserConfig(BaseModel):
    """How a ``BrowserHost`` launches Chromium and how its sandboxes behave."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executable_path: str | None = Field(
        default=None,
        description="Chromium binary; None finds one (see sandboxes.browser.chromium.find_chromium)",
    )
    headless: bool = Field(default=True, description="run Chromium without a window")
    extra_flags: tuple[str, ...] = Field(
        default=(), description="command-line flags added after sandboxes.browser.chromium.CHROMIUM_FLAGS"
    )
    viewport_width: int = Field(
        default=1024, ge=64, le=4096, description="viewport (and screenshot) width in CSS pixels"
    )
    viewport_height: int = Field(
        default=768, ge=64, le=4096, description="viewport (and screenshot) height in CSS pixels"
    )
    image_format: Literal["png", "jpeg"] = Field(
        default="png", description="screenshot encoding: lossless png or smaller jpeg"
    )
    fast_encoding: bool = Field(
        default=True,
        description="encode screenshots for speed (CDP optimizeForSpeed): the same pixels, "
        "about 10 ms less per PNG here, files about 1.5x larger",
    )
    jpeg_quality: int = Field(
        default=80, ge=1, le=100, description="JPEG quality 1-100 (ignored for png)"
    )
    action_timeout_s: float = Field(
        default=10.0, gt=0, description="limit for one action, screenshot or evaluate"
    )
    navigation_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="limit for reset's page load and for a navigation an action starts",
    )
    prepare_next: bool = Field(
        default=True,
        description="once two fresh resets in a row opened the same url, open the next "
        "episode's context and load url in it in the background, so that the next fresh reset "
        "to that url and origins only swaps contexts (each episode still gets a context no "
        "other episode used); costs one more context and renderer per sandbox meanwhile",
    )
    settle_ms: int = Field(
        default=0,
        ge=0,
        le=10_000,
        description="extra sleep after each action, for pages that animate before they settle",
    )

    def with_overrides(self, overrides: dict[str, object]) -> BrowserConfig:
        """A copy with per-sandbox ``overrides`` validated; host fields may not change."""
        host_keys = sorted(HOST_FIELDS & overrides.keys())
        if host_keys:
            raise ConfigError(
                f"expected per-sandbox settings, got host setting(s) {', '.join(host_keys)}; "
                "set them on the BrowserHost's BrowserConfig instead"
            )
        return load_browser_config({**self.model_dump(), **overrides})


def load_browser_config(data: dict[str, object]) -> BrowserConfig:
    """Validate ``data`` into a BrowserConfig, naming every bad field in one error."""
    try:
        return BrowserConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']} "
            f"(got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid BrowserConfig: {problems}") from exc
