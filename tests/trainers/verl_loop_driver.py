"""Runs in ``.venv-verl`` (verl 0.9.1), started by test_verl_loop.py: one FSM episode through
the ``cua_agent`` loop, instantiated the way verl's ``AgentLoopWorker`` does, with verl's
real ``LLMServerClient`` whose Ray actor handles (the load balancer and the server, its
transport seam) are replaced by in-process ones serving the tiny model. Writes what the
test checks as JSON.

    .venv-verl/bin/python tests/trainers/verl_loop_driver.py MODEL_DIR OUT.json

The model's text is the tiny model's own on the first turn (random: the agent's mistake),
then the oracle's actions, forced token by token by a logits processor at the model seam.
The episode is written to a real trajectory store (``cua.store``); a second episode, whose
server never answers, must end at ``cua.episode_timeout_s`` and leave nothing in the store.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import torch
from hydra.errors import InstantiationException
from omegaconf import OmegaConf
from transformers import AutoModelForImageTextToText, LogitsProcessor, LogitsProcessorList
from verl.experimental.agent_loop.agent_loop import (
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.protocol import DataProto
from verl.trainer.ppo.ray_trainer import compute_advantage
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.rollout.replica import TokenOutput

from harness.env import AsyncEnv
from harness.env_providers import EnvOptions
from harness.errors import ConfigError, EpisodeTimeout
from harness.prompts import PromptBuilder, PromptConfig
from harness.store.store import TrajectoryStore
from trainers.adapters import verl_loop
from trainers.adapters.host import shared_host
from trainers.errors import GenerationError
from trainers.models.processor import load_processor

TASK, SEED, CODEC = "fsm:shop/open_mug", 3, "json"
PROMPT = [{"role": "system", "content": "You operate a computer."},
          {"role": "user", "content": "Complete the task."}]
CONFIG = {
    "actor_rollout_ref": {"rollout": {
        "name": "vllm", "prompt_length": 4096, "response_length": 2048, "full_determinism": False,
        "multi_turn": {"max_assistant_turns": 6}}},
    "data": {"apply_chat_template_kwargs": {}, "mm_processor_kwargs": {}},
    "cua": {"reward": "step", "codec": CODEC},
}


class ActorMethod:
    """A Ray actor method's ``.remote`` (an awaitable), run in this process."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def remote(self, *args: Any, **kwargs: Any) -> asyncio.Future:
        return asyncio.ensure_future(self.fn(*args, **kwargs))


class Forced(LogitsProcessor):
    """Forces the scripted tokens, one per generation step (the model still runs)."""

    def __init__(self, ids: list[int], start: int) -> None:
        self.ids, self.start = ids, start

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        step = input_ids.shape[1] - self.start
        forced = torch.full_like(scores, float("-inf"))
        forced[:, self.ids[min(step, len(self.ids) - 1)]] = 0.0
        return forced


class TinyServer:
    """The rollout server's ``generate`` on the tiny model: the first call generates freely
    (vision tokens suppressed), the later ones the scripted texts."""

    def __init__(self, model_dir: str, processor: Any, scripted: list[str]) -> None:
        self.model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.processor, self.scripted, self.calls = processor, scripted, 0
        self.generate = ActorMethod(self._generate)
        tokenizer = processor.tokenizer
        self.end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.vision = tokenizer.convert_tokens_to_ids(
            ["<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"])

    async def _generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict,
                        image_data: list | None = None, **_: Any) -> TokenOutput:
        vision = self.processor.image_processor(images=image_data, return_tensors="pt")
        inputs = {"input_ids": torch.tensor([prompt_ids]),
                  "attention_mask": torch.ones(1, len(prompt_ids), dtype=torch.long),
                  "pixel_values": vision["pixel_values"], "image_grid_thw": vision["image_grid_thw"]}
        if self.calls == 0:
            kwargs: dict[str, Any] = {"max_new_tokens": 8, "do_sample": True,
                                      "suppress_tokens": self.vision}
        else:
            ids = self.processor.tokenizer.encode(self.scripted[self.calls - 1],
                                                  add_special_tokens=False) + [self.end]
            kwargs = {"max_new_tokens": len(ids), "do_sample": False,
                      "logits_processor": LogitsProcessorList([Forced(ids, len(prompt_ids))])}
        self.calls += 1
        with torch.no_grad():
            out = self.model.generate(**inputs, **kwargs, pad_token_id=self.end)
        return TokenOutput(token_ids=out[0, len(prompt_ids):].tolist(), stop_reason="completed")


class SilentServer:
    """A rollout server that takes the request and never answers (a stuck engine), or
    (``broken``) fails it."""

    def __init__(self, *, broken: bool = False) -> None:
        self.calls, self.broken = 0, broken
        self.generate = ActorMethod(self._generate)

    async def _generate(self, **_: Any) -> TokenOutput:
        self.calls += 1
        if self.broken:
            raise RuntimeError("engine died")
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class LoadBalancer:
    """The global load balancer actor: one server."""

    def __init__(self, server: TinyServer | SilentServer) -> None:
        self.server, self.released = server, 0
        self.require_acquire_fields = ActorMethod(self._fields)
        self.require_release_fields = ActorMethod(self._fields)
        self.acquire_server = ActorMethod(self._acquire)
        self.release_server = ActorMethod(self._release)

    async def _fields(self) -> list[str]:
        return []

    async def _acquire(self, request_id: str, **_: Any) -> tuple[str, TinyServer | SilentServer]:
        return "tiny-0", self.server

    async def _release(self, server_id: str, **_: Any) -> None:
        self.released += 1


def oracle_texts() -> list[str]:
    """The oracle's actions from the same start, in the codec's syntax."""
    host = shared_host("local")
    builder = PromptBuilder(PromptConfig(codec=CODEC))
    env = host.open(TASK, EnvOptions(codec=CODEC, reward="step"))
    try:
        obs, _ = host.run(env.reset(seed=SEED))
        texts, done = [], False
        while not done:
            action = host.run(env.oracle_action())
            texts.append(builder.action_text(action, (obs.width, obs.height)))
            obs, _, terminated, truncated, _ = host.run(env.step(texts[-1]))
            done = terminated or truncated
        return texts
    finally:
        host.release(env)


def runs(mask: list[int]) -> list[tuple[int, int, int]]:
    """(value, start, end) runs of the mask."""
    out: list[tuple[int, int, int]] = []
    for i, v in enumerate(mask):
        if out and out[-1][0] == v:
            out[-1] = (v, out[-1][1], i + 1)
        else:
            out.append((v, i, i + 1))
    return out


async def refusals(make_loop: Any) -> dict[str, str]:
    """The errors of a bad ``cua`` section and of a row without a task."""
    out = {}
    try:
        make_loop({**CONFIG, "cua": {"reward": "bogus", "colour": "red"}})
    except InstantiationException as exc:  # hydra wraps the class's error, as in verl
        assert isinstance(exc.__cause__, ConfigError)
        out["config"] = str(exc.__cause__)
    try:
        await make_loop(CONFIG).run({}, raw_prompt=PROMPT, extra_info={"seed": 1})
    except ConfigError as exc:
        out["row"] = str(exc)
    return out


def record_observations() -> list[tuple[Any, Any]]:
    """From now on, every env observation as it leaves ``AsyncEnv`` and its step's verdict."""
    seen: list[tuple[Any, Any]] = []
    reset, step = AsyncEnv.reset, AsyncEnv.step

    async def recording_reset(self: AsyncEnv, **kwargs: Any) -> Any:
        obs, info = await reset(self, **kwargs)
        seen.append((obs, None))
        return obs, info

    async def recording_step(self: AsyncEnv, action: Any, **kwargs: Any) -> Any:
        result = await step(self, action, **kwargs)
        seen.append((result[0], result[4].verdict))
        return result

    AsyncEnv.reset, AsyncEnv.step = recording_reset, recording_step  # type: ignore[method-assign]
    return seen


def builders_transcript(messages: list[dict], seen: list[tuple[Any, Any]]) -> dict[str, Any]:
    """The loop's last ``messages`` and the prompt builder's transcript of the same
    observations (its opening added to PROMPT, then each step's feedback after the model's
    reply; none after the last step), image parts as the builder writes them."""
    builder = PromptBuilder(PromptConfig(codec=CODEC))
    system, user = builder.opening(seen[0][0]).messages
    expected = [{"role": "system", "content": [{"type": "text", "text": PROMPT[0]["content"]}, *system["content"]]},
                {"role": "user", "content": [{"type": "text", "text": PROMPT[1]["content"]}, *user["content"]]}]
    replies = [m for m in messages if m["role"] == "assistant"]
    for reply, (obs, verdict) in zip(replies, seen[1:-1], strict=True):
        expected += [reply, *builder.feedback(obs, verdict).messages]
    images = [part["image"] for m in messages if isinstance(m["content"], list)
              for part in m["content"] if part["type"] == "image"]
    plain = [{**m, "content": [{"type": "image"} if p["type"] == "image" else p for p in m["content"]]
              if isinstance(m["content"], list) else m["content"]} for m in messages]
    return {"loop": plain, "builder": expected, "images_are_the_screenshots": [
        image.tobytes() == obs.image().convert("RGB").tobytes() for image, (obs, _) in zip(images, seen, strict=False)]}


def store_contents(store_dir: Path) -> dict[str, Any]:
    """What the store holds: its episodes, and the steps' agent records of the first."""
    with TrajectoryStore(store_dir, read_only=True) as store:
        episodes = store.episodes()
        records = [agent for _, _, agent in store.episode_steps(episodes[0].id)] if episodes else []
        return {"episodes": [[e.task_id, e.agent, e.steps, e.success, e.reward] for e in episodes],
                "completions": [r.get("completion") for r in records],
                "token_counts": [len(r.get("token_ids") or []) for r in records],
                "prompt_counts": [len(r.get("prompt_token_ids") or []) for r in records],
                "images": [len(r.get("images") or []) for r in records]}


async def failed(make_loop: Any, store_dir: Path, *, broken: bool) -> dict[str, Any]:
    """An episode whose server never answers (under a short episode timeout) or fails."""
    server = SilentServer(broken=broken)
    config = {**CONFIG, "cua": {**CONFIG["cua"], "store": str(store_dir), "episode_timeout_s": 8}}
    began = time.monotonic()
    try:
        await make_loop(config, LoadBalancer(server)).run(
            {"temperature": 1.0}, raw_prompt=PROMPT, extra_info={"task": TASK, "seed": SEED})
    except (EpisodeTimeout, GenerationError) as exc:
        return {"error": str(exc), "type": type(exc).__name__, "seconds": time.monotonic() - began,
                "server_calls": server.calls}
    return {"error": None, "server_calls": server.calls}


async def main(model_dir: str, out_path: str) -> None:
    processor = load_processor(model_dir)
    tokenizer = processor.tokenizer
    scripted = oracle_texts()
    server = TinyServer(model_dir, processor, scripted)
    balancer = LoadBalancer(server)

    store_dir = Path(out_path).with_name("store")

    def make_loop(fields: dict, handle: LoadBalancer = balancer) -> Any:  # as AgentLoopWorker._run_agent_loop does
        config = OmegaConf.create(fields)
        return hydra.utils.instantiate(
            config=_agent_loop_registry[verl_loop.AGENT_NAME], trainer_config=DictConfigWrap(config),
            server_manager=LLMServerClient(config, load_balancer_handle=handle),
            tokenizer=tokenizer, processor=processor, hf_model_type="qwen2_5_vl",
            dataset_cls=RLHFDataset, data_config=DictConfigWrap(config.data),
            tools=ToolListWrap([]))

    refused = await refusals(make_loop)
    loop = make_loop({**CONFIG, "cua": {**CONFIG["cua"], "store": str(store_dir)}})
    seen, merged = record_observations(), []
    merge_context = loop.ct_merge_context_msg

    async def recording_merge(previous: Any, messages: Any, *args: Any, **kwargs: Any) -> Any:
        merged.append(messages)  # the conversation so far, as the loop hands it to verl
        return await merge_context(previous, messages, *args, **kwargs)

    loop.ct_merge_context_msg = recording_merge
    output = await loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": False},
                            raw_prompt=PROMPT, extra_info={"task": TASK, "seed": SEED},
                            index=0, agent_name=verl_loop.AGENT_NAME)
    await asyncio.sleep(0)  # let the fire-and-forget releases run
    in_store = store_contents(store_dir)
    transcript = builders_transcript(merged[-1], list(seen))  # before the failures' episodes add theirs
    timeout = await failed(make_loop, store_dir, broken=False)
    broken = await failed(make_loop, store_dir, broken=True)

    mask = output.response_mask
    model_texts = [tokenizer.decode(output.response_ids[s:e], skip_special_tokens=True)
                   for v, s, e in runs(mask) if v == 1]
    ids = output.prompt_ids + output.response_ids
    image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
    merge = processor.image_processor.merge_size ** 2
    grids = processor.image_processor(images=output.multi_modal_data["images"],
                                      return_tensors="pt")["image_grid_thw"]
    stored = output.as_dict()

    # verl's own compute_advantage, with the registered estimator, on this episode and a
    # group mate with the same tokens and no reward
    rewards = torch.stack([stored["rm_scores"], torch.zeros_like(stored["rm_scores"])])
    data = DataProto.from_dict(
        tensors={"token_level_rewards": rewards,
                 "response_mask": torch.stack([stored["response_mask"]] * 2)},
        non_tensors={"uid": ["group-0", "group-0"]})
    data = compute_advantage(data, adv_estimator="cua_step_grpo",
                             config=OmegaConf.create({"gamma": 1.0, "norm_adv_by_std_in_grpo": True}))
    advantages = data.batch["advantages"]

    result = {
        "type": type(output).__name__, "scripted": scripted, "model_texts": model_texts,
        "mask_runs": [list(r) for r in runs(mask)], "response_len": len(output.response_ids),
        "mask_len": len(mask), "prompt_len": len(output.prompt_ids),
        "prompt_tail": tokenizer.decode(output.prompt_ids[-40:]),
        "observations": [tokenizer.decode(output.response_ids[s:e], skip_special_tokens=True)
                         for v, s, e in runs(mask) if v == 0],
        "images": len(output.multi_modal_data["images"]),
        "image_pad_tokens": ids.count(image_pad),
        "image_pad_expected": int((grids.prod(dim=1) // merge).sum()),
        "reward_score": output.reward_score, "num_turns": output.num_turns,
        "extra_fields": {k: v for k, v in output.extra_fields.items()
                         if k in ("turn_scores", "tool_rewards", "success", "task", "seed")},
        "rm_scores_nonzero": {str(i): float(v) for i, v in enumerate(stored["rm_scores"].tolist())
                              if v},
        "advantages_by_run": [[sorted(set(advantages[row, s:e].tolist())) for _, s, e in runs(mask)]
                              for row in range(2)],
        "timed": sorted(output.metrics.model_dump()),
        "timings_positive": output.metrics.generate_sequences > 0 and output.metrics.tool_calls > 0,
        "server_calls": server.calls, "released": balancer.released, "refused": refused,
        "transcript": transcript,
        "stored": in_store, "stored_after_failures": store_contents(store_dir)["episodes"], "timeout": timeout,
        "broken": broken,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
