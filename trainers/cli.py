"""``cua train sft|dpo|grpo|heldout --config FILE.yaml [--set path.to.field=value] [--resume]``.

One command group over SFT/DPO (``trainers.training``) and GRPO (``trainers.grpo``), so it
lives above both: ``trainers.training`` imports nothing of ``trainers.grpo``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import typer
from rich.console import Console

from harness.cli_config import config_command, print_json
from harness.prompts import PromptConfig
from trainers.agents.options import read_agent_file
from trainers.errors import ModelDirError
from trainers.grpo.config import GRPOConfig
from trainers.models.policy import PolicyConfig, load_policy, require_train_extra
from trainers.training.config import DPOConfig, HeldoutScoreConfig, SFTConfig

console = Console()


def run_sft(config: SFTConfig) -> None:
    from trainers.training.sft import train_sft

    require_train_extra()
    console.print(f"report: {train_sft(config).resolve()}", soft_wrap=True)


def run_grpo(config: GRPOConfig) -> None:
    from trainers.grpo.train import train_grpo

    report = train_grpo(config)
    if int(os.environ.get("RANK", "0")) == 0:  # data parallel: one line, from the main process
        console.print(f"report: {report.resolve()}", soft_wrap=True)


def run_heldout(config: HeldoutScoreConfig) -> None:
    from trainers.training.heldout import HeldoutProbe

    require_train_extra()
    if not (config.model / "config.json").is_file() and not (config.model / "adapter_config.json").is_file():
        raise ModelDirError(f"--model: expected a checkpoint directory, got {config.model}, which has "
                            "no config.json; pass OUT/model of a training run or a `cua model init` folder")
    saved = read_agent_file(config.model)
    prompt = PromptConfig(**{k: v for k, v in saved.items() if k in PromptConfig.model_fields})
    with tempfile.TemporaryDirectory() as work:
        probe = HeldoutProbe.load(config, prompt, Path(work))
        policy = load_policy(PolicyConfig(path=config.model, device=config.device))
        print_json({"model": str(config.model), "states_from": str(config.states), **probe.measure(policy)})


def run_dpo(config: DPOConfig) -> None:
    from trainers.training.dpo import train_dpo

    require_train_extra()
    console.print(f"report: {train_dpo(config).resolve()}", soft_wrap=True)


_DOC = ("{what} Reads the store's {fmt} export (collecting oracle data into an empty store "
        "first when the config says how), evaluates the model before and after, and writes "
        "OUT/checkpoints, OUT/model (with cua_agent.yaml), OUT/metrics.jsonl and OUT/report.html. "
        "Example: cua train {kind} --config trainers/configs/{kind}-tiny.yaml")


def register(app: typer.Typer) -> None:
    """Add `cua train sft|dpo|grpo|heldout` to the CLI."""
    train_app = typer.Typer(help="Train a policy: on the store's exports (sft, dpo: TRL) or online (grpo).", no_args_is_help=True)
    train_app.command("sft")(config_command(SFTConfig, run_sft, name="train sft", doc=_DOC.format(
        what="Supervised fine-tuning on TRL's SFTTrainer.", fmt="SFT", kind="sft")))
    train_app.command("dpo")(config_command(DPOConfig, run_dpo, name="train dpo", doc=_DOC.format(
        what="Preference optimisation on TRL's DPOTrainer.", fmt="DPO", kind="dpo")))
    train_app.command("grpo")(config_command(GRPOConfig, run_grpo, name="train grpo", doc=(
        "Online GRPO in live sandboxes: G episodes per task through the one rollout path, "
        "verified step rewards, episode- and step-level advantages, tree rollouts from restored "
        "states, a curriculum, PPO-clip with a k3 KL. Writes OUT/metrics.jsonl, OUT/report.html, "
        "OUT/checkpoints (resume: true continues exactly) and OUT/model. "
        "Example: cua train grpo --config trainers/configs/grpo-tiny.yaml")))
    train_app.command("heldout")(config_command(
        HeldoutScoreConfig, run_heldout, name="train heldout", exclude=frozenset({"every"}), doc=(
            "The dense held-out metric of a checkpoint: on held-out states (an SFT export, or a "
            "store of oracle episodes on held-out tasks), the share where the greedy reply is the "
            "oracle's next step (teacher-forced exact match), the token accuracy and NLL; one JSON "
            "line. Example: cua train heldout --model runs/sft-tiny/model --states corpus/heldout/sft.parquet")))
    app.add_typer(train_app, name="train")
