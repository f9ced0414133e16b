"""`cua data corpus` on two small sites in real Chromium: the three kinds of steps, the split
by site, deduplication, resuming, `cua train sft` reading the corpus, and its re-export in
another prompt (`--source`)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fsm_sites.spec.site import dump_spec
from fsm_sites.synthesis.tasks import load_tasks
from harness.cli import app
from harness.errors import ConfigError
from harness.store.corpus import DONE, RECIPE_FILE, CorpusConfig, build_corpus_async
from harness.store.corpus_reexport import reexport_corpus
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


@pytest.fixture(scope="module")
async def reexported(corpus, tmp_path_factory) -> tuple[CorpusConfig, dict]:
    config = CorpusConfig(out=tmp_path_factory.mktemp("reexport") / "corpus", source=corpus[0].out,
                          prompt={"observation": "screenshot+elements"})  # the rest: the source's
    return config, reexport_corpus(config, show_progress=False)


async def test_a_reexport_holds_the_same_rows_and_held_out_sites_with_a_screenshot(corpus, reexported, tmp_path):
    from trainers.training.config import SFTConfig
    from trainers.training.run import Run

    (source, source_stats), (config, stats) = corpus, reexported
    assert stats["prompt"] == {**source.prompt.model_dump(mode="json"), "observation": "screenshot+elements"}
    assert stats["sites"]["held_out"] == source_stats["sites"]["held_out"] == [HELD_OUT]
    assert stats["rows"] == {**source_stats["rows"], "before_dedup": stats["rows"]["before_dedup"],
                             "dropped_for_split": stats["rows"]["dropped_for_split"]}
    assert stats["reexport"]["source"] == str(Path(source.out).resolve())
    assert stats["reexport"]["source_prompt"] == source_stats["prompt"]
    assert stats["reexport"]["source_rows_missing"] == 0
    for split in ("train", "heldout"):
        before, after = _rows(source, split), _rows(config, split)
        assert [(r["site_key"], r["id"], r["target"]) for r in after] == \
               [(r["site_key"], r["id"], r["target"]) for r in before]
        assert not any(r["images"] for r in before)
        assert all(len(r["images"]) == 1 and r["images"][0]["bytes"].startswith(b"\x89PNG")
                   and r["prompt"][-1]["content"][0]["type"] == "image" for r in after)
    assert not list(Path(config.out).glob("sites/*/store"))  # the source's stores are read, not copied
    assert stats["heldout_tasks"] == [f"fsm:{(Path(config.out) / 'sites' / HELD_OUT / 'tasks.jsonl').resolve()}"]
    fields = {"out": tmp_path / "run", "model": {"path": tmp_path / "tiny", "finetune": "full"},
              "data": {"corpus": config.out, "prompt": stats["prompt"]}}
    assert len(Run(SFTConfig.model_validate(fields), "sft").rows("sft")) == stats["rows"]["train"]
    with pytest.raises(ValueError, match="data.prompt"):
        SFTConfig.model_validate({**fields, "data": {"corpus": config.out, "prompt": source_stats["prompt"]}})
    again = reexport_corpus(config, show_progress=False)  # a rerun resumes: nothing to export
    assert again["build"]["sites_built_now"] == 0 and again["rows"] == stats["rows"]


async def test_a_reexport_refuses_what_is_not_a_built_corpus_and_an_out_holding_another(
        corpus, reexported, tmp_path):
    source, target = corpus[0].out, reexported[0].out

    def reexport(out: Path, source: Path, **fields) -> dict:
        return reexport_corpus(CorpusConfig(out=out, source=source, **fields), show_progress=False)

    with pytest.raises(ConfigError, match="expected a corpus built by `cua data corpus` in .*, got no stats.json"):
        reexport(tmp_path / "a", tmp_path)
    result = CliRunner().invoke(app, ["data", "corpus", str(tmp_path / "b"), "--source", str(target)])
    assert result.exit_code != 0 and "a re-export of" in result.output, result.output  # not a source
    with pytest.raises(ConfigError, match="expected only --out and prompt beside it .*, got tasks"):
        reexport(tmp_path / "c", source, tasks=2)
    with pytest.raises(ConfigError, match="expected the recipe of the corpus in .* got other prompt"):
        reexport(target, source, prompt={"observation": "screenshot"})
    (tmp_path / "d").mkdir()  # an OUT holding a corpus that `cua data corpus` built
    (tmp_path / "d" / RECIPE_FILE).write_bytes((Path(source) / RECIPE_FILE).read_bytes())
    with pytest.raises(ConfigError, match="got other source"):
        reexport(tmp_path / "d", source)
    assert not (tmp_path / "a").exists() and not (tmp_path / "c").exists()
    with pytest.raises(ConfigError, match="expected no source for a build"):
        await build_corpus_async(CorpusConfig(out=tmp_path / "e", source=source), show_progress=False)
