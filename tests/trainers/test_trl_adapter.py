"""The TRL adapter: its environment class on real FSM sites in real Chromium, the tiny
checkpoint's template under TRL's own tool-calling checks, and TRL's real ``GRPOTrainer``
training the tiny model for two steps with ``environment_factory``.

The trainer test replaces only what the random model writes (a logits processor at the
model seam forces each turn's text): in every GRPO group one rollout clicks the task's
oracle point and one a blank corner, then both call done(); TRL parses the tool calls,
runs them through the adapter in Chromium, feeds the screenshots back as images and
scores the episodes with ``get_reward``.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForImageTextToText, LogitsProcessor, LogitsProcessorList
from transformers.utils import get_json_schema

from harness.actions import ACTION_TYPES
from harness.errors import ConfigError
from harness.prompts import verdict_text
from trainers.adapters.trl_env import (
    CUAEnvironment,
    CUAEnvironments,
    enable_tool_calls,
    task_rows,
)
from trainers.models.processor import load_processor

TASKS = ("fsm:shop/open_mug", "fsm:settings/cfg_location")
TOOLS = ("click", "done", "double_click", "drag", "key", "move", "right_click", "scroll",
         "type_text", "wait")


@pytest.fixture(scope="module")
def envs() -> Iterator[CUAEnvironments]:
    with CUAEnvironments(reward="step") as made:
        yield made


def play_oracle(envs: CUAEnvironments, env: CUAEnvironment) -> list[str]:
    """Follow the task's oracle to the end; the text of every tool answer."""
    texts = []
    while (action := envs.oracle_action(env)) is not None:
        assert action.type == "click"
        answer = env.click(action.x, action.y)
        assert isinstance(answer, list)
        texts.append(answer[1]["text"])
        if "Episode over" in texts[-1]:
            break
    return texts


def test_reset_and_the_tools_step_the_real_env(envs: CUAEnvironments) -> None:
    env = envs.factory(TASKS[0])()
    image, text = env.reset(seed=0, prompt=[{"role": "user", "content": "x"}])
    assert image["type"] == "image" and image["image"].mode == "RGB"
    width, height = image["image"].size
    assert text == {"type": "text", "text": "Instruction: Open the page of Coffee mug.\n"
                    "Previous actions:\n(none)\nNext action:"}  # the prompt builder's opening
    shot, feedback = env.click(width + 5, 3)  # an agent error: the step counts, nothing fires
    assert shot["image"].size == (width, height)
    assert feedback["text"].startswith(f"Last action error: click point ({width + 5}, 3) is outside")
    assert feedback["text"].endswith("\nStep verdict: nothing changed\nNext action:")
    _, feedback = env.key("ctrl+nosuchkey")
    assert "Last action error:" in feedback["text"] and "nosuchkey" in feedback["text"]
    texts = play_oracle(envs, env)
    assert texts == ["Step verdict: closer to the goal (2 -> 1 steps away)\nNext action:",
                     "Step verdict: goal reached\nEpisode over: goal reached"]
    assert env.rewards == (0.0, 0.0, 0.5, 1.5) and env.success
    assert env.get_reward() == 2.0  # the step mode's optimal episode
    assert env.done() == "no action taken: the episode is over (goal reached)"
    assert env.rewards == (0.0, 0.0, 0.5, 1.5)


@pytest.mark.parametrize(("mode", "optimal", "after_done"), [
    ("outcome", 1.0, 0.0), ("progress", 1.0, 0.5), ("step", 2.0, 0.5)])
def test_get_reward_in_each_mode(envs: CUAEnvironments, mode: str, optimal: float,
                                 after_done: float) -> None:
    env = envs.factory(reward=mode)()  # type: ignore[arg-type]
    env.reset(task=TASKS[1], seed=1)
    play_oracle(envs, env)
    assert env.get_reward() == optimal and env.success
    env.reset(task=TASKS[1], seed=1)  # one right step, then done(): the episode ends there
    action = envs.oracle_action(env)
    assert action is not None and action.type == "click"
    env.click(action.x, action.y)
    _, feedback = env.done()
    assert feedback["text"].endswith("Episode over: done, task not completed")
    assert env.get_reward() == after_done and not env.success


def test_rows_pick_the_task(envs: CUAEnvironments) -> None:
    env = envs.factory()()  # no task of its own: every row names one
    for task, instruction in ((TASKS[1], "Share location"), (TASKS[0], "Coffee mug")):
        _, text = env.reset(task=task, seed=0)
        assert instruction in text["text"] and env.env is not None and env.env.task_id == task
    with pytest.raises(ConfigError, match="expected a task id in the dataset's 'task' column"):
        env.reset(seed=0)
    named = envs.factories({"shop": TASKS[0], "settings": TASKS[1]})  # TRL's dict form
    _, text = named["settings"]().reset(seed=0)  # TRL strips the `environment` column
    assert "Share location" in text["text"]
    rows = task_rows(TASKS, [0, 1])
    assert [(r["task"], r["seed"]) for r in rows] == [(t, s) for s in (0, 1) for t in TASKS]
    with pytest.raises(ConfigError, match="did you mean .shop/checkout"):
        task_rows(["fsm:shop/chekout"], [0])


def test_an_infrastructure_failure_voids_the_episode(envs: CUAEnvironments) -> None:
    env = envs.factory(TASKS[0])()
    env.reset(seed=0)
    assert env.env is not None
    envs.run(env.env.sandbox.close())  # type: ignore[attr-defined]  # the browser page is gone
    answer = env.click(10, 10)
    assert isinstance(answer, str) and answer.startswith("no result: infrastructure voided")
    assert env.get_reward() is None and env.env is None  # left out of TRL's group statistics
    assert env.click(10, 10).startswith("no action taken: infrastructure voided")
    env.reset(seed=0)  # a fresh env from the provider
    assert play_oracle(envs, env)[-1].endswith("goal reached") and env.get_reward() == 2.0


def play_oracle_with_every_tool(envs: CUAEnvironments, env: CUAEnvironment) -> list[str]:
    """Follow the oracle, calling the tool named as each action's type; the types."""
    kinds = []
    while env.over is None and (action := envs.oracle_action(env)) is not None:
        fields = action.model_dump(exclude={"type"})
        answer = getattr(env, action.type)(**fields)
        assert isinstance(answer, list) and "error" not in answer[1]["text"], answer
        kinds.append(action.type)
    return kinds


@pytest.mark.parametrize(("task", "kind"), [("fsm:travel/wishlist_1", "drag"),
                                            ("fsm:bank/transfer_limit_tip", "move")])
def test_goals_that_need_a_drag_or_a_hover_are_solved_through_the_tools(
        envs: CUAEnvironments, task: str, kind: str) -> None:
    env = envs.factory(task)()
    env.reset(seed=0)
    assert kind in play_oracle_with_every_tool(envs, env)
    assert env.success and env.over == "goal reached"


def test_tools_have_schemas_and_verdicts_read_short() -> None:
    tools = [name for name, _ in inspect.getmembers(CUAEnvironment, predicate=inspect.isfunction)
             if not name.startswith("_") and name not in ("reset", "get_reward")]
    assert tuple(tools) == TOOLS  # what TRL exposes as tools: nothing else public
    # one tool per action kind, named as its type
    assert {kind.model_fields["type"].default for kind in ACTION_TYPES} == set(TOOLS)
    schemas = {name: get_json_schema(getattr(CUAEnvironment, name))["function"] for name in tools}
    assert schemas["click"]["parameters"]["required"] == ["x", "y"]
    assert schemas["scroll"]["parameters"]["required"] == ["x", "y", "dy"]
    assert schemas["drag"]["parameters"]["required"] == ["x", "y", "to_x", "to_y"]
    assert "required" not in schemas["wait"]["parameters"]  # seconds has a default
    from fsm_sites.serving.verdict import StepVerdict

    base = dict(state_before="a", state_after="b", transition_fired=True, on_shortest_path=False,
                distance_before=2, distance_after=3, goal_reached=False)
    assert verdict_text(StepVerdict(**base)) == "off the shortest path (2 -> 3 steps away)"
    assert verdict_text(StepVerdict(**{**base, "distance_after": None})).startswith("dead end")


def test_the_tiny_template_passes_trls_tool_checks(tiny_dir: Path) -> None:
    from trl.chat_template_utils import (
        is_chat_template_prefix_preserving,
        parse_response,
        supports_tool_calling,
    )

    processor = load_processor(tiny_dir)
    assert supports_tool_calling(processor) and is_chat_template_prefix_preserving(processor)
    tokenizer = processor.tokenizer
    text = '<tool_call>\n{"name": "click", "arguments": {"x": 3, "y": 4}}\n</tool_call><|im_end|>'
    prefix = tokenizer.encode("<|im_start|>assistant\n")
    parsed = parse_response(tokenizer, tokenizer.encode(text), prefix=prefix)
    assert parsed["tool_calls"] == [{"type": "function",
                                     "function": {"name": "click", "arguments": {"x": 3, "y": 4}}}]


def test_a_qwen25_vl_template_gets_tool_calls(tiny_dir: Path) -> None:
    """Qwen2.5-VL's own template (TRL ships a byte-identical copy) renders no tools: TRL
    refuses it; ``enable_tool_calls`` gives the processor ours and the parser."""
    from trl.chat_template_utils import (
        is_chat_template_prefix_preserving,
        qwen2_5_vl_chat_template,
        supports_tool_calling,
    )

    processor = load_processor(tiny_dir)
    processor.chat_template = qwen2_5_vl_chat_template
    processor.tokenizer.response_template = None
    assert not supports_tool_calling(processor)
    assert enable_tool_calls(processor) is processor
    assert supports_tool_calling(processor) and is_chat_template_prefix_preserving(processor)
    assert processor.tokenizer.response_template is not None


class ForceText(LogitsProcessor):
    """Forces each row's completion to ``plan(row's prompt text, row index)`` then EOS."""

    def __init__(self, tokenizer, plan) -> None:  # noqa: ANN001 - test helper
        self.tokenizer, self.plan = tokenizer, plan
        self.start: int | None = None
        self.targets: list[list[int]] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.start is None:
            self.start = input_ids.shape[1]
            eos = self.tokenizer.eos_token_id
            self.targets = [self.tokenizer.encode(self.plan(text, i)) + [eos] for i, text
                            in enumerate(self.tokenizer.batch_decode(input_ids))]
        at = input_ids.shape[1] - self.start
        forced = torch.full_like(scores, float("-inf"))
        for row, target in enumerate(self.targets):
            forced[row, target[min(at, len(target) - 1)]] = 0.0
        return forced


def call(name: str, **arguments: int) -> str:
    args = ", ".join(f'"{k}": {v}' for k, v in arguments.items())
    return f'<tool_call>\n{{"name": "{name}", "arguments": {{{args}}}}}\n</tool_call>'


@pytest.mark.slow
def test_grpo_trainer_trains_the_tiny_model_on_our_envs(envs: CUAEnvironments, tiny_dir: Path,
                                                        tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    oracle = {}
    for task in TASKS:
        probe = envs.factory(task)()
        instruction = probe.reset(seed=0)[1]["text"].split("\n")[0]
        action = envs.oracle_action(probe)
        assert action is not None and action.type == "click"
        oracle[instruction] = (action.x, action.y)

    def plan(prompt: str, row: int) -> str:
        turn = prompt.count("<tool_response>")
        if turn == 0:  # rows alternate within each group: the oracle point, a blank corner
            [instruction] = [i for i in oracle if i in prompt]
            x, y = oracle[instruction] if row % 2 == 0 else (3, 3)
            return call("click", x=x, y=y)
        return call("done") if turn == 1 else "finished"

    processor = load_processor(tiny_dir)
    model = AutoModelForImageTextToText.from_pretrained(tiny_dir, dtype=torch.float32)
    images_seen: list[int] = []
    generate = model.generate

    def scripted_generate(*args, **kwargs):  # noqa: ANN002, ANN003 - the model seam
        images_seen.append(int(kwargs["image_grid_thw"].shape[0]))
        kwargs["logits_processor"] = LogitsProcessorList([ForceText(processor.tokenizer, plan)])
        return generate(*args, **kwargs)

    model.generate = scripted_generate
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=2,
                      num_generations=2, max_completion_length=512, learning_rate=1e-2, beta=0.0,
                      bf16=False, use_cpu=True, gradient_checkpointing=False, logging_steps=1,
                      save_strategy="no", report_to="none", max_tool_calling_iterations=4, seed=0)
    trainer = GRPOTrainer(model=model, args=args, processing_class=processor,
                          train_dataset=Dataset.from_list(task_rows(TASKS, [0])),
                          environment_factory=envs.factory())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        trainer.train()
    finally:
        torch.set_num_threads(threads)

    logs = [entry for entry in trainer.state.log_history if "rewards/CUAEnvironment/mean" in entry]
    assert len(logs) == 2
    for entry in logs:  # per group: the oracle click earns 1/d0 = 0.5 in step mode, the corner 0
        assert entry["rewards/CUAEnvironment/mean"] == pytest.approx(0.25)
        assert entry["frac_reward_zero_std"] == 0.0
        assert entry["tools/call_frequency"] == 2.0 and entry["tools/failure_frequency"] == 0.0
    # per turn, two rollouts: their first screenshot, then one more per tool answer
    assert images_seen == [2, 4, 6] * 2
    changed = [n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed, "expected GRPO to move the weights (the groups' rewards differ)"
