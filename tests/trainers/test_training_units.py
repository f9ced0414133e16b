"""The pure parts of `cua train`: the dead-signal check, the report's charts and its
de-duplication of resumed steps, agent specs and commands, config validation, pairs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.prompts import Prompt, PromptConfig
from trainers.charts import eval_chart
from trainers.errors import TrainingDataError, TrainingSignalError
from trainers.training.config import DPOConfig, DPOOptions, EvalSpec, SFTConfig
from trainers.training.data import preference_examples
from trainers.training.evaluate import agent_spec, eval_command
from trainers.training.metrics import check_signal
from trainers.training.report import latest_by_step


def test_check_signal_refuses_a_dead_loss_and_accepts_a_fitted_one() -> None:
    check_signal({"loss": 2.3}, step=1, first=True)
    check_signal({"loss": 0.0}, step=400, first=False)  # a model that fits its rows
    check_signal({"learning_rate": 0.1}, step=3, first=True)  # not a loss line
    with pytest.raises(TrainingSignalError, match="exactly 0.0 at step 1"):
        check_signal({"loss": 0.0}, step=1, first=True)
    for bad in (math.nan, math.inf):
        with pytest.raises(TrainingSignalError, match=f"expected a finite training loss, got {bad} at step 7"):
            check_signal({"loss": bad}, step=7, first=False)


def test_latest_by_step_keeps_the_last_line_of_each_step_in_order() -> None:
    records = [{"event": "train", "step": 2, "loss": 5.0}, {"event": "eval", "phase": "before"},
               {"event": "train", "step": 1, "loss": 6.0}, {"event": "train", "step": 2, "loss": 4.0}]
    assert latest_by_step(records) == [{"event": "train", "step": 1, "loss": 6.0},
                                       {"event": "train", "step": 2, "loss": 4.0}]


def test_eval_chart_draws_each_phase_and_metric_with_its_value_and_interval() -> None:
    svg = eval_chart({"before": {"success_rate": 0.0, "success_ci": [0.0, 0.3], "progress": 0.25},
                      "after": {"success_rate": 0.5, "success_ci": [0.2, 0.8], "progress": 1.0}})
    assert svg.startswith("<svg") and "<?xml" not in svg  # embeddable as it is
    assert svg.count('id="patch_') >= 5  # the background and four bars
    for label in (">0%<", ">50%<", ">25%<", ">100%<", ">before<", ">after<", ">success rate<"):
        assert label in svg, label
    assert 'id="xtick_' in svg and 'id="ytick_' in svg and 'id="legend_' in svg
    assert svg.count('id="LineCollection_') == 2  # an error bar (the Wilson interval) per phase


def test_agent_spec_and_command_reproduce_the_evaluation() -> None:
    spec = EvalSpec(tasks=["fsm:shop/open_mug", "fsm:mail/star_m1"], seed=100, episodes=3, max_steps=10)
    prompt = PromptConfig(codec="json", observation="elements", system_prompt=False)
    assert agent_spec(Path("m"), spec, prompt) == (
        "hf:m?codec=json&coordinates=pixel&history_images=1&system_prompt=false"
        "&observation=elements&element_refs=label&max_new_tokens=48&temperature=0.0")
    assert agent_spec(Path("m"), spec) == "hf:m?max_new_tokens=48&temperature=0.0"
    assert eval_command("hf:m?x=1&y=2", spec, Path("o")) == (
        "cua eval --suite fsm:shop/open_mug+fsm:mail/star_m1 --agent 'hf:m?x=1&y=2' --episodes 3 "
        "--seed 100 --concurrency 4 --out o --max-steps 10")


def test_configs_refuse_what_cannot_train_all_at_once() -> None:
    with pytest.raises(ValidationError) as caught:
        SFTConfig.model_validate({"out": "o", "model": {"path": "m"}, "data": {
            "store": "s", "prompt": {"codec": "qwen2"}}, "train": {"max_steps": 0}})
    problems = {".".join(map(str, e["loc"])) for e in caught.value.errors()}
    assert problems == {"model", "data.prompt", "train.max_steps"}
    with pytest.raises(ValidationError, match="one loss weight per loss type"):
        DPOOptions(loss_type=["sigmoid", "sft"], loss_weights=[1.0])


def _sft(**train: object) -> dict:
    return {"out": "o", "model": {"path": "m", "finetune": "full"}, "data": {"store": "s"}, "train": train}


def test_train_trl_wins_over_what_cua_train_sets_and_conflicts_are_refused(tiny_policy) -> None:
    from trl import SFTConfig as TRLConfig

    from trainers.training.run import Run

    config = SFTConfig.model_validate(_sft(trl={"bf16": True, "learning_rate": 0.01, "logging_first_step": False}))
    assert config.train.learning_rate == 0.01 and config.train.trl == {"bf16": True, "logging_first_step": False}
    args = Run(config, "sft").trainer_args(TRLConfig, tiny_policy)  # the docs' own example
    assert args.bf16 and args.learning_rate == 0.01 and not args.logging_first_step
    with pytest.raises(ValidationError, match=r"train.learning_rate or trl.learning_rate, got both \(0.1 and 0.01\)"):
        SFTConfig.model_validate(_sft(learning_rate=0.1, trl={"learning_rate": 0.01}))
    with pytest.raises(ValidationError, match="expected no trl.output_dir .*--resume looks"):
        SFTConfig.model_validate(_sft(trl={"output_dir": "elsewhere"}))
    dpo = DPOConfig.model_validate({**_sft(trl={"beta": 0.3, "bf16": True}), "dpo": {"loss_type": ["sft"]}})
    assert dpo.dpo.beta == 0.3 and dpo.dpo.loss_type == ["sft"] and dpo.train.trl == {"bf16": True}
    with pytest.raises(ValidationError, match="dpo.beta or trl.beta, got both"):
        DPOConfig.model_validate({**_sft(trl={"beta": 0.3}), "dpo": {"beta": 0.1}})
    with pytest.raises(ValidationError, match=r"expected \[none\] alone"):
        SFTConfig.model_validate(_sft(report_to=["none", "wandb"]))


def test_pairs_whose_replies_read_the_same_are_left_out() -> None:
    rows = [{"id": "a", "prompt": [], "images": [], "chosen": [_reply("x")], "rejected": [_reply("y")]},
            {"id": "b", "prompt": [], "images": [], "chosen": [_reply("x")], "rejected": [_reply("x")]}]
    [pair] = preference_examples(rows, Path("dpo.parquet"))
    assert (pair.id, pair.chosen, pair.rejected, pair.prompt) == ("a", "x", "y", Prompt([], [], []))
    with pytest.raises(TrainingDataError, match="got only pairs whose two replies are the same"):
        preference_examples(rows[1:], Path("dpo.parquet"))


def _reply(text: str) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}
