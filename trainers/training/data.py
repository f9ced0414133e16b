"""Training rows from the store's exports, and the collators that turn them into tensors.

The rows are the store's own SFT / DPO export (``harness.store.export``, what ``cua store
export`` writes), rendered by the one prompt builder and written to ``OUT/data/``; training
reads that file back. The collators encode a batch with ``trainers.models.inputs`` — the
code the ``hf:`` agent uses to build its prompt tokens — so the tokens a step is trained on
are the prompt tokens the agent feeds the model at that step followed by the target's tokens
(``completion_ids``: the action text and ``<|im_end|>``); the labels mask everything else.
TRL's own collators render prompt + reply through the chat template, which also trains the
newline after ``<|im_end|>`` that generation never produces; docs/training.md says why we
bring our own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from harness.errors import StoreError
from harness.prompts import Message, Prompt, PromptConfig
from harness.store.export import ExportConfig, export
from harness.store.store import TrajectoryStore
from trainers.errors import TrainingDataError
from trainers.models.inputs import PolicyParts, completion_ids, encode_completions
from trainers.training.augment import Augment

if TYPE_CHECKING:
    from datasets import Dataset

    from harness.store.export import ExportFormat, StepSelection


@dataclass(frozen=True)
class SFTExample:
    """One SFT row: the prompt the agent sees at a step and the action to answer with."""

    id: str
    prompt: Prompt[bytes]
    target: str


@dataclass(frozen=True)
class PreferenceExample:
    """One DPO row: a prompt, the preferred action (on a shortest path) and a dispreferred one."""

    id: str
    prompt: Prompt[bytes]
    chosen: str
    rejected: str


def export_rows(store_dir: Path, fmt: ExportFormat, out_dir: Path, prompt: PromptConfig,
                steps: StepSelection = "advancing") -> Path:
    """Write the store's ``fmt`` export (Parquet) under ``out_dir``; a lost screenshot is a
    ``TrainingDataError`` that says what to do."""
    store = TrajectoryStore(store_dir, read_only=True)
    try:
        return export(store, fmt, out_dir, ExportConfig(**prompt.model_dump(), steps=steps))
    except StoreError as exc:
        if "expected blob" not in str(exc):
            raise
        raise TrainingDataError(
            f"expected every screenshot of the {fmt} export of {store_dir}, got a missing image: "
            f"{exc}; re-collect the store, or train in observation: elements (no images)") from None
    finally:
        store.close()


def read_export(path: Path) -> list[dict[str, Any]]:
    """The rows of an export file as Python values (images as their bytes), in file order."""
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        for key in ("prompt", "chosen", "rejected", "messages"):
            if key in row:
                row[key] = [_message(m) for m in row[key]]
        row["images"] = [image["bytes"] for image in row["images"]]
    return rows


def _message(message: dict[str, Any]) -> Message:
    """A message as the prompt builder made it (Arrow gives image parts a ``text: None``)."""
    parts = [{"type": "image"} if p["type"] == "image" else {"type": p["type"], "text": p["text"]}
             for p in message["content"]]
    return {"role": message["role"], "content": parts}


def _prompt(row: dict[str, Any]) -> Prompt[bytes]:
    return Prompt(row["prompt"], list(row["images"]), list(range(len(row["images"]))))


def _text(messages: list[Message]) -> str:
    return "".join(p["text"] for m in messages for p in m["content"] if p["type"] == "text")


def sft_examples(rows: Sequence[dict[str, Any]], source: Path) -> list[SFTExample]:
    """SFT examples from export rows; an empty export is a ``TrainingDataError``."""
    if not rows:
        raise TrainingDataError(
            f"expected SFT rows in {source}, got an empty export (no step of the store was verified "
            "to advance toward a goal); collect oracle episodes into the store first (cua eval "
            "--agent oracle --store DIR --elements) or set collect: in the config")
    return [SFTExample(row["id"], _prompt(row), row["target"]) for row in rows]


def preference_examples(rows: Sequence[dict[str, Any]], source: Path) -> list[PreferenceExample]:
    """DPO examples from export rows, leaving out pairs whose two replies read the same (two
    clicks on one element); none left is a ``TrainingDataError``."""
    pairs = [PreferenceExample(row["id"], _prompt(row), _text(row["chosen"]), _text(row["rejected"]))
             for row in rows]
    pairs = [p for p in pairs if p.chosen != p.rejected]
    if not pairs:
        raise TrainingDataError(
            f"expected DPO pairs in {source}, got {'none' if not rows else 'only pairs whose two replies are the same'} "
            "(a pair needs a node with an on-path and an off-path child); grow trees into the store "
            "first (cua collect --agent oracle --explore tree --candidates 3) or set collect: "
            "{explore: tree} in the config")
    return pairs


def as_dataset(examples: Sequence[SFTExample | PreferenceExample]) -> Dataset:
    """A ``datasets.Dataset`` of the examples (TRL's input). It carries an ``images`` column,
    which tells TRL to leave tokenization to the collator (as for every vision dataset)."""
    from datasets import Dataset

    columns: dict[str, list[Any]] = {
        "id": [e.id for e in examples],
        "images": [list(e.prompt.images) for e in examples],
        "prompt": [json.dumps(e.prompt.messages) for e in examples],
    }
    if examples and isinstance(examples[0], PreferenceExample):
        columns["chosen"] = [e.chosen for e in examples]  # type: ignore[union-attr]
        columns["rejected"] = [e.rejected for e in examples]  # type: ignore[union-attr]
    else:
        columns["target"] = [e.target for e in examples]  # type: ignore[union-attr]
    return Dataset.from_dict(columns)


def _feature_prompt(feature: dict[str, Any]) -> Prompt[bytes]:
    images = list(feature["images"])
    return Prompt(json.loads(feature["prompt"]), images, list(range(len(images))))


def _renamed(features: list[dict[str, Any]], rename: Augment | None,
             *keys: str) -> tuple[list[Prompt[bytes]], list[list[str]]]:
    """Each feature's prompt and its ``keys`` replies, augmented as one where ``rename`` is set
    (label renaming, list shuffling: ``trainers.training.augment``)."""
    prompts = [_feature_prompt(f) for f in features]
    replies = [[f[k] for k in keys] for f in features]
    if rename is None:
        return prompts, replies
    out = [rename(p.messages, *r) for p, r in zip(prompts, replies, strict=True)]
    return ([Prompt(m, p.images, p.image_steps) for p, (m, _) in zip(prompts, out, strict=True)],
            [r for _, r in out])


class SFTCollator:
    """Batches for SFT: prompt tokens as the agent encodes them, then the target's tokens;
    labels are the target's tokens, -100 elsewhere. With ``rename`` each row is augmented
    afresh (its labels renamed, its list shuffled: ``trainers.training.augment``)."""

    def __init__(self, policy: PolicyParts, rename: Augment | None = None) -> None:
        self.policy = policy
        self.rename = rename

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        prompts, replies = _renamed(features, self.rename, "target")
        targets = [completion_ids(self.policy, target) for (target,) in replies]
        encoded = encode_completions(self.policy, prompts, targets)
        inputs = dict(encoded.inputs)
        inputs["labels"] = inputs["input_ids"].masked_fill(~encoded.completion_mask, -100)
        return inputs


class PreferenceCollator:
    """Batches for TRL's DPOTrainer: every prompt with its chosen reply, then every prompt
    with its rejected reply, and the mask of the reply tokens (labels renamed as in
    ``SFTCollator``, the same renaming for a pair's prompt and both replies)."""

    def __init__(self, policy: PolicyParts, rename: Augment | None = None) -> None:
        self.policy = policy
        self.rename = rename

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, Any]:
        prompts, replies = _renamed(features, self.rename, "chosen", "rejected")
        chosen = [completion_ids(self.policy, c) for c, _ in replies]
        rejected = [completion_ids(self.policy, r) for _, r in replies]
        encoded = encode_completions(self.policy, prompts + prompts, chosen + rejected)
        return {**encoded.inputs, "completion_mask": encoded.completion_mask.long()}
