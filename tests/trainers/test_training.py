"""`cua train sft|dpo` end to end with the tiny model: real oracle data collected in Chromium
into a real store, TRL's trainers for a few steps, checkpoints, --resume, --set, the
report, and the errors a user meets (an empty export, a screenshot lost from the store)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from transformers import TrainerCallback
from typer.testing import CliRunner

from harness.cli import app
from harness.store import TrajectoryStore
from tests.harness.store.helpers import click, trajectory
from trainers.errors import TrainingDataError
from trainers.training.config import SFTConfig
from trainers.training.sft import train_sft

ELEMENTS = {"codec": "json", "observation": "elements", "system_prompt": False}
PIXELS = {"codec": "json", "observation": "screenshot", "system_prompt": False}
TASKS = ("fsm:shop/open_mug", "fsm:settings/cfg_location")


def run_config(tmp_path: Path, store: Path, model: Path, **sections) -> dict:
    config = {"out": str(tmp_path / "run"),
              "model": {"path": str(model), "finetune": "full", "device": "cpu"},
              "data": {"store": str(store), "prompt": ELEMENTS},
              "train": {"max_steps": 6, "batch_size": 4, "learning_rate": 3e-3, "logging_steps": 1,
                        "save_steps": 3, "threads": 1}}
    config.update(sections)
    return config


def write(tmp_path: Path, config: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def scalars(out: Path) -> dict[str, list[float]]:
    """The TensorBoard scalars of a run (what `tensorboard --logdir` shows), by tag."""
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    found: dict[str, list[float]] = {}
    multiplexer = EventMultiplexer().AddRunsFromDirectory(str(out / "tensorboard"))
    multiplexer.Reload()
    for run in multiplexer.Runs():
        for tag in multiplexer.GetAccumulator(run).Tags()["scalars"]:
            found.setdefault(tag, []).extend(e.value for e in multiplexer.Scalars(run, tag))
    return found


def train_losses(out: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in metrics(out) if r["event"] == "train"}


def test_sft_collects_trains_evaluates_and_reports(tmp_path, tiny_dir, oracle_store) -> None:
    """An empty store: the config's collect section fills it; --set overrides the file (label
    renaming on); the dense held-out metric is measured before, every 4 steps and at the end."""
    config = run_config(tmp_path, tmp_path / "new-store", tiny_dir,
                        collect={"tasks": [TASKS[0]], "seeds": [0, 1]},
                        eval={"tasks": [TASKS[0]], "seed": 100, "episodes": 1, "concurrency": 2,
                              "max_steps": 2, "max_new_tokens": 8, "samples": 1},
                        heldout={"states": str(oracle_store), "every": 4})
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(write(tmp_path, config)),
                                      "--set", "train.max_steps=8", "--set", "train.save_steps=4",
                                      "--set", "data.rename_labels=0.3"])
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    losses = train_losses(out)
    assert sorted(losses) == list(range(1, 9))  # --set won over the file's max_steps
    assert losses[8] < losses[1] - 0.5
    assert {p.name for p in (out / "checkpoints").glob("checkpoint-*")} == {"checkpoint-4", "checkpoint-8"}
    assert yaml.safe_load((out / "model" / "cua_agent.yaml").read_text()) == {
        **ELEMENTS, "coordinates": "pixel", "history_images": 1, "element_refs": "label"}
    lines = metrics(out)
    assert [r["episodes"] for r in lines if r["event"] == "collect"] == [2]
    renaming = [r for r in lines if r["event"] == "rename_labels"]
    assert len(renaming) == 1 and renaming[0]["probability"] == 0.3 and renaming[0]["vocabulary"] > 5
    evals = {r["phase"]: r for r in lines if r["event"] == "eval"}
    assert set(evals) == {"before", "after"} and evals["after"]["agent"].startswith(f"hf:{out / 'model'}?")
    low, high = evals["after"]["success_ci"]
    assert low <= evals["after"]["success_rate"] <= high
    # eval.samples: one more episode per task at temperature 1, kept apart, in the command too
    assert evals["after"]["episodes"] == 1 and evals["after"]["sampled"]["episodes"] == 1
    assert "--samples 1 --sample-temperature 1.0" in evals["after"]["command"]
    heldout = [r for r in lines if r["event"] == "heldout"]
    assert [r["step"] for r in heldout] == [0, 4, 8] and heldout[0]["heldout_states"] >= 8
    # the states include the goal it trains on: the loss falls, the argmax learns its tokens
    assert heldout[-1]["heldout_token_accuracy"] > heldout[0]["heldout_token_accuracy"]
    assert "cua eval --suite fsm:shop/open_mug" in evals["before"]["command"]
    assert (out / "eval" / "after" / "summary.json").is_file()
    report = (out / "report.html").read_text()
    assert report.count("<svg") >= 3 and "eval/before/report.html" in report and 'id="xtick_' in report
    assert "held-out next-action exact match" in report and "95% CI" in report
    assert yaml.safe_load((out / "config.yaml").read_text())["train"]["max_steps"] == 8
    # report_to's default: TRL's logs and our eval lines as TensorBoard scalars
    seen = scalars(out)
    assert seen["train/loss"] == pytest.approx(list(losses.values()), rel=1e-4)
    assert len(seen["eval/success_rate"]) == 2 and "heldout/heldout_token_accuracy" in seen


class SimulatedCrash(Exception):
    pass


class CrashAfterCheckpoint(TrainerCallback):
    """Kills the run right after the checkpoint of step ``step`` is written."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise SimulatedCrash(f"killed after step {self.step}")


def test_resume_continues_from_the_checkpoint_to_the_same_step_count(tmp_path, tiny_dir, oracle_store) -> None:
    whole = SFTConfig.model_validate(run_config(tmp_path / "whole", oracle_store, tiny_dir))
    train_sft(whole)
    broken = SFTConfig.model_validate(run_config(tmp_path / "broken", oracle_store, tiny_dir))
    with pytest.raises(SimulatedCrash):
        train_sft(broken, callbacks=(CrashAfterCheckpoint(3),))
    assert not (broken.out / "model").exists()
    train_sft(broken.model_copy(update={"resume": True}))

    expected, resumed = train_losses(whole.out), train_losses(broken.out)
    assert sorted(resumed) == sorted(expected) == list(range(1, 7))
    assert resumed == pytest.approx(expected, rel=1e-4)  # steps 4-6 from checkpoint-3 as if never stopped
    runs = [r for r in metrics(broken.out) if r["event"] == "run"]
    assert runs[-1]["steps"] == 6 and runs[-1]["resumed_from"].endswith("checkpoint-3")


def test_resume_and_fresh_runs_refuse_the_wrong_directory(tmp_path, tiny_dir, oracle_store) -> None:
    config = SFTConfig.model_validate(run_config(tmp_path, oracle_store, tiny_dir))
    with pytest.raises(Exception, match="expected a checkpoint under .*; run without --resume"):
        train_sft(config.model_copy(update={"resume": True}))
    (config.out / "checkpoints" / "checkpoint-3").mkdir(parents=True)
    with pytest.raises(Exception, match="expected a new run directory, got .* pass --resume"):
        train_sft(config)


def test_dpo_grows_trees_and_trains_on_branch_pairs(tmp_path, tiny_dir, monkeypatch) -> None:
    monkeypatch.setenv("WANDB_MODE", "offline")
    config = run_config(tmp_path, tmp_path / "trees", tiny_dir,
                        collect={"tasks": [TASKS[1]], "seeds": [0], "explore": "tree", "budget": 10},
                        dpo={"beta": 0.5})
    config["train"].update(max_steps=5, learning_rate=1e-3, report_to=["wandb"], trl={"bf16": False})
    result = CliRunner().invoke(app, ["train", "dpo", "--config", str(write(tmp_path, config))])
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    steps = [r for r in metrics(out) if r["event"] == "train"]
    assert [r["step"] for r in steps] == [1, 2, 3, 4, 5]
    assert steps[0]["rewards/margins"] == 0.0 < steps[-1]["rewards/margins"]  # chosen pulled above rejected
    assert steps[-1]["loss"] < steps[0]["loss"]
    assert (out / "model" / "model.safetensors").is_file() and (out / "data" / "dpo.parquet").is_file()
    assert "rewards/margins" in (out / "report.html").read_text()
    [wandb_run] = (out / "wandb").glob("offline-run-*")  # W&B's own run, kept on disk
    assert list(wandb_run.glob("run-*.wandb")) and not (out / "tensorboard").exists()


def test_an_empty_export_is_a_clear_error(tmp_path, tiny_dir) -> None:
    store = TrajectoryStore(tmp_path / "failed-store")  # one failed episode: no step advanced
    store.insert_trajectory(trajectory([("a", click(1, 1))], task_id="t"))
    store.put_task("t", "buy the thing")
    store.close()
    config = SFTConfig.model_validate(run_config(tmp_path, tmp_path / "failed-store", tiny_dir))
    with pytest.raises(TrainingDataError, match="expected SFT rows in .*, got an empty export"):
        train_sft(config)
    with pytest.raises(TrainingDataError, match="got an empty store; collect into it first"):
        train_sft(config.model_copy(update={"data": config.data.model_copy(
            update={"store": tmp_path / "no-store"})}))


def test_a_lost_screenshot_is_a_clear_error_in_one_line(tmp_path, tiny_dir, oracle_store) -> None:
    store = shutil.copytree(oracle_store, tmp_path / "store")
    # One screenshot lost, one every export uses (a tree's first observation); the database names it.
    with sqlite3.connect(store / "store.sqlite") as db:
        [(lost,)] = db.execute("SELECT obs_blob FROM nodes WHERE id = (SELECT MIN(root_id) FROM trees)")
    next((store / "blobs").rglob(f"{lost}*")).unlink()
    config = run_config(tmp_path, store, tiny_dir)
    config["data"]["prompt"] = PIXELS
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "train", "sft", "--config",
                           str(write(tmp_path, config))], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: expected every screenshot of the sft export") and "missing image" in line
    assert "observation: elements" in line


def test_bad_config_fields_are_reported_at_once_in_one_line(tmp_path, tiny_dir, oracle_store) -> None:
    config = run_config(tmp_path, oracle_store, tiny_dir)
    config["train"]["bogus"] = 1
    config["model"]["finetune"] = "none"
    config["train"]["trl"] = {"bf17": True}  # checked later, before any data is collected
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "train", "sft", "--config",
                           str(write(tmp_path, config)), "--set", "train.max_steps=many",
                           "--set", "data.prompt.codec=qwen2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: cua train sft: 4 bad field(s):")
    for field in ("train.bogus", "model.finetune", "train.max_steps", "data.prompt"):
        assert field in line
    assert not (tmp_path / "run").exists()
    config = run_config(tmp_path, tmp_path / "new-store", tiny_dir, collect={"tasks": [TASKS[0]], "seeds": [0]})
    config["train"]["trl"] = {"bf17": True}
    result = CliRunner().invoke(app, ["train", "sft", "--config", str(write(tmp_path, config))])
    assert result.exit_code == 2 and "train.trl.bf17: expected a field of TRL's SFTConfig" in result.output
    assert "did you mean 'bf16'" in result.output and not (tmp_path / "new-store").exists()
