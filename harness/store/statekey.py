"""State keys: what makes two steps land on the same node."""

from __future__ import annotations

import io
from typing import Protocol


class _HasScreenshot(Protocol):
    @property
    def screenshot(self) -> bytes: ...

    @property
    def url(self) -> str | None: ...


def state_key_for(obs: _HasScreenshot, fsm_state: str | None = None) -> str:
    """``fsm:<state key>`` where the env knows its FSM state, otherwise
    ``phash:<64-bit perceptual hash>|<url>``: robust to re-encoding and blinking carets,
    while the URL keeps look-alike pages on different routes apart (empty where the
    sandbox has no URL, e.g. a desktop)."""
    if fsm_state is not None:
        return f"fsm:{fsm_state}"
    import imagehash
    from PIL import Image

    image = Image.open(io.BytesIO(obs.screenshot))
    return f"phash:{imagehash.phash(image)}|{obs.url or ''}"
