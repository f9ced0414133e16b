"""`cua data corpus` on two small sites in real Chromium: the three kinds of steps, the split
by site, deduplication, resuming, and `cua train sft` reading the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from fsm_sites.spec.site import dump_spec
from fsm_sites.synthesis.tasks import load_tasks
from harness.errors import ConfigError
from harness.store.corpus import DONE, CorpusConfig, build_corpus_async
from harness.store.corpus_split import split_rows, task_of
from tests.fsm_sites.widgets_spec import tiny_shop

pytestmark = pytest.mark.asyncio(loop_scope="session")
HELD_OUT = "gen_easy_0"


def _config(out: Path, spec_file: Path, **changes) -> CorpusConfig:
    fields = dict(out=out, sites=[str(spec_file)], generated=1, difficulties=["easy"], tasks=4,
                  budget=12, held_out=[HELD_OUT], concurrency=2)
    return CorpusConfig(**{**fields, **changes})


@pytest.fixture(scope="module")
async def corpus(provider, tmp_path_factory) -> tuple[CorpusConfig, dict]:
    spec_file = tmp_path_factory.mktemp("specs") / "tiny_shop.yaml"
    dump_spec(tiny_shop(), spec_file)
    config = _config(tmp_path_factory.mktemp("corpus"), spec_file)
    stats = await build_corpus_async(config, provider=provider, show_progress=False)
    return config, stats


def _rows(config: CorpusConfig, split: str) -> list[dict]:
    return pq.read_table(Path(config.out) / split / "sft.parquet").to_pylist()


def _text(row: dict) -> str:
    return row["prompt"][-1]["content"][-1]["text"]


async def test_rows_hold_on_path_recovery_and_long_history_steps(corpus):
    config, stats = corpus
    rows = _rows(config, "train")
    assert stats["rows"]["train"] == len(rows) > 0
    assert any(not r["recovery"] for r in rows) and any(r["recovery"] for r in rows)
    assert max(r["step"] for r in rows) >= 3  # prompts after several earlier actions
    assert all(r["target"] != "(no valid action)" for r in rows)  # wrong steps are never targets
    assert all(r["transition_fired"] is not None for r in rows)  # every step keeps its verdict
    refused = [r for r in rows if r["after_error"]]
    assert refused and all("Last action error: expected an element label" in _text(r) for r in refused)
    # the target after a refused step is the oracle's step at the state it was refused in:
    # the row with the same history minus the refused step
    by_history = {(r["instruction"], tuple(r["history"])): r["target"] for r in rows}
    matched = [(r["target"], by_history[(r["instruction"], tuple(r["history"][:-1]))])
               for r in refused if (r["instruction"], tuple(r["history"][:-1])) in by_history]
    assert matched and all(after == before for after, before in matched)
    split = stats["splits"]["train"]
    assert 0 < split["recovery_share"] < 1 and split["after_error_share"] > 0
    assert sum(split["depths"].values()) == len(rows)
    assert set(split["goal_kinds"]) == {"named", "state", "expr"}


async def test_every_verified_task_gives_rows_forms_included(corpus):
    config, stats = corpus
    for site in Path(config.out).glob("sites/*"):
        kept = {t.id: t for t in load_tasks(site / "tasks.jsonl")}
        rows = pq.read_table(site / "sft.parquet").to_pylist()
        assert {task_of(r["task_id"]) for r in rows} == set(kept), site.name
        typed = [r for r in rows if '"type_text"' in r["target"]]  # the oracle's typing is kept
        assert typed or site.name != HELD_OUT  # its order form takes a tip and an address


async def test_held_out_sites_never_reach_training(corpus):
    config, stats = corpus
    train, held = _rows(config, "train"), _rows(config, "heldout")
    assert held and {r["site_key"] for r in held} == {HELD_OUT}
    assert HELD_OUT not in {r["site_key"] for r in train}
    site = Path(config.out) / "sites" / HELD_OUT
    instructions = {t.instruction for t in load_tasks(site / "tasks.jsonl")}
    goals = set(json.loads((site / DONE).read_text())["goals"].values())
    assert goals and not any(r["instruction"] in instructions or r["goal"] in goals for r in train)
    assert stats["heldout_tasks"] == [f"fsm:{(Path(config.out) / 'sites' / HELD_OUT / 'tasks.jsonl').resolve()}"]


async def test_rows_are_distinct_by_prompt_and_target(corpus):
    config, _ = corpus
    for split in ("train", "heldout"):
        keys = [(json.dumps(r["prompt"]), r["target"]) for r in _rows(config, split)]
        assert len(keys) == len(set(keys)), split


async def test_split_drops_duplicates_and_training_rows_sharing_a_held_out_instruction_or_goal():
    def row(instruction: str, goal: str, target: str = "t") -> dict:
        prompt = [{"role": "user", "content": [{"type": "text", "text": instruction}]}]
        return {"instruction": instruction, "goal": goal, "prompt": prompt, "images": [], "target": target}

    rows = {"a": [row("Open X.", "g1"), row("Open X.", "g1"), row("Open X.", "g1", "u"),
                  row("Open Y.", "g2"), row("Open Z.", "g9")],
            "b": [row("Open Y.", "g3")]}
    splits, dropped = split_rows(rows, {"b"}, {"Open Y.", "Other."}, {"g3", "g9"})
    assert [(r["instruction"], r["target"]) for r in splits["train"]] == [("Open X.", "t"), ("Open X.", "u")]
    assert dropped == 2 and len(splits["heldout"]) == 1


async def test_a_rerun_skips_finished_sites_and_rebuilds_one_a_crash_left(corpus, provider):
    config, _ = corpus
    sites = Path(config.out) / "sites"
    finished = {p.parent.name: p.stat().st_mtime_ns for p in sites.glob(f"*/{DONE}")}
    assert set(finished) == {"tiny_shop", HELD_OUT}
    stats = await build_corpus_async(config, provider=provider, show_progress=False)
    assert stats["build"]["sites_built_now"] == 0
    assert {p.parent.name: p.stat().st_mtime_ns for p in sites.glob(f"*/{DONE}")} == finished
    (sites / "tiny_shop" / DONE).unlink()  # a crash in the middle of the site
    (sites / "tiny_shop" / "half-written").write_text("x")
    stats = await build_corpus_async(config, provider=provider, show_progress=False)
    assert stats["build"]["sites_built_now"] == 1
    assert (sites / "tiny_shop" / DONE).is_file() and not (sites / "tiny_shop" / "half-written").exists()
    assert (sites / HELD_OUT / DONE).stat().st_mtime_ns == finished[HELD_OUT]
    with pytest.raises(ConfigError, match="budget"):
        await build_corpus_async(config.model_copy(update={"budget": 99}), provider=provider,
                                 show_progress=False)


async def test_sft_training_reads_the_train_split_with_the_corpus_prompt(corpus, tmp_path):
    from trainers.training.config import SFTConfig
    from trainers.training.run import Run

    config, stats = corpus
    fields = {"out": tmp_path / "run", "model": {"path": tmp_path / "tiny", "finetune": "full"},
              "data": {"corpus": config.out, "prompt": config.prompt.model_dump()}}
    rows = Run(SFTConfig.model_validate(fields), "sft").rows("sft")
    assert len(rows) == stats["rows"]["train"]
    with pytest.raises(ValueError, match="data.prompt"):
        SFTConfig.model_validate({**fields, "data": {"corpus": config.out, "prompt": {"codec": "json"}}})
