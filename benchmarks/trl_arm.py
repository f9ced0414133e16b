"""The TRL side of ``bench_adapters``: TRL's ``GRPOTrainer`` driving our env through the
adapter (``trainers.adapters.trl_env``), on the tasks and settings of a ``cua train grpo``
config, until it has taken a budget of env steps.

    python -m benchmarks.trl_arm --config trainers/configs/grpo-tiny.yaml --model M --out DIR \
        --env-steps 140 [--set key=value ...]

The adapter's own ``CUAEnvironment`` speaks screenshots and pixel tools (``click(x, y)``);
a model that ``cua train sft`` / ``cua train grpo`` trained in the element-list mode never
saw either. ``ElementEnvironment`` is the same adapter environment (its reset, step,
reward, episode voiding and env host) seen the way our GRPO's rollouts see it: each answer
is the project's prompt text (``harness.prompts.PromptBuilder``: instruction, element list,
previous actions, last error) and the one tool is Qwen's ``computer_use``, decoded by our
``qwen`` codec, so a model trained with ``prompt.codec=qwen`` drives TRL unchanged.

Counting is done in the environment, not guessed from TRL's logs: every tool call that
stepped the env (one reward appended) is an env step; resets, episodes and the seconds
spent in the env are counted too. TRL generates, per generation batch, ``group.tasks``
prompts x ``group.size`` rollouts (our update's episodes); a callback stops training at the
first generation boundary where the env steps reach ``--env-steps``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from harness.cli_config import load_config
from harness.codecs.qwen import TOOL_NAME
from harness.env_providers import EnvOptions
from harness.prompts import HistoryEntry, PromptBuilder
from trainers.adapters.trl_env import CUAEnvironment, CUAEnvironments, TRLAdapterConfig
from trainers.grpo.config import GRPOConfig


@dataclass
class Tally:
    """What the environments of one run did (shared by every rollout's environment)."""

    env_steps: int = 0
    tool_calls: int = 0
    resets: int = 0
    episodes: int = 0
    successes: int = 0
    env_s: float = 0.0
    generate_s: float = 0.0
    generations: int = 0


class ElementEnvironment:
    """One rollout for TRL in our GRPO's prompt format (see the module docstring)."""

    def __init__(self, envs: CUAEnvironments, options: EnvOptions, builder: PromptBuilder,
                 tally: Tally) -> None:
        self._episode = CUAEnvironment(envs, None, options)
        self._builder, self._tally = builder, tally
        self._history: list[HistoryEntry] = []

    def reset(self, **row: Any) -> str:
        """Start the row's episode; the first prompt text."""
        started = time.perf_counter()
        self._episode.reset(**row)
        self._history = []
        self._tally.resets += 1
        self._tally.env_s += time.perf_counter() - started
        return self._prompt_text()

    def computer_use(self, action: str, element: str | None = None,
                     coordinate: list[int] | None = None, text: str | None = None,
                     keys: list[str] | None = None) -> str:
        """Use the mouse and keyboard on the page.

        Args:
            action: One of left_click, double_click, right_click, type, key, scroll, terminate.
            element: The label of the element to click, as the element list shows it.
            coordinate: [x, y] pixels of the point to click, instead of an element.
            text: The text to type.
            keys: The keys to press, modifiers first.
        """
        arguments = {k: v for k, v in (("action", action), ("element", element),
                                       ("coordinate", coordinate), ("text", text), ("keys", keys))
                     if v is not None}
        call = f"<tool_call>\n{json.dumps({'name': TOOL_NAME, 'arguments': arguments})}\n</tool_call>"
        env = self._episode.env
        before = env.last_observation if env is not None else None
        taken = len(self._episode.rewards)
        started = time.perf_counter()
        # The env decodes the text with the qwen codec, as in our own rollouts: a call it
        # cannot parse is the agent's error in the next observation, and still a step.
        answer = self._episode._act(cast(Any, call))
        self._tally.env_s += time.perf_counter() - started
        self._tally.tool_calls += 1
        if len(self._episode.rewards) == taken or before is None:
            return answer if isinstance(answer, str) else "no action taken"
        self._tally.env_steps += 1
        executed = self._episode.last_step
        self._history.append((executed.action if executed is not None else None,
                              (before.width, before.height), before.elements))
        if isinstance(answer, str):
            return answer
        if self._episode.over is not None:  # nothing follows; TRL's loop may still call tools
            return f"episode over: {self._episode.over}"
        return self._prompt_text()

    def get_reward(self) -> float | None:
        """The adapter's episode reward (the sum of its step rewards in the run's mode)."""
        self._tally.episodes += 1
        self._tally.successes += int(self._episode.success)
        return self._episode.get_reward()

    def _prompt_text(self) -> str:
        env = self._episode.env
        obs = env.last_observation if env is not None else None
        if obs is None:
            return "no observation: infrastructure voided the episode"
        prompt = self._builder.build(instruction=obs.instruction, history=self._history, images=[],
                                     image_steps=[], error=obs.last_action_error,
                                     elements=obs.elements)
        return "\n".join(part["text"] for message in prompt.messages for part in message["content"]
                         if part.get("type") == "text")


def _stop_at(tally: Tally, budget: int, every: int) -> Any:
    from transformers import TrainerCallback

    class StopAtEnvSteps(TrainerCallback):  # type: ignore[misc]
        """Stop at the first generation boundary where the env-step budget is spent."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if state.global_step % every == 0 and tally.env_steps >= budget:
                control.should_training_stop = True
            return control

    return StopAtEnvSteps()


def train(config: GRPOConfig, model_dir: Path, out: Path, budget: int, max_generations: int,
          max_completion_length: int) -> dict[str, Any]:
    """Run TRL's GRPOTrainer on ``config``'s tasks from ``model_dir`` until ``budget`` env
    steps; save the model to ``out/model``; return the tally and TRL's log."""
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    import torch
    from datasets import Dataset
    from transformers import AutoModelForImageTextToText
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    from trainers.adapters.trl_env import task_rows
    from trainers.models.processor import load_processor
    from trainers.training.evaluate import write_agent_file

    torch.set_num_threads(config.threads or torch.get_num_threads())
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    processor = load_processor(model_dir)
    tally = Tally()
    generate = model.generate

    def timed_generate(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return generate(*args, **kwargs)
        finally:
            tally.generate_s += time.perf_counter() - started
            tally.generations += 1

    model.generate = timed_generate
    options = EnvOptions(codec="qwen", reward=config.reward, max_steps=config.rollout.max_steps,
                         elements=True)
    builder = PromptBuilder(config.prompt)
    iterations = config.loss.epochs
    args = TRLConfig(
        output_dir=str(out / "trl"), max_steps=max_generations * iterations,
        per_device_train_batch_size=config.group.tasks * config.group.size,
        num_generations=config.group.size, num_iterations=iterations,
        learning_rate=config.loss.learning_rate, beta=config.loss.kl_coef,
        temperature=config.rollout.temperature, max_completion_length=max_completion_length,
        max_tool_calling_iterations=config.rollout.max_steps, use_cpu=True, bf16=False,
        gradient_checkpointing=False, logging_steps=1, save_strategy="no", report_to="none",
        seed=config.seed)
    started = time.perf_counter()
    with CUAEnvironments(TRLAdapterConfig(env=options, verdicts=False)) as envs:
        rows = task_rows(config.tasks, config.group.seeds, prompt="")
        trainer = GRPOTrainer(
            model=model, args=args, processing_class=processor,
            train_dataset=Dataset.from_list(rows),
            environment_factory=lambda: ElementEnvironment(envs, options, builder, tally),
            callbacks=[_stop_at(tally, budget, iterations)])
        trainer.train()
        train_s = time.perf_counter() - started
        trainer.save_model(str(out / "model"))
    processor.save_pretrained(out / "model")
    write_agent_file(out / "model", config.prompt)
    log = [entry for entry in trainer.state.log_history if "loss" in entry]
    return {"trainer_s": round(train_s, 2), "optimizer_steps": trainer.state.global_step,
            "generation_batches": trainer.state.global_step // iterations, **asdict(tally),
            "trl_log": log}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True, help="a `cua train grpo` config")
    parser.add_argument("--set", dest="sets", action="append", default=[], help="key=value override")
    parser.add_argument("--model", type=Path, required=True, help="the model to start from")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--env-steps", type=int, required=True, help="the env-step budget")
    parser.add_argument("--max-generations", type=int, default=12,
                        help="stop after this many generation batches even below the budget")
    parser.add_argument("--max-completion-length", type=int, default=2048)
    args = parser.parse_args(argv)
    config = load_config(GRPOConfig, file=args.config, sets=args.sets)
    args.out.mkdir(parents=True, exist_ok=True)
    result = train(config, args.model, args.out, args.env_steps, args.max_generations,
                   args.max_completion_length)
    (args.out / "trl_arm.json").write_text(json.dumps(result, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
