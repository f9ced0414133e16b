"""Each export's exact rows on a small hand-built tree, and the files they are written to.

    1 home
    ├── 2 a   click(1,1)  on path, reward 0.5
    │   ├── 3 b   click(2,2)  on path, reward 1.0  <- episode ok (success, task t1)
    │   └── 4 c   click(3,3)  off path, reward -0.5 <- episode off (failure, task t1)
    └── 5 d   click(4,4)  no verdict, reward -0.1 <- episode lost (failure, no task)
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import replace

import pytest
from PIL import Image

from harness.actions import parse_action
from harness.errors import StoreError
from harness.store import Frame, Trajectory, TrajectoryStore
from harness.store import export as export_module
from harness.store.blobs import blob_hash
from harness.store.export import (
    ROW_BUILDERS,
    ExportConfig,
    _Context,
    dpo_rows,
    export,
    grpo_rows,
    row_schema,
    sft_rows,
)
from harness.store.models import FLAG_OFF_PATH
from tests.harness.store.helpers import click, screenshot, step, trajectory, verdict

CANON = ExportConfig(codec="json", history_images=2, system_prompt=False)
TEXT = {n: json.dumps(click(n, n)) for n in range(1, 5)}
SHOT = {label: blob_hash(screenshot(label)) for label in ("home", "a", "b", "c", "d")}
PROMPT = "Instruction: Buy a laptop\nPrevious actions:\n{}\nNext action:"


def _verdict(node_verdict: dict | None, prefix: str = "") -> dict:
    names = ("transition_fired", "on_shortest_path", "distance_before", "distance_after")
    return {f"{prefix}{n}": (node_verdict or {}).get(n) for n in names}


V = {"a": verdict("home", "a", True, 2, 1), "b": verdict("a", "b", True, 1, 0, True),
     "c": verdict("a", "c", False, 1, 2), "d": None}


@pytest.fixture
def tree_store(tmp_path) -> TrajectoryStore:
    store = TrajectoryStore(tmp_path / "store")
    store.put_task("t1", "Buy a laptop")
    root = Frame(screenshot=screenshot("home"), url="http://site/home", state_key="fsm:home")
    a = step("a", click(1, 1), reward=0.5, verdict_=V["a"])
    b = step("b", click(2, 2), reward=1.0, verdict_=V["b"], terminal=True)
    c = step("c", click(3, 3), reward=-0.5, verdict_=V["c"])
    d = step("d", click(4, 4), reward=-0.1)
    for eid, steps, ok, task in (("ok", (a, b), True, "t1"), ("off", (a, c), False, "t1"),
                                 ("lost", (d,), False, None)):
        store.insert_trajectory(Trajectory(env="fsm:shop", root=root, steps=steps, success=ok,
                                           task_id=task, episode_id=eid, agent="test"))
    return store


def _user(images: int, history: str) -> list[dict]:
    content = [{"type": "image"}] * images
    return [{"role": "user", "content": [*content, {"type": "text", "text": PROMPT.format(history)}]}]


def _assistant(text: str) -> list[dict]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def test_sft_rows_are_the_steps_verified_to_advance_with_their_verdicts(tree_store):
    rows = list(sft_rows(tree_store, CANON))
    assert rows == [
        {"id": "1>2:t1", "tree_id": 1, "task_id": "t1", "node_id": 1, "child_id": 2, "step": 0,
         "instruction": "Buy a laptop", "images": [SHOT["home"]], "history": [],
         "target": TEXT[1], "prompt": _user(1, "(none)"),
         "messages": _user(1, "(none)") + _assistant(TEXT[1]), "reward": 0.5, "recovery": False,
         "after_error": False, **_verdict(V["a"])},
        {"id": "2>3:t1", "tree_id": 1, "task_id": "t1", "node_id": 2, "child_id": 3, "step": 1,
         "instruction": "Buy a laptop", "images": [SHOT["home"], SHOT["a"]], "history": [TEXT[1]],
         "target": TEXT[2], "prompt": _user(2, f"1. {TEXT[1]}"),
         "messages": _user(2, f"1. {TEXT[1]}") + _assistant(TEXT[2]), "reward": 1.0, "recovery": False,
         "after_error": False, **_verdict(V["b"])},
    ]


def test_sft_agent_steps_leave_out_off_path_first_steps_and_mark_what_follows_as_recovery(tmp_path):
    store = TrajectoryStore(tmp_path / "store")
    store.put_task("t1", "Buy a laptop")
    root = Frame(screenshot=screenshot("home"), url="http://site/home", state_key="fsm:home")
    refused = replace(step("home", click(8, 8), verdict_=verdict("home", "home", False, 2, 2)),
                      error="expected an element label")
    typed = step("home", {"type": "type_text", "text": "mug"}, verdict_=verdict("home", "home", False, 2, 2))
    goal = step("b", click(2, 2), verdict_=verdict("home", "b", True, 2, 0, True), terminal=True)
    episode = store.insert_trajectory(Trajectory(env="fsm:shop", root=root, steps=(refused, typed, goal),
                                                 success=True, task_id="t1", episode_id="ok", agent="test"))
    wrong = store.path_to(episode.leaf_id)[1]
    store.add_flag(wrong.id, FLAG_OFF_PATH)
    rows = list(sft_rows(store, CANON.model_copy(update={"steps": "agent"})))
    assert [(r["target"], r["recovery"], r["after_error"]) for r in rows] == [
        (json.dumps({"type": "type_text", "text": "mug"}), True, True), (TEXT[2], True, False)]
    assert "Last action error: expected an element label" in rows[0]["prompt"][-1]["content"][-1]["text"]


def test_sft_keeps_no_op_steps_of_successful_paths_only_when_asked(tmp_path):
    store = TrajectoryStore(tmp_path / "store")
    store.put_task("t1", "Buy a laptop")
    root = Frame(screenshot=screenshot("home"), url="http://site/home", state_key="fsm:home")
    noop = step("home", click(9, 9), verdict_=verdict("home", "home", False, 1, 1))
    goal = step("b", click(2, 2), verdict_=verdict("home", "b", True, 1, 0, True), terminal=True)
    store.insert_trajectory(Trajectory(env="fsm:shop", root=root, steps=(noop, goal), success=True,
                                       task_id="t1", episode_id="ok", agent="test"))
    advancing = [r["target"] for r in sft_rows(store, CANON)]
    every = [r["target"] for r in sft_rows(store, CANON.model_copy(update={"steps": "all"}))]
    assert advancing == [TEXT[2]] and every == [json.dumps(click(9, 9)), TEXT[2]]


def test_dpo_rows_pair_on_path_or_successful_children_against_siblings(tree_store):
    rows = list(dpo_rows(tree_store, CANON))
    assert rows == [
        {"id": "1:2>5", "tree_id": 1, "node_id": 1, "chosen_node": 2, "rejected_node": 5,
         "task_id": "t1", "images": [SHOT["home"]], "prompt": _user(1, "(none)"),
         "chosen": _assistant(TEXT[1]), "rejected": _assistant(TEXT[4]),
         **_verdict(V["a"], "chosen_"), **_verdict(None, "rejected_")},
        {"id": "2:3>4", "tree_id": 1, "node_id": 2, "chosen_node": 3, "rejected_node": 4,
         "task_id": "t1", "images": [SHOT["home"], SHOT["a"]], "prompt": _user(2, f"1. {TEXT[1]}"),
         "chosen": _assistant(TEXT[2]), "rejected": _assistant(TEXT[3]),
         **_verdict(V["b"], "chosen_"), **_verdict(V["c"], "rejected_")},
    ]


def test_grpo_rows_are_sibling_groups_with_step_rewards_and_verdicts(tree_store):
    rows = list(grpo_rows(tree_store, CANON))
    assert [(r["node_id"], r["child_ids"], r["actions"], r["rewards"], r["success_below"])
            for r in rows] == [
        (1, [2, 5], [TEXT[1], TEXT[4]], [0.5, -0.1], [True, False]),
        (2, [3, 4], [TEXT[2], TEXT[3]], [1.0, -0.5], [True, False]),
    ]
    assert rows[1]["images"] == [SHOT["home"], SHOT["a"]] and rows[1]["task_id"] == "t1"
    assert rows[1]["on_shortest_path"] == [True, False] and rows[1]["distance_after"] == [0, 2]
    assert rows[0]["on_shortest_path"] == [True, None]


def test_history_images_keeps_only_the_last_k(tree_store):
    rows = list(sft_rows(tree_store, CANON.model_copy(update={"history_images": 1})))
    assert [r["images"] for r in rows] == [[SHOT["home"]], [SHOT["a"]]]


def test_the_system_prompt_and_coordinate_space_come_from_the_codec(tree_store):
    from harness.codecs import get_codec

    config = ExportConfig(codec="qwen", coordinates="normalized")
    row = next(sft_rows(tree_store, config))
    codec = get_codec("qwen", coordinates="normalized")
    assert row["prompt"][0] == {"role": "system", "content": [{"type": "text", "text": codec.prompt()}]}
    assert row["target"] == codec.encode(parse_action(click(1, 1)), size=(160, 120))


def test_qwen_codec_targets_come_from_harness_codecs(tree_store):
    from harness import codecs
    from harness.actions import parse_action

    rows = list(sft_rows(tree_store, ExportConfig(codec="qwen")))
    expected = codecs.get_codec("qwen").encode(parse_action(click(2, 2)), size=(160, 120))
    assert rows[1]["target"] == expected


def test_parquet_loads_with_datasets_and_decodes_images(tree_store, tmp_path):
    datasets = pytest.importorskip("datasets")
    path = export(tree_store, "dpo", tmp_path / "out", CANON)
    ds = datasets.Dataset.from_parquet(str(path))
    assert ds.num_rows == 2 and ds[1]["id"] == "2:3>4"
    image = ds[1]["images"][1]
    assert image.size == (160, 120)
    assert image.convert("RGB").tobytes() == Image.open(io.BytesIO(screenshot("a"))).convert("RGB").tobytes()
    assert ds[1]["chosen"] == _assistant(TEXT[2])
    assert ds[1]["chosen_on_shortest_path"] is True and ds[1]["rejected_distance_after"] == 2


def test_rows_have_exactly_the_parquet_columns(tree_store):
    for fmt, rows in ROW_BUILDERS.items():
        assert list(next(rows(tree_store, CANON))) == row_schema(fmt).names, fmt


def _no_nulls(value):
    """A row as read back from Parquet, minus the None fields Arrow structs add."""
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None or k != "text"}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def test_parquet_written_in_batches_holds_every_row_with_its_images(tree_store, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(export_module, "BATCH_ROWS", 1)
    path = export(tree_store, "sft", tmp_path / "out", CANON)
    assert pq.ParquetFile(path).metadata.num_row_groups == 2
    by_hash = {digest: screenshot(label) for label, digest in SHOT.items()}
    expected = [{**row, "images": [{"bytes": by_hash[d], "path": f"{d}.png"} for d in row["images"]]}
                for row in sft_rows(tree_store, CANON)]
    assert _no_nulls(pq.read_table(path).to_pylist()) == expected


def test_an_export_without_rows_still_has_the_columns(tmp_path):
    import pyarrow.parquet as pq

    path = export(TrajectoryStore(tmp_path / "store"), "grpo", tmp_path / "out", CANON)
    table = pq.read_table(path)
    assert table.num_rows == 0 and table.column_names == row_schema("grpo").names
    assert b"huggingface" in table.schema.metadata


def test_jsonl_writes_image_files_once(tree_store, tmp_path):
    path = export(tree_store, "sft", tmp_path / "out", CANON.model_copy(update={"jsonl": True}))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["images"] for r in rows] == [[f"images/{SHOT['home']}.png"],
                                          [f"images/{SHOT['home']}.png", f"images/{SHOT['a']}.png"]]
    assert sorted(p.name for p in (tmp_path / "out" / "images").iterdir()) == sorted(
        f"{SHOT[k]}.png" for k in ("home", "a"))


def _instruction_by_walking_every_episode(ctx: _Context, node_id: int) -> tuple[str | None, str]:
    """The per-node scan the subtree fold replaced: every episode's path, for every node."""
    below = [e for e in ctx.index.episodes if node_id in {n.id for n in ctx.index.path(e.leaf_id)}]
    for episode in sorted(below, key=lambda e: (not e.success, e.created, e.id)):
        if episode.task_id is not None:
            try:
                return episode.task_id, ctx.store.task(episode.task_id).instruction
            except StoreError:
                return episode.task_id, ""
    return None, ""


def test_dpo_and_grpo_instructions_match_a_scan_of_every_episode(tmp_path, monkeypatch):
    store = TrajectoryStore(tmp_path / "store")
    store.put_task("t1", "Buy a laptop")
    store.put_task("t2", "Find the lamp")
    rng = random.Random(7)
    for i in range(120):
        steps = [(f"s{rng.randrange(3)}", click(rng.randrange(3), depth)) for depth in range(5)]
        episode = trajectory(steps, success=rng.random() < 0.3,
                             task_id=rng.choice([None, "t1", "t2", "unstored"]))
        store.insert_trajectory(replace(episode, episode_id=f"e{rng.randrange(10**6)}-{i}"))
    fast = {fmt: list(rows(store, CANON)) for fmt, rows in (("dpo", dpo_rows), ("grpo", grpo_rows))}
    monkeypatch.setattr(_Context, "instruction", _instruction_by_walking_every_episode)
    slow = {fmt: list(rows(store, CANON)) for fmt, rows in (("dpo", dpo_rows), ("grpo", grpo_rows))}
    assert len(fast["dpo"]) > 50 and len(fast["grpo"]) > 20
    assert {r["task_id"] for r in fast["dpo"] + fast["grpo"]} == {None, "t1", "t2", "unstored"}
    assert fast == slow


def test_the_export_does_not_depend_on_the_order_concurrent_collection_inserted_trees(tmp_path):
    def collected(name: str, envs: tuple[str, ...]) -> list[dict]:
        store = TrajectoryStore(tmp_path / name)
        store.put_task("t", "buy the thing")
        for env in envs:  # one tree per env: the order two concurrent workers finished in
            n = len(env)  # each site's own clicks, so the two trees' rows differ
            store.insert_trajectory(trajectory([("a", click(n, 1)), ("b", click(n, 2))], success=True,
                                               task_id="t", env=env))
        return [row["target"] for row in sft_rows(store, CANON.model_copy(update={"steps": "all"}))]

    first, second = collected("one", ("fsm:mail", "fsm:shopping")), collected("two", ("fsm:shopping", "fsm:mail"))
    assert len(set(first)) == 4 and first == second
