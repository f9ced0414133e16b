"""Evaluate a checkpoint the way ``cua eval`` would: the ``hf:`` agent from the registry,
the episode runner, ``summary.json`` and ``report.html``.

The starting model is evaluated with the run's prompt in the agent spec's query; the trained
one through its own ``cua_agent.yaml`` (written beside the weights with that prompt), so the
evaluation also checks that the saved checkpoint carries its prompt format.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from harness.agents.registry import make_agent
from harness.evaluation.passes import evaluation_passes, run_passes
from harness.evaluation.report import write_report
from harness.evaluation.summary import write_summary
from harness.prompts import PromptConfig
from harness.runner import RunnerConfig
from trainers.agents.options import AGENT_FILE
from trainers.training.config import EvalSpec, task_ids


def agent_spec(model_dir: Path, spec: EvalSpec, prompt: PromptConfig | None = None) -> str:
    """``hf:DIR?max_new_tokens=..&temperature=..`` (and the prompt's fields, when given)."""
    query: dict[str, Any] = {}
    if prompt is not None:
        query.update({k: v for k, v in prompt.model_dump().items() if v is not None})
    query.update(max_new_tokens=spec.max_new_tokens, temperature=spec.temperature)
    text = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in query.items()}
    return f"hf:{model_dir}?{urlencode(text)}"


def eval_command(agent: str, spec: EvalSpec, out: Path) -> str:
    """The ``cua eval`` command that runs the same evaluation on its own."""
    args = ["cua", "eval", "--suite", "+".join(spec.tasks), "--agent", agent,
            "--episodes", str(spec.episodes), "--seed", str(spec.seed),
            "--concurrency", str(spec.concurrency), "--out", str(out)]
    if spec.max_steps is not None:
        args += ["--max-steps", str(spec.max_steps)]
    if spec.samples:
        args += ["--samples", str(spec.samples), "--sample-temperature", str(spec.sample_temperature)]
    return shlex.join(args)


def write_agent_file(model_dir: Path, prompt: PromptConfig) -> Path:
    """``cua_agent.yaml`` beside saved weights: the prompt format they were trained with."""
    path = Path(model_dir) / AGENT_FILE
    fields = {k: v for k, v in prompt.model_dump().items() if v is not None}
    path.write_text(yaml.safe_dump(fields, sort_keys=True), encoding="utf-8")
    return path


def evaluate(model_dir: Path, spec: EvalSpec, out: Path, *, prompt: PromptConfig | None = None,
             title: str = "cua train eval") -> dict[str, Any]:
    """Run the evaluation into ``out``; returns its summary plus the agent spec and the
    equivalent ``cua eval`` command."""
    agent_text = agent_spec(model_dir, spec, prompt)
    passes = evaluation_passes(
        make_agent(agent_text), task_ids(spec.tasks),
        RunnerConfig(concurrency=spec.concurrency, max_steps=spec.max_steps, screenshot_max_side=480),
        episodes=spec.episodes, seed=spec.seed, samples=spec.samples,
        temperature=spec.sample_temperature)
    records = run_passes(passes, out)
    summary = write_summary(out / "summary.json", records)
    write_report(out / "report.html", summary, records, title=f"{title} · {agent_text}")
    return {**summary, "agent": agent_text, "command": eval_command(agent_text, spec, out)}
