"""Image-only Qwen-VL processors: the stock ones, minus the video processor.

transformers' ``Qwen2_5_VLProcessor`` (and Qwen2-VL's, Qwen3-VL's) insists on a video
processor, and every video processor needs torchvision, which this project never installs
(the only build on offer is CUDA's, and it breaks transformers' image processors). A
screenshot policy never sees video, so the subclasses here declare only an image processor
and a tokenizer; everything else (chat template, ``<|image_pad|>`` expansion, the call) is
the stock class's own code. The image processor is the PIL one
(``Qwen2VLImageProcessorPil``), which needs no torchvision; the tests check that the
subclass gives the stock image processor's pixel values on real screenshots.

    processor = load_processor("runs/tiny", max_pixels=28 * 28 * 16)
    batch = processor(text=[text], images=[image], return_tensors="pt")

This is the one place that knows about the workaround: ``load_policy`` and the server use
``load_processor``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transformers import AutoTokenizer, Qwen2_5_VLProcessor, Qwen2VLProcessor, Qwen3VLProcessor
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

from trainers.errors import ModelDirError

#: The config file a processor's settings live in (transformers 5), and the older one.
PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")


class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
    """Qwen2-VL's processor without a video processor."""

    def __init__(self, image_processor: Any = None, tokenizer: Any = None,
                 chat_template: str | None = None, **kwargs: Any) -> None:
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


class ImageOnlyQwen2_5_VLProcessor(Qwen2_5_VLProcessor):  # noqa: N801 - the stock class's name
    """Qwen2.5-VL's processor without a video processor."""

    def __init__(self, image_processor: Any = None, tokenizer: Any = None,
                 chat_template: str | None = None, **kwargs: Any) -> None:
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


class ImageOnlyQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3-VL's processor without a video processor."""

    def __init__(self, image_processor: Any = None, tokenizer: Any = None,
                 chat_template: str | None = None, **kwargs: Any) -> None:
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


#: model_type -> (image-only processor, the stock processor class name saved in configs)
PROCESSORS: dict[str, tuple[type, str]] = {
    "qwen2_vl": (ImageOnlyQwen2VLProcessor, "Qwen2VLProcessor"),
    "qwen2_5_vl": (ImageOnlyQwen2_5_VLProcessor, "Qwen2_5_VLProcessor"),
    "qwen3_vl": (ImageOnlyQwen3VLProcessor, "Qwen3VLProcessor"),
}


def model_type(path: Path) -> str:
    """The ``model_type`` in ``path/config.json``; a clear error when it is missing or unknown."""
    config = Path(path) / "config.json"
    if not config.is_file():
        raise ModelDirError(f"expected a model directory with config.json, got {path}; "
                            "make one with `cua model init` or point at a downloaded checkpoint")
    kind = json.loads(config.read_text(encoding="utf-8")).get("model_type")
    if kind not in PROCESSORS:
        raise ModelDirError(f"expected a model_type in {sorted(PROCESSORS)} in {config}, got {kind!r}; "
                            "only Qwen2-VL, Qwen2.5-VL and Qwen3-VL checkpoints are supported")
    return kind


def image_processor_settings(path: Path) -> dict[str, Any]:
    """The image processor's saved settings (from processor_config.json, else preprocessor_config.json)."""
    for name in PROCESSOR_FILES:
        file = Path(path) / name
        if file.is_file():
            data = json.loads(file.read_text(encoding="utf-8"))
            return dict(data.get("image_processor", data))
    raise ModelDirError(f"expected {' or '.join(PROCESSOR_FILES)} in {path}, found neither; "
                        "the checkpoint's processor settings are missing")


def make_image_processor(settings: dict[str, Any], *, min_pixels: int | None = None,
                         max_pixels: int | None = None) -> Qwen2VLImageProcessorPil:
    """The PIL image processor from saved settings, with the pixel budget overridden if given."""
    kwargs = {k: v for k, v in settings.items()
              if k not in ("image_processor_type", "processor_class", "auto_map")}
    size = dict(kwargs.pop("size", None) or {})
    for key, legacy, value in (("shortest_edge", "min_pixels", min_pixels),
                               ("longest_edge", "max_pixels", max_pixels)):
        legacy_value = kwargs.pop(legacy, None)
        size[key] = value or legacy_value or size.get(key)
    if min_pixels and max_pixels and min_pixels > max_pixels:
        raise ModelDirError(f"expected min_pixels <= max_pixels, got {min_pixels} > {max_pixels}")
    return Qwen2VLImageProcessorPil(size={k: v for k, v in size.items() if v}, **kwargs)


def load_processor(path: str | Path, *, min_pixels: int | None = None,
                   max_pixels: int | None = None) -> Any:
    """The image-only processor of the checkpoint at ``path`` (its tokenizer and chat template)."""
    path = Path(path)
    cls, _ = PROCESSORS[model_type(path)]
    image_processor = make_image_processor(image_processor_settings(path), min_pixels=min_pixels,
                                           max_pixels=max_pixels)
    tokenizer = AutoTokenizer.from_pretrained(path)
    template = path / "chat_template.jinja"
    chat_template = template.read_text(encoding="utf-8") if template.is_file() else None
    if chat_template is None:
        chat_template = _legacy_template(path) or getattr(tokenizer, "chat_template", None)
    if not chat_template:
        raise ModelDirError(f"expected a chat template in {path} (chat_template.jinja, "
                            "chat_template.json or the tokenizer config), found none")
    return cls(image_processor, tokenizer, chat_template=chat_template)


def _legacy_template(path: Path) -> str | None:
    file = path / "chat_template.json"
    if file.is_file():
        return json.loads(file.read_text(encoding="utf-8")).get("chat_template")
    return None


def save_processor(processor: Any, path: str | Path, kind: str) -> None:
    """Save ``processor`` as a stock checkpoint would be: the stock class name in its config,
    so hub tools (and ``AutoProcessor`` where torchvision exists) read it as usual."""
    path = Path(path)
    processor.save_pretrained(path)
    for name in ("processor_config.json", "tokenizer_config.json"):
        config = path / name
        data = json.loads(config.read_text(encoding="utf-8"))
        data["processor_class"] = PROCESSORS[kind][1]
        config.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
