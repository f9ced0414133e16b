"""Issue 21's GRPO measurement on the corpus (benchmarks/bench_grpo_corpus.py): which tasks it
trains and judges on, the budget every arm gets, and how a run's time is split. The runs
themselves are the benchmark's."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_grpo_corpus import (
    arm_sets,
    check_reused,
    corpus_tasks,
    main,
    make_parser,
    time_split,
)
from benchmarks.bench_grpo_learning import CONFIG


def _site(root, name: str, difficulties: list[int]) -> None:
    folder = root / "sites" / name
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": f"{name}-{i}", "site": name, "start_state": "home{}", "goal": "g", "goal_kind": "named",
                         "instruction": f"task {i}", "difficulty": d, "oracle_path": []}) for i, d in enumerate(difficulties)]
    (folder / "tasks.jsonl").write_text("\n".join(lines) + "\n")


def test_training_tasks_come_from_training_sites_only_and_are_short(tmp_path) -> None:
    _site(tmp_path, "bank", [1, 4, 5])
    _site(tmp_path, "jobs", [1, 2])
    held = [f"fsm:{(tmp_path / 'sites' / 'jobs' / 'tasks.jsonl').resolve()}"]
    (tmp_path / "stats.json").write_text(json.dumps({"sites": {"held_out": ["jobs"]}, "heldout_tasks": held}))

    train, heldout, depth = corpus_tasks(tmp_path, max_depth=4)

    bank = (tmp_path / "sites" / "bank" / "tasks.jsonl").resolve()
    assert train == [f"fsm:{bank}#bank-0", f"fsm:{bank}#bank-1"]  # bank-2 is 5 steps long
    assert heldout == held and not any("jobs" in t for t in train)
    assert depth[f"fsm:{bank}#bank-2"] == 5 and len(depth) == 5
    with pytest.raises(SystemExit, match="at most 0 steps"):
        corpus_tasks(tmp_path, max_depth=0)


def test_a_runs_time_is_split_per_update_into_env_generation_and_training() -> None:
    lines = [{"event": "update", "update": u, "env_steps": 10 * u, "env_s": 4.0 + u, "generation_s": 2.0,
              "train_s": 1.0, "cpu_s": 3.0, "success": 0.25, "clip_fraction": 0.05, "kl": 0.01} for u in (1, 2)]
    split = time_split([{"event": "heldout"}, *lines])
    assert split["updates"] == 2 and split["env_steps"] == 20 and split["stop_reason"] is None  # an older run
    stop = {"event": "stop", "reason": "env_steps", "updates": 2, "env_steps": 20, "env_steps_budget": 15}
    assert time_split([*lines, stop])["stop_reason"] == "env_steps"
    assert split["per_update_s"] == {"env_s": 5.5, "generation_s": 2.0, "train_s": 1.0}
    assert split["process_cpu_per_update_s"] == 3.0 and split["clip_fraction"] == [0.05, 0.05]


def test_every_arm_gets_the_same_env_step_budget_capped_by_updates(tmp_path, capsys) -> None:
    """--env-steps reaches every arm's `cua train grpo` as its env_steps, which the config takes."""
    from harness.cli_config import load_config
    from trainers.grpo.config import GRPOConfig

    args = make_parser().parse_args(["--corpus", str(tmp_path), "--model", str(tmp_path / "m"),
                                     "--env-steps", "300", "--updates", "20"])
    for arm in ("outcome", "step", "step+tree"):
        sets = arm_sets(args, arm, 1, tmp_path / arm, ["fsm:shop/open_mug"])
        config = load_config(GRPOConfig, file=CONFIG, sets=sets)
        assert (config.env_steps, config.updates, config.seed) == (300, 20, 1)
    unbudgeted = make_parser().parse_args(["--corpus", str(tmp_path), "--model", str(tmp_path)])
    assert not any(s.startswith("env_steps=") for s in arm_sets(unbudgeted, "step", 0, tmp_path, ["t"]))
    # every arm trains in the SFT model's own prompt (its cua_agent.yaml)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "cua_agent.yaml").write_text(
        "codec: json\nobservation: elements\nsystem_prompt: false\nelement_refs: index\nhistory_images: 1\n")
    sets = arm_sets(args, "step", 0, tmp_path / "step-idx", ["fsm:shop/open_mug"])
    prompt = load_config(GRPOConfig, file=CONFIG, sets=sets).prompt
    assert (prompt.element_refs, prompt.system_prompt, prompt.history_images) == ("index", False, 1)
    # a finished run is reused only under the same budget (the runs of 10 updates had none)
    (tmp_path / "config.yaml").write_text("updates: 10\nenv_steps: null\n")
    check_reused(unbudgeted, tmp_path)
    with pytest.raises(SystemExit, match="env_steps 300, got None; give --runs a new folder"):
        check_reused(args, tmp_path)
    with pytest.raises(SystemExit):
        main(["--corpus", str(tmp_path), "--model", str(tmp_path), "--env-steps", "0"])
    assert "--env-steps: expected a budget of at least 1 env step, got 0" in capsys.readouterr().err
