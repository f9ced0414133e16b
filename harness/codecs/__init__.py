"""Action codecs: model text <-> :data:`harness.actions.Action`.

    codec = get_codec("uitars")                       # pixel coordinates
    codec = get_codec("qwen", coordinates="normalized")  # 0-1000 model coordinates
    action = codec.decode(model_text, size=(width, height))  # or ActionParseError
    target = codec.encode(action, size=(width, height))      # an SFT target
    system_prompt = codec.prompt()

Decoders parse (JSON or ``ast``); nothing a model writes is ever executed.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError

from harness.codecs.base import ActionCodec, CodecOptions, Size
from harness.codecs.json_codec import JsonCodec
from harness.codecs.pyautogui_calls import PyAutoGUICodec
from harness.codecs.qwen import QwenCodec
from harness.codecs.uitars import UITarsCodec
from harness.errors import ConfigError

_FACTORIES: dict[str, Callable[[CodecOptions], ActionCodec]] = {
    "qwen": QwenCodec,
    "uitars": UITarsCodec,
    "pyautogui": PyAutoGUICodec,
    "json": JsonCodec,
}
CODECS: tuple[str, ...] = tuple(_FACTORIES)


def get_codec(name: str, **options: object) -> ActionCodec:
    """The codec called ``name``; ``options`` are :class:`CodecOptions` fields."""
    if name not in _FACTORIES:
        raise ConfigError(
            f"codec: expected one of {', '.join(CODECS)}, got {name!r}; pick a listed codec"
        )
    try:
        parsed = CodecOptions(**options)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e.get('input')!r:.40})"
            for e in err.errors(include_url=False)
        )
        raise ConfigError(f"codec {name!r} options: {problems}") from None
    return _FACTORIES[name](parsed)


__all__ = [
    "CODECS", "ActionCodec", "CodecOptions", "JsonCodec", "PyAutoGUICodec", "QwenCodec",
    "Size", "UITarsCodec", "get_codec",
]
