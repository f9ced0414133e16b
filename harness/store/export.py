"""Training data straight from the tree: SFT steps, DPO branch pairs, GRPO step groups.

Every row's prompt comes from the one prompt builder (``harness.prompts``), fed from the
tree path exactly as a model agent is fed from its episode: the instruction, every earlier
action as executed, the last ``history_images`` screenshots and the previous step's agent
error. So a model is trained on the prompts it will be evaluated on (tested byte for byte).
Every row carries the step verdicts (transition fired, on a shortest path, distance
before and after) of the actions it holds, as columns.

- **SFT**: by default the steps verified to advance toward the goal (a transition fired on
  a shortest path), one row per distinct (node, action, task), from any episode; steps
  without a verdict count when they lie on a successful episode's path. ``steps="all"``
  keeps every step of every successful path instead (no-ops included); ``steps="agent"``
  every step of a successful path the exploring agent chose itself (the explorer's
  off-path first steps left out; with the oracle, its preparatory steps such as typing,
  which fire no transition, included). A row is a
  ``recovery`` step when an earlier step of its path left the shortest paths (the env
  refused it, or its transition led off them: the target leads back toward the goal), and
  ``after_error`` when the step before it was refused (its prompt shows the env's error).
- **DPO**: at each branching node, every preferred child (on a shortest path, or, without
  verdicts, with a success below) against every dispreferred sibling.
- **GRPO**: for each node with two or more explored children, the sibling actions, their
  step rewards and verdicts.

Rows are written as Hugging Face ``datasets``-compatible Parquet (images embedded as
``{"bytes", "path"}`` structs with the ``huggingface`` schema metadata, so
``datasets.Dataset.from_parquet`` decodes them to PIL images) or as JSONL with the
images as files under ``images/``. The DPO layout is TRL's vision preference format:
``images`` + conversational ``prompt`` / ``chosen`` / ``rejected``; the SFT layout is
TRL's vision ``messages`` + ``images``. (In Parquet a message part is an Arrow struct, so
an image part reads back as ``{"type": "image", "text": None}``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from pydantic import Field

from harness.errors import StoreError
from harness.prompts import Message, PromptBuilder, PromptConfig
from harness.store.index import TreeIndex
from harness.store.models import FLAG_OFF_PATH, Node, StoredEpisode, Tree
from harness.store.store import TrajectoryStore
from sandboxes.extras import import_extra

if TYPE_CHECKING:
    import pyarrow as pa

ExportFormat = Literal["sft", "dpo", "grpo"]
StepSelection = Literal["advancing", "all", "agent"]  # which steps an SFT export keeps
EXPORT_FORMATS: tuple[str, ...] = ("sft", "dpo", "grpo")
VERDICT_FIELDS = ("transition_fired", "on_shortest_path", "distance_before", "distance_after")


class ExportConfig(PromptConfig):
    """How to render examples: the prompt (codec, coordinates, history) and which steps."""

    steps: StepSelection = Field(
        default="advancing", description="SFT rows: 'advancing' (steps verified to advance "
        "toward the goal), 'all' (every step of every successful path) or 'agent' (those the "
        "exploring agent chose, off-path first steps left out)")
    jsonl: bool = Field(default=False, description="JSONL + image files instead of Parquet")


def verdict_columns(node: Node, prefix: str = "") -> dict[str, object]:
    """The verdict of the step into ``node`` as columns (None where it had no verdict)."""
    verdict = node.verdict or {}
    return {f"{prefix}{name}": verdict.get(name) for name in VERDICT_FIELDS}


class NodeContext(TypedDict):
    """What acting at a node shows: its screenshots (blob hashes), history and prompt."""

    images: list[str]
    prompt: list[Message]
    history: list[str]


class _Context:
    """Builds a node's prompt (instruction, history, last k screenshots, last error)."""

    def __init__(self, store: TrajectoryStore, index: TreeIndex, config: ExportConfig) -> None:
        self.store, self.index = store, index
        self.prompts = PromptBuilder(PromptConfig(**config.model_dump(include=set(PromptConfig.model_fields))))
        self._instructions: dict[str, str] = {}

    def action_text(self, node: Node) -> str:
        """The codec text of the action into ``node``, against its parent's screenshot (its
        size, and its elements in the modes with elements)."""
        parent = self.index.nodes[node.parent_id] if node.parent_id is not None else node
        return self.prompts.action_text(node.action, (parent.width, parent.height), parent.elements)

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

    def at(self, node_id: int, instruction: str) -> NodeContext:
        """Images, history and prompt messages for acting at ``node_id``."""
        path = self.index.path(node_id)
        history = [(child.action, (parent.width, parent.height), parent.elements)
                   for parent, child in zip(path, path[1:], strict=False)]
        prompt = self.prompts.build(instruction=instruction, history=history,
                                    images=[n.obs_blob for n in path], image_steps=[n.depth for n in path],
                                    error=path[-1].error, elements=path[-1].elements)
        return {"images": [i for i in prompt.images if i], "prompt": prompt.messages,
                "history": [self.prompts.action_text(a, size, shown, refs="label") for a, size, shown in history]}


def _advancing(node: Node, on_success_path: bool) -> bool:
    if node.verdict is None:
        return on_success_path
    verdict = node.verdict
    return bool(verdict.get("transition_fired") and verdict.get("on_shortest_path"))


def _strayed(node: Node) -> bool:
    """Whether the step into ``node`` left the shortest paths: the env refused it, or its
    transition led off them (a step that fires nothing, such as typing, stays on them)."""
    verdict = node.verdict or {}
    return FLAG_OFF_PATH in node.flags or node.error is not None or bool(
        verdict.get("transition_fired") and not verdict.get("on_shortest_path"))


def trees_by_content(store: TrajectoryStore) -> list[Tree]:
    """The store's trees by (env, start state), not by id: ids follow the order in which
    concurrent collection happened to insert them, so exporting by id gave the same rows in
    another order from run to run, and a seeded shuffle of them another training run."""
    return sorted(store.trees(), key=lambda tree: (tree.env, tree.start_key, tree.id))


def sft_rows(store: TrajectoryStore, config: ExportConfig) -> Iterator[dict]:
    """One example per kept step (see the module docstring), deduplicated per task."""
    for tree in trees_by_content(store):
        index = TreeIndex.load(store, tree.id)
        ctx = _Context(store, index, config)
        seen: set[tuple[int, str, str | None]] = set()
        on_success = {n.id for e in index.episodes if e.success for n in index.path(e.leaf_id)}
        candidates: list[tuple[StoredEpisode | None, Node]]
        if config.steps in ("all", "agent"):
            candidates = [(e, n) for e in index.episodes if e.success
                          for n in index.path(e.leaf_id)[1:]
                          if config.steps == "all" or FLAG_OFF_PATH not in n.flags]
        else:
            candidates = [(None, n) for n in index.nodes.values()
                          if n.parent_id is not None and _advancing(n, n.id in on_success)]
        for episode, child in candidates:
            assert child.parent_id is not None
            if episode is not None:
                task_id = episode.task_id
                instruction = store.task(task_id).instruction if task_id else ""
            else:
                task_id, instruction = ctx.instruction(child.id)
            target = ctx.action_text(child)
            key = (child.parent_id, target, task_id)
            if key in seen:
                continue
            seen.add(key)
            context = ctx.at(child.parent_id, instruction)
            path = index.path(child.parent_id)
            yield {"id": f"{child.parent_id}>{child.id}:{task_id or ''}", "tree_id": tree.id,
                   "task_id": task_id, "node_id": child.parent_id, "child_id": child.id,
                   "step": child.depth - 1, "instruction": instruction,
                   "images": context["images"], "history": context["history"], "target": target,
                   "prompt": context["prompt"], "messages": context["prompt"] + ctx.prompts.assistant(target),
                   "reward": child.step_reward, "recovery": any(_strayed(n) for n in path[1:]),
                   "after_error": path[-1].error is not None, **verdict_columns(child)}


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
    for tree in trees_by_content(store):
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
                           "chosen": ctx.prompts.assistant(ctx.action_text(chosen)),
                           "rejected": ctx.prompts.assistant(ctx.action_text(rejected)),
                           **verdict_columns(chosen, "chosen_"), **verdict_columns(rejected, "rejected_")}


def grpo_rows(store: TrajectoryStore, config: ExportConfig) -> Iterator[dict]:
    """For each node with two or more explored children: the sibling actions, their step
    rewards and verdicts."""
    for tree in trees_by_content(store):
        index = TreeIndex.load(store, tree.id)
        ctx = _Context(store, index, config)
        for parent_id, kids in sorted(index.children.items()):
            if len(kids) < 2:
                continue
            task_id, instruction = ctx.instruction(parent_id)
            context = ctx.at(parent_id, instruction)
            nodes = [index.nodes[k] for k in kids]
            columns = [verdict_columns(n) for n in nodes]
            yield {"id": f"group:{parent_id}", "tree_id": tree.id, "node_id": parent_id,
                   "task_id": task_id, "images": context["images"], "prompt": context["prompt"],
                   "child_ids": [n.id for n in nodes],
                   "actions": [ctx.action_text(n) for n in nodes],
                   "rewards": [n.step_reward for n in nodes],
                   "success_below": [index.success_below[n.id] for n in nodes],
                   **{name: [c[name] for c in columns] for name in VERDICT_FIELDS}}


ROW_BUILDERS: dict[str, Callable[[TrajectoryStore, ExportConfig], Iterator[dict]]] = {
    "sft": sft_rows, "dpo": dpo_rows, "grpo": grpo_rows,
}


#: rows per Parquet row group: bounds the image bytes held in memory at once
BATCH_ROWS = 256


def row_schema(fmt: ExportFormat) -> pa.Schema:
    """The Arrow columns of each format's rows, images as stored (before embedding)."""
    import pyarrow as pa

    text, int64, flag = pa.string(), pa.int64(), pa.bool_()
    part = pa.struct([("type", text), ("text", text)])
    messages = pa.list_(pa.struct([("role", text), ("content", pa.list_(part))]))
    images = pa.list_(pa.struct([("bytes", pa.binary()), ("path", text)]))

    def verdict(prefix: str = "", listed: bool = False) -> list[tuple[str, object]]:
        types = [flag, flag, int64, int64]
        return [(f"{prefix}{name}", pa.list_(t) if listed else t)
                for name, t in zip(VERDICT_FIELDS, types, strict=True)]

    columns = {
        "sft": [("id", text), ("tree_id", int64), ("task_id", text), ("node_id", int64),
                ("child_id", int64), ("step", int64), ("instruction", text), ("images", images),
                ("history", pa.list_(text)), ("target", text), ("prompt", messages),
                ("messages", messages), ("reward", pa.float64()), ("recovery", flag),
                ("after_error", flag), *verdict()],
        "dpo": [("id", text), ("tree_id", int64), ("node_id", int64), ("chosen_node", int64),
                ("rejected_node", int64), ("task_id", text), ("images", images),
                ("prompt", messages), ("chosen", messages), ("rejected", messages),
                *verdict("chosen_"), *verdict("rejected_")],
        "grpo": [("id", text), ("tree_id", int64), ("node_id", int64), ("task_id", text),
                 ("images", images), ("prompt", messages), ("child_ids", pa.list_(int64)),
                 ("actions", pa.list_(text)), ("rewards", pa.list_(pa.float64())),
                 ("success_below", pa.list_(pa.bool_())), *verdict(listed=True)],
    }
    return pa.schema(columns[fmt])


def export(store: TrajectoryStore, fmt: ExportFormat, out: Path, config: ExportConfig) -> Path:
    """Write ``out/<fmt>.parquet`` (or ``out/<fmt>.jsonl`` + ``out/images/``); return the file."""
    if fmt not in ROW_BUILDERS:
        raise StoreError(f"--format: expected sft, dpo or grpo, got {fmt!r}; pick one of those")
    _ = PromptBuilder(config).codec  # a bad codec is refused before anything is written
    out.mkdir(parents=True, exist_ok=True)
    rows = ROW_BUILDERS[fmt](store, config)
    if config.jsonl:
        return _write_jsonl(store, rows, out / f"{fmt}.jsonl")
    return _write_parquet(store, rows, row_schema(fmt), out / f"{fmt}.parquet")

#: what the `export` extra (``datasets``) is for, in its missing-extra error
PARQUET_PURPOSE = "Parquet exports with image features (--jsonl needs no extra)"


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


def datasets_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the ``huggingface`` metadata that makes ``datasets`` decode its
    ``images`` column to PIL images."""
    datasets = import_extra("datasets", "export", PARQUET_PURPOSE)
    features = datasets.Features.from_arrow_schema(schema)
    features["images"] = datasets.List(datasets.Image())
    meta = {b"huggingface": json.dumps({"info": {"features": features.to_dict()}}).encode()}
    schema = features.arrow_schema
    return schema.with_metadata({**(schema.metadata or {}), **meta})


def _write_parquet(store: TrajectoryStore, rows: Iterator[dict], schema: pa.Schema, target: Path) -> Path:
    """Rows in batches of BATCH_ROWS, each image's bytes read once per batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = datasets_schema(schema)
    with pq.ParquetWriter(target, schema) as writer:
        while batch := list(islice(rows, BATCH_ROWS)):
            embedded: dict[str, dict] = {}
            for digest in {d: None for row in batch for d in row["images"]}:
                embedded[digest] = {"bytes": store.blob(digest), "path": _image_name(store, digest)}
            batch = [{**row, "images": [embedded[d] for d in row["images"]]} for row in batch]
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return target
