"""Training data straight from the tree: SFT paths, DPO branch pairs, GRPO step groups.

Rows are written as Hugging Face ``datasets``-compatible Parquet (images embedded as
``{"bytes", "path"}`` structs with the ``huggingface`` schema metadata, so
``datasets.Dataset.from_parquet`` decodes them to PIL images) or as JSONL with the
images as files under ``images/``. The DPO layout is TRL's vision preference format:
``images`` + conversational ``prompt`` / ``chosen`` / ``rejected``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.errors import StoreError
from harness.store.index import TreeIndex
from harness.store.models import Node
from harness.store.store import TrajectoryStore

if TYPE_CHECKING:
    import pyarrow as pa

ExportFormat = Literal["sft", "dpo", "grpo"]
Encoder = Callable[[dict, tuple[int, int]], str]


class ExportConfig(BaseModel):
    """How to render examples: the action codec and how much context each example carries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    codec: str = Field(default="qwen", description="a harness.codecs name, or 'canonical' for "
                       "the stored action JSON (sorted keys, no spaces)")
    history_images: int = Field(default=3, ge=1, description="the last k screenshots per example")
    jsonl: bool = Field(default=False, description="JSONL + image files instead of Parquet")


def action_encoder(codec: str) -> Encoder:
    """Action dict + screenshot size -> target text in the chosen codec."""
    if codec == "canonical":
        return lambda action, size: json.dumps(action, sort_keys=True, separators=(",", ":"))
    from harness.actions import parse_action
    from harness.codecs import get_codec

    chosen = get_codec(codec)
    return lambda action, size: chosen.encode(parse_action(action), size=size)


class _Context:
    """Builds the shared context (instruction, last k screenshots, action history) of a node."""

    def __init__(self, store: TrajectoryStore, index: TreeIndex, config: ExportConfig) -> None:
        self.store, self.index, self.config = store, index, config
        self.encode = action_encoder(config.codec)
        self._instructions: dict[str, str] = {}

    def action_text(self, node: Node) -> str:
        assert node.action is not None
        return self.encode(node.action, (node.width, node.height))

    def instruction(self, node_id: int) -> tuple[str | None, str]:
        """(task id, instruction) of the first successful episode below a node, else the first one."""
        episode = self.index.task_episode_below[node_id]
        if episode is None or episode.task_id is None:
            return None, ""
        if episode.task_id not in self._instructions:
            try:
                self._instructions[episode.task_id] = self.store.task(episode.task_id).instruction
            except StoreError:
                self._instructions[episode.task_id] = ""
        return episode.task_id, self._instructions[episode.task_id]

    def at(self, node_id: int, instruction: str) -> dict:
        """Images and prompt messages for acting at ``node_id``."""
        path = self.index.path(node_id)
        history = [self.action_text(n) for n in path[1:]]
        shots = [n.obs_blob for n in path if n.obs_blob][-self.config.history_images:]
        lines = "\n".join(f"{i + 1}. {a}" for i, a in enumerate(history)) or "(none)"
        text = f"Instruction: {instruction}\nPrevious actions:\n{lines}\nNext action:"
        content = [{"type": "image", "text": None} for _ in shots]
        content.append({"type": "text", "text": text})
        return {"images": list(shots), "history": history,
                "prompt": [{"role": "user", "content": content}]}


def _assistant(text: str) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def sft_rows(store: TrajectoryStore, config: ExportConfig) -> Iterator[dict]:
    """One example per step of each successful root-to-leaf path (deduplicated per task)."""
    for tree in store.trees():
        index = TreeIndex.load(store, tree.id)
        ctx = _Context(store, index, config)
        seen: set[tuple[int, str | None]] = set()
        for episode in index.episodes:
            if not episode.success or (episode.leaf_id, episode.task_id) in seen:
                continue
            seen.add((episode.leaf_id, episode.task_id))
            instruction = store.task(episode.task_id).instruction if episode.task_id else ""
            path = index.path(episode.leaf_id)
            for step, (here, child) in enumerate(zip(path, path[1:], strict=False)):
                context = ctx.at(here.id, instruction)
                target = ctx.action_text(child)
                yield {"id": f"{episode.id}:{step}", "tree_id": tree.id, "episode_id": episode.id,
                       "task_id": episode.task_id, "node_id": here.id, "step": step,
                       "instruction": instruction, "images": context["images"],
                       "history": context["history"], "target": target,
                       "messages": context["prompt"] + _assistant(target)}


def _preferred(index: TreeIndex, node: Node) -> bool:
    on_path = node.on_shortest_path
    return on_path is True or (on_path is None and index.success_below[node.id])


def _dispreferred(index: TreeIndex, node: Node) -> bool:
    on_path = node.on_shortest_path
    if on_path is False:
        return True
    return on_path is None and index.failure_below[node.id] and not index.success_below[node.id]


def dpo_rows(store: TrajectoryStore, config: ExportConfig) -> Iterator[dict]:
    """At each branching node: every preferred child against every dispreferred sibling."""
    for tree in store.trees():
        index = TreeIndex.load(store, tree.id)
        ctx = _Context(store, index, config)
        for parent_id, kids in sorted(index.children.items()):
            if len(kids) < 2:
                continue
            nodes = [index.nodes[k] for k in kids]
            good = [n for n in nodes if _preferred(index, n)]
            bad = [n for n in nodes if _dispreferred(index, n)]
            for chosen in good:
                task_id, instruction = ctx.instruction(chosen.id)
                context = ctx.at(parent_id, instruction)
                for rejected in bad:
                    yield {"id": f"{parent_id}:{chosen.id}>{rejected.id}", "tree_id": tree.id,
                           "node_id": parent_id, "chosen_node": chosen.id,
                           "rejected_node": rejected.id, "task_id": task_id,
                           "images": context["images"], "prompt": context["prompt"],
                           "chosen": _assistant(ctx.action_text(chosen)),
                           "rejected": _assistant(ctx.action_text(rejected))}


def grpo_rows(store: TrajectoryStore, config: ExportConfig) -> Iterator[dict]:
    """For each node with two or more explored children: the sibling actions and step rewards."""
    for tree in store.trees():
        index = TreeIndex.load(store, tree.id)
        ctx = _Context(store, index, config)
        for parent_id, kids in sorted(index.children.items()):
            if len(kids) < 2:
                continue
            task_id, instruction = ctx.instruction(parent_id)
            context = ctx.at(parent_id, instruction)
            nodes = [index.nodes[k] for k in kids]
            yield {"id": f"group:{parent_id}", "tree_id": tree.id, "node_id": parent_id,
                   "task_id": task_id, "images": context["images"], "prompt": context["prompt"],
                   "child_ids": [n.id for n in nodes],
                   "actions": [ctx.action_text(n) for n in nodes],
                   "rewards": [n.step_reward for n in nodes],
                   "success_below": [index.success_below[n.id] for n in nodes]}


ROW_BUILDERS: dict[str, Callable[[TrajectoryStore, ExportConfig], Iterator[dict]]] = {
    "sft": sft_rows, "dpo": dpo_rows, "grpo": grpo_rows,
}


#: rows per Parquet row group: bounds the image bytes held in memory at once
BATCH_ROWS = 256


def row_schema(fmt: ExportFormat) -> pa.Schema:
    """The Arrow columns of each format's rows, images as stored (before embedding)."""
    import pyarrow as pa

    text, int64 = pa.string(), pa.int64()
    part = pa.struct([("type", text), ("text", text)])
    messages = pa.list_(pa.struct([("role", text), ("content", pa.list_(part))]))
    images = pa.list_(pa.struct([("bytes", pa.binary()), ("path", text)]))
    columns = {
        "sft": [("id", text), ("tree_id", int64), ("episode_id", text), ("task_id", text),
                ("node_id", int64), ("step", int64), ("instruction", text), ("images", images),
                ("history", pa.list_(text)), ("target", text), ("messages", messages)],
        "dpo": [("id", text), ("tree_id", int64), ("node_id", int64), ("chosen_node", int64),
                ("rejected_node", int64), ("task_id", text), ("images", images),
                ("prompt", messages), ("chosen", messages), ("rejected", messages)],
        "grpo": [("id", text), ("tree_id", int64), ("node_id", int64), ("task_id", text),
                 ("images", images), ("prompt", messages), ("child_ids", pa.list_(int64)),
                 ("actions", pa.list_(text)), ("rewards", pa.list_(pa.float64())),
                 ("success_below", pa.list_(pa.bool_()))],
    }
    return pa.schema(columns[fmt])


def export(store: TrajectoryStore, fmt: ExportFormat, out: Path, config: ExportConfig) -> Path:
    """Write ``out/<fmt>.parquet`` (or ``out/<fmt>.jsonl`` + ``out/images/``); return the file."""
    if fmt not in ROW_BUILDERS:
        raise StoreError(f"expected --format sft, dpo or grpo, got {fmt!r}; pick one of those")
    out.mkdir(parents=True, exist_ok=True)
    rows = ROW_BUILDERS[fmt](store, config)
    if config.jsonl:
        return _write_jsonl(store, rows, out / f"{fmt}.jsonl")
    return _write_parquet(store, rows, row_schema(fmt), out / f"{fmt}.parquet")


def _image_name(store: TrajectoryStore, digest: str) -> str:
    return digest + store.blobs.path(digest).suffix


def _write_jsonl(store: TrajectoryStore, rows: Iterator[dict], target: Path) -> Path:
    images = target.parent / "images"
    images.mkdir(exist_ok=True)
    written: dict[str, str] = {}  # hash -> image path, for the images already copied
    with target.open("w") as handle:
        for row in rows:
            for digest in row["images"]:
                if digest not in written:
                    name = _image_name(store, digest)
                    (images / name).write_bytes(store.blob(digest))
                    written[digest] = f"images/{name}"
            handle.write(json.dumps({**row, "images": [written[d] for d in row["images"]]}) + "\n")
    return target


def _write_parquet(store: TrajectoryStore, rows: Iterator[dict], schema: pa.Schema, target: Path) -> Path:
    """Rows in batches of BATCH_ROWS, each image's bytes read once per batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Features, Image, List

    features = Features.from_arrow_schema(schema)
    features["images"] = List(Image())
    meta = {b"huggingface": json.dumps({"info": {"features": features.to_dict()}}).encode()}
    schema = features.arrow_schema
    schema = schema.with_metadata({**(schema.metadata or {}), **meta})
    with pq.ParquetWriter(target, schema) as writer:
        while batch := list(islice(rows, BATCH_ROWS)):
            embedded: dict[str, dict] = {}
            for digest in {d: None for row in batch for d in row["images"]}:
                embedded[digest] = {"bytes": store.blob(digest), "path": _image_name(store, digest)}
            batch = [{**row, "images": [embedded[d] for d in row["images"]]} for row in batch]
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return target
