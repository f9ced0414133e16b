"""Load a Qwen-VL policy (model + image-only processor + tokenizer) from a local directory.

    policy = load_policy(PolicyConfig(path="runs/tiny"))                       # inference
    policy = load_policy(PolicyConfig(path="/models/Qwen2.5-VL-3B-Instruct", finetune="lora",
                                      gradient_checkpointing=True))            # LoRA training
    policy.model, policy.processor, policy.tokenizer
    policy.save("runs/sft/checkpoint-100")

Supports Qwen2-VL, Qwen2.5-VL and Qwen3-VL checkpoints (the hub's, or ``cua model init``'s)
and LoRA adapter directories (``adapter_config.json``; the base model is the one the
adapter names). ``dtype="auto"`` is bfloat16 on a GPU that has it, else float32;
``device="auto"`` is the first GPU, else the CPU. ``finetune`` says what trains: nothing
(inference: eval mode, no gradients), LoRA adapters through peft (on the language model's
attention and MLP projections; the vision tower too with ``lora.vision``), or every weight
(``full``; the vision tower stays frozen unless ``freeze_vision=False``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from sandboxes.extras import require_extra
from trainers.errors import MissingExtraError, ModelDirError

#: The language model's projections (Qwen2/2.5/3-VL name them alike).
LANGUAGE_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoraOptions(BaseModel):
    """LoRA adapters (peft) for ``finetune="lora"``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    r: int = Field(default=16, ge=1, description="adapter rank")
    alpha: int = Field(default=32, ge=1, description="scaling numerator (scale = alpha / r)")
    dropout: float = Field(default=0.05, ge=0.0, lt=1.0, description="dropout on the adapter input")
    modules: tuple[str, ...] = Field(default=LANGUAGE_PROJECTIONS,
                                     description="projection names adapted in the language model")
    vision: bool = Field(default=False, description="also adapt the vision tower's attention and MLP")


class PolicyConfig(BaseModel):
    """Where a policy comes from and how it is set up for generation or training."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: Path = Field(description="checkpoint directory (config.json, weights, tokenizer, "
                       "processor config) or a LoRA adapter directory")
    device: str = Field(default="auto", description="'auto' (first GPU, else CPU), 'cpu', 'cuda', 'cuda:1', ...")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto", description="weight dtype; auto: bfloat16 on a GPU that has it, else float32")
    attn_implementation: Literal["sdpa", "eager", "flash_attention_2"] | None = Field(
        default=None, description="attention kernel; None: transformers' default (sdpa)")
    finetune: Literal["none", "lora", "full"] = Field(
        default="none", description="what trains: none (inference), lora (adapters), full (every weight)")
    lora: LoraOptions = Field(default_factory=LoraOptions, description="adapter settings for finetune=lora")
    freeze_vision: bool = Field(default=True, description="keep the vision tower frozen under finetune=full")
    gradient_checkpointing: bool = Field(default=False, description="recompute activations in the "
                                         "backward pass (less memory, about 30% slower)")
    min_pixels: int | None = Field(default=None, ge=1, description="fewest pixels a screenshot is "
                                   "resized to; None: the checkpoint's")
    max_pixels: int | None = Field(default=None, ge=1, description="most pixels a screenshot is resized "
                                   "to (fewer image tokens); None: the checkpoint's")
    pointer_head: bool = Field(default=False, description="attach a pointer head (trainers.models.pointer): "
                               "the reply's first state scores the screenshot's tokens; loaded from "
                               "pointer_head.safetensors when the directory has one")


@runtime_checkable
class AdaptedModel(Protocol):
    """A model wrapped with adapters (peft's ``PeftModel``, under ``finetune: lora``): its base
    model is the transformers model, whose layers carry the adapters."""

    def get_base_model(self) -> Any:
        """The wrapped transformers model."""


@dataclass
class Policy:
    """A loaded policy: the model (a peft model under LoRA), its processor and tokenizer."""

    model: Any
    processor: Any
    config: PolicyConfig
    kind: str  # the checkpoint's model_type: qwen2_vl, qwen2_5_vl or qwen3_vl
    pointer: Any = None  # a trainers.models.pointer.PointerHead with pointer_head=True

    @property
    def tokenizer(self) -> Any:
        return self.processor.tokenizer

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> Any:
        return next(self.model.parameters()).dtype

    def parameters(self) -> list[Any]:
        """Every parameter that trains: the model's and the pointer head's."""
        head = list(self.pointer.parameters()) if self.pointer is not None else []
        return [p for p in [*self.model.parameters(), *head] if p.requires_grad]

    def trainable_parameters(self) -> int:
        """How many parameters receive gradients (the pointer head's included)."""
        return sum(p.numel() for p in self.parameters())

    def save(self, path: str | Path, *, state_dict: dict[str, Any] | None = None) -> Path:
        """Write the weights (the adapter alone under LoRA), the pointer head if any, and the
        processor to ``path``. ``state_dict``: the model's full weights when its parameters
        are sharded (FSDP; ``trainers.grpo.fsdp.full_state``)."""
        from trainers.models.processor import save_processor

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(path, **({"state_dict": state_dict} if state_dict is not None else {}))
        save_processor(self.processor, path, self.kind)
        if self.pointer is not None:
            from trainers.models.pointer import save_pointer_head

            save_pointer_head(self.pointer, path)
        return path


def resolve_device(device: str) -> Any:
    """``auto`` -> the first CUDA device if there is one, else the CPU."""
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as exc:
        raise ModelDirError(f"device: expected 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}") from exc
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ModelDirError(f"device: expected a usable device, got {device!r} but CUDA is not "
                            "available here; use device=cpu or auto")
    return resolved


def resolve_dtype(dtype: str, device: Any) -> Any:
    """``auto`` -> bfloat16 on a GPU that supports it, else float32."""
    import torch

    if dtype == "auto":
        cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
        return torch.bfloat16 if cuda_bf16 else torch.float32
    return getattr(torch, dtype)


def load_policy(config: PolicyConfig) -> Policy:
    """The policy ``config`` names, on its device, set up for ``config.finetune``."""
    require_train_extra()
    from transformers import AutoModelForImageTextToText

    from trainers.models.processor import load_processor, model_type

    path = Path(config.path)
    adapter = path / "adapter_config.json"
    if adapter.is_file() and config.finetune == "full":
        raise ModelDirError(f"finetune: expected none or lora for the adapter directory {path}, got "
                            "full; merge the adapter into its base first, or train it with lora")
    base = _adapter_base(path) if adapter.is_file() else path
    kind = model_type(base)
    device = resolve_device(config.device)
    dtype = resolve_dtype(config.dtype, device)
    extra = {"attn_implementation": config.attn_implementation} if config.attn_implementation else {}
    model = AutoModelForImageTextToText.from_pretrained(base, dtype=dtype, **extra).to(device)
    processor_dir = path if _has_processor(path) else base
    processor = load_processor(processor_dir, min_pixels=config.min_pixels, max_pixels=config.max_pixels)
    if adapter.is_file():
        model = _load_adapter(model, path, trainable=config.finetune == "lora")
        return _prepare(model, processor, kind, config, add_adapter=False)
    return _prepare(model, processor, kind, config, add_adapter=True)


def prepare_policy(model: Any, processor: Any, kind: str, config: PolicyConfig) -> Policy:
    """A policy around a model built in memory (``trainers.models.real_shapes``), set up for
    ``config.finetune`` as ``load_policy`` sets up a loaded one: adapters, what trains,
    checkpointing, the pointer head (``config.path`` is where a pointer head would load from)."""
    return _prepare(model, processor, kind, config, add_adapter=True)


def _prepare(model: Any, processor: Any, kind: str, config: PolicyConfig, *, add_adapter: bool) -> Policy:
    path = Path(config.path)
    if add_adapter and config.finetune == "lora":
        model = _add_adapter(model, config.lora)
    _set_trainable(model, config)
    if config.gradient_checkpointing:
        _enable_checkpointing(model)
    pointer = None
    if config.pointer_head:
        from trainers.models.pointer import make_pointer_head

        pointer = make_pointer_head(model, path).to(next(model.parameters()).device)
        pointer.train(config.finetune != "none").requires_grad_(config.finetune != "none")
    return Policy(model=model, processor=processor, config=config, kind=kind, pointer=pointer)


def require_train_extra() -> None:
    """A ``MissingExtraError`` naming the train extra unless torch and transformers are there."""
    require_extra("train", "loading a policy (torch and transformers)")


def _enable_checkpointing(model: Any) -> None:
    """Activation checkpointing under its transformers>=5.23 name, else the older one."""
    kwargs = {"use_reentrant": False}  # works with frozen inputs (LoRA) without extra hooks
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.config.use_cache = False


def _has_processor(path: Path) -> bool:
    return (path / "tokenizer_config.json").is_file() and (path / "config.json").is_file()


def checkpoint_base(path: Path) -> Path:
    """The full checkpoint behind ``path``: itself, or a LoRA adapter directory's base model."""
    return _adapter_base(path) if (path / "adapter_config.json").is_file() else path


def _adapter_base(path: Path) -> Path:
    data = json.loads((path / "adapter_config.json").read_text(encoding="utf-8"))
    base = data.get("base_model_name_or_path")
    if not base:
        raise ModelDirError(f"expected base_model_name_or_path in {path / 'adapter_config.json'}, got none")
    candidate = Path(base) if Path(base).is_absolute() else (path / base)
    for option in (candidate, Path(base)):
        if (option / "config.json").is_file():
            return option
    raise ModelDirError(f"expected the adapter's base model {base!r} as a local directory, found none "
                        f"(looked at {candidate} and {base}); nothing is downloaded: put it there")


def _peft() -> Any:
    try:
        import peft
    except ImportError as exc:
        raise MissingExtraError("finetune=lora needs peft: install the train extra "
                                "(pip install 'cua-harness[train]')") from exc
    return peft


def _lora_target(options: LoraOptions) -> str:
    names = "|".join(options.modules)
    language = rf".*language_model.*\.({names})"
    if not options.vision:
        return language
    return rf"({language})|(.*visual\.blocks.*\.(qkv|proj|fc1|fc2|gate_proj|up_proj|down_proj|linear_fc1|linear_fc2))"


def _add_adapter(model: Any, options: LoraOptions) -> Any:
    peft = _peft()
    config = peft.LoraConfig(r=options.r, lora_alpha=options.alpha, lora_dropout=options.dropout,
                             target_modules=_lora_target(options), task_type="CAUSAL_LM")
    return peft.get_peft_model(model, config)


def _load_adapter(model: Any, path: Path, *, trainable: bool) -> Any:
    return _peft().PeftModel.from_pretrained(model, path, is_trainable=trainable)


def _set_trainable(model: Any, config: PolicyConfig) -> None:
    if config.finetune == "none":
        model.eval()
        model.requires_grad_(False)
        return
    if config.finetune == "full":
        model.requires_grad_(True)
        if config.freeze_vision:
            for name, param in model.named_parameters():
                if ".visual." in f".{name}":
                    param.requires_grad_(False)
    model.train()
