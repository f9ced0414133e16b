"""Configuration of the desktop sandbox: one pydantic model, every field described."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandboxes.errors import ConfigError


class DesktopConfig(BaseModel):
    """How a ``DesktopSandbox`` runs its X display and how it acts and captures."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    width: int = Field(default=1024, ge=64, le=4096, description="screen (and screenshot) width in pixels")
    height: int = Field(default=768, ge=64, le=4096, description="screen (and screenshot) height in pixels")
    window_manager: bool = Field(default=True, description="run openbox on the display")
    reset_mode: Literal["new_display", "same_display"] = Field(
        default="new_display",
        description="reset starts a new X server (new_display), or keeps it and ends every "
        "client on it (same_display); both give a fresh home directory",
    )
    image_format: Literal["png", "jpeg"] = Field(
        default="png", description="screenshot encoding: lossless png or smaller jpeg"
    )
    jpeg_quality: int = Field(default=80, ge=1, le=100, description="JPEG quality 1-100 (ignored for png)")
    settle_quiet_ms: int = Field(
        default=40, ge=0, le=5_000,
        description="after an action, wait until the screen has not changed for this long (0: don't)",
    )
    settle_timeout_s: float = Field(
        default=2.0, gt=0, description="the longest an action waits for the screen to settle"
    )
    start_timeout_s: float = Field(
        default=15.0, gt=0, description="limit for the X server, the window manager or an app to start"
    )
    action_timeout_s: float = Field(default=10.0, gt=0, description="limit for one action or screenshot")
    scroll_pixels_per_tick: int = Field(
        default=53, ge=1, le=1_000,
        description="wheel delta in pixels one wheel click stands for (Chromium's on X11)",
    )
    xvfb_path: str = Field(default="Xvfb", description="the X server binary (on PATH or a path)")

    def with_overrides(self, overrides: dict[str, object]) -> DesktopConfig:
        """A copy with ``overrides`` validated."""
        return load_desktop_config({**self.model_dump(), **overrides})


def load_desktop_config(data: dict[str, object]) -> DesktopConfig:
    """Validate ``data`` into a DesktopConfig, naming every bad field in one error."""
    try:
        return DesktopConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']} (got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid DesktopConfig: {problems}") from exc
