"""Issue 9's benchmark: the hf: agent's actions per second, alone and batched, and eval speed.

    .venv/bin/python -m benchmarks.bench_policy [--quick]

- Generation: the ``hf:`` agent over a random-init ``tiny`` checkpoint (``cua model init``)
  decides steps on a real screenshot of the FSM library's shop page (captured once in
  Chromium), json codec, the prompt builder's full prompt (system prompt included), and a
  fixed reply length (``--new-tokens``; a random model never stops early, so every reply
  costs the same). Batch 1: one episode acting step after step (``max_batch=1``). Batched:
  8 concurrent episodes sharing the agent (``max_batch=8``), counting every episode's
  actions. Repeats are interleaved; medians reported.
- Eval: ``EpisodeRunner`` on FSM library goals at the same concurrency (8) with the hf: agent
  and with the oracle, ``max_steps`` steps at most per episode; steps per second of the whole
  run (every episode's steps / wall time).

The GPU half of the issue (Qwen2.5-VL-3B-shaped LoRA throughput) needs a CUDA machine; run
``--gpu-lora`` there (it builds a random-init 3B-shaped model, nothing is downloaded).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import console, fmt, median, print_table, ratio, write_results
from harness.agents.base import AgentContext
from harness.agents.oracle import OracleAgent
from harness.observation import Observation
from harness.runner import EpisodeRunner, RunnerConfig, episode_specs

TASKS = ("fsm:shop/open_mug", "fsm:shop/add_lamp", "fsm:mail/open_m2", "fsm:bank/open_savings")


async def capture_observation() -> Observation:
    """The shop's home page as an env observation (real Chromium)."""
    from harness.env import AsyncEnv
    from harness.tasks.registry import make_task
    from sandboxes.providers import LocalProvider

    async with LocalProvider() as provider:
        sandbox = await provider.new_browser()
        env = AsyncEnv(make_task("fsm:shop/open_mug"), sandbox)
        try:
            obs, _ = await env.reset(seed=0)
        finally:
            await env.close()
            await sandbox.close()
    return obs


async def actions_per_second(agent: Any, obs: Observation, episodes: int, steps: int) -> tuple[float, float]:
    """``episodes`` concurrent episodes, ``steps`` actions each: actions per wall second and
    per CPU second of this process (all its threads; what other work on a shared machine
    does not change)."""
    async def episode(index: int) -> None:
        ctx = AgentContext.for_episode("bench", 0, index)
        for _ in range(steps):
            await agent.act(obs, ctx)

    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(episode(i) for i in range(episodes)))
    actions = episodes * steps
    return actions / (time.perf_counter() - start), actions / (time.process_time() - cpu)


async def generation(args: argparse.Namespace, policy: Any, obs: Observation) -> dict[str, Any]:
    from trainers.agents.hf import HFAgent
    from trainers.agents.options import HFAgentOptions

    options = HFAgentOptions(codec="json", max_new_tokens=args.new_tokens, max_wait_ms=5)
    single = HFAgent(policy, options.model_copy(update={"max_batch": 1}))
    batched = HFAgent(policy, options.model_copy(update={"max_batch": args.concurrency}))
    await single.act(obs, AgentContext.for_episode("warm", 0))  # first call: lazy inits
    runs: dict[str, list[float]] = {"batch1": [], "batched": [], "batch1_cpu": [], "batched_cpu": []}
    for _ in range(args.repeats):
        for mode, agent, episodes, steps in (("batch1", single, 1, args.steps),
                                             ("batched", batched, args.concurrency, max(1, args.steps // 2))):
            wall, cpu = await actions_per_second(agent, obs, episodes, steps)
            runs[mode].append(wall)
            runs[f"{mode}_cpu"].append(cpu)
    sizes = dict(batched.batcher.batch_sizes)
    return {"runs": runs, "batch_sizes": {str(k): v for k, v in sorted(sizes.items())},
            "prompt_tokens": len((await single.act(obs, AgentContext.for_episode("n", 0))).prompt_token_ids)}


async def eval_speed(args: argparse.Namespace, agents: dict[str, Any]) -> dict[str, Any]:
    """Steps per second of whole runs (one Chromium and one site server for all of them,
    started and warmed up first), agents interleaved per repeat."""
    from harness.resources import TaskResources
    from sandboxes.providers import LocalProvider

    config = RunnerConfig(concurrency=args.concurrency, max_steps=args.max_steps, codec="json")
    out: dict[str, Any] = {name: [] for name in agents}
    steps: dict[str, list[int]] = {name: [] for name in agents}
    async with LocalProvider() as provider, TaskResources() as resources:
        with tempfile.TemporaryDirectory() as tmp:
            for repeat in range(-1, args.repeats):  # repeat -1 warms up (sandboxes, pages, sites)
                for name, agent in agents.items():
                    specs = episode_specs(TASKS, args.episodes, seed=1000 + repeat * 100)
                    runner = EpisodeRunner(agent, config, out_dir=Path(tmp) / f"{name}{repeat}",
                                           provider=provider, resources=resources)
                    start = time.perf_counter()
                    records = await runner.run(specs)
                    wall = time.perf_counter() - start
                    failed = [r.error for r in records if r.error]
                    if failed:
                        raise RuntimeError(f"{name}: {len(failed)} episode(s) failed: {failed[0]}")
                    if repeat >= 0:
                        out[name].append(sum(r.steps for r in records) / wall)
                        steps[name].append(sum(r.steps for r in records))
    return {**out, "steps_per_run": steps, "episodes_per_run": len(TASKS) * args.episodes}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from trainers.agents.hf import HFAgent
    from trainers.agents.options import HFAgentOptions
    from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
    from trainers.models.policy import PolicyConfig, load_policy

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        report = init_checkpoint(ModelInitConfig(out=Path(tmp) / "tiny", preset=args.preset))
        policy = load_policy(PolicyConfig(path=report.path, device="cpu"))
    obs = await capture_observation()
    gen = await generation(args, policy, obs)
    model_agent = HFAgent(policy, HFAgentOptions(codec="json", max_new_tokens=args.new_tokens,
                                                 max_batch=args.concurrency))
    speed = await eval_speed(args, {"hf": model_agent, "oracle": OracleAgent()})
    return {"generation": gen, "eval": speed, "parameters": report.parameters.total,
            "load_average_before": [round(x, 2) for x in load_before]}


def summarize(result: dict[str, Any]) -> dict[str, Any]:
    runs = result["generation"]["runs"]
    batch1, batched = median(runs["batch1"]), median(runs["batched"])
    batch1_cpu, batched_cpu = median(runs["batch1_cpu"]), median(runs["batched_cpu"])
    hf, oracle = median(result["eval"]["hf"]), median(result["eval"]["oracle"])
    summary = {"actions_per_s_batch1": batch1, "actions_per_s_batched": batched,
               "batched_speedup": ratio(batched, batch1), "actions_per_cpu_s_batch1": batch1_cpu,
               "actions_per_cpu_s_batched": batched_cpu, "batched_speedup_cpu": ratio(batched_cpu, batch1_cpu),
               "eval_steps_per_s_hf": hf,
               "eval_steps_per_s_oracle": oracle, "hf_vs_oracle": ratio(hf, oracle)}
    print_table("hf: agent, tiny preset (medians)", ["mode", "actions/s", "per repeat", "actions/CPU-s",
                                                      "per repeat"], [
        (label, fmt(median(runs[mode]), 2), ", ".join(fmt(v, 2) for v in runs[mode]),
         fmt(median(runs[f"{mode}_cpu"]), 2), ", ".join(fmt(v, 2) for v in runs[f"{mode}_cpu"]))
        for label, mode in (("batch 1 (one episode)", "batch1"), ("batched (8 episodes)", "batched"))])
    steps = result["eval"]["steps_per_run"]
    print_table("eval steps/s at the same concurrency (medians)", ["agent", "steps/s", "per repeat",
                                                                    "steps per run"], [
        (name, fmt(median(result["eval"][name]), 2), ", ".join(fmt(x, 2) for x in result["eval"][name]),
         ", ".join(str(n) for n in steps[name])) for name in ("hf", "oracle")])
    return summary


def gpu_lora(args: argparse.Namespace) -> dict[str, Any]:
    """LoRA training steps per second of a random-init Qwen2.5-VL-3B-shaped model (CUDA)."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    if not torch.cuda.is_available():
        raise SystemExit("--gpu-lora needs a CUDA GPU")
    config = Qwen2_5_VLConfig(  # the 3B checkpoint's shapes; random weights, nothing downloaded
        text_config=dict(vocab_size=151936, hidden_size=2048, intermediate_size=11008, num_hidden_layers=36,
                         num_attention_heads=16, num_key_value_heads=2, rope_parameters={
                             "rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}),
        vision_config=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                           out_hidden_size=2048, fullatt_block_indexes=[7, 15, 23, 31]),
        tie_word_embeddings=True)
    with torch.device("cuda"):
        model = Qwen2_5_VLForConditionalGeneration(config).to(torch.bfloat16)
    import peft

    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    model = peft.get_peft_model(model, peft.LoraConfig(
        r=16, lora_alpha=32, target_modules=r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"))
    batch, length = args.gpu_batch, 1024
    grid = torch.tensor([[1, 2 * 26, 2 * 46]] * batch, device="cuda")  # 1288x728 px -> 1196 tokens
    tokens = int(grid[0].prod()) // 4
    ids = torch.randint(0, 150000, (batch, length + tokens), device="cuda")
    ids[:, 10:10 + tokens] = config.image_token_id
    pixels = torch.randn(int(grid.prod(-1).sum()), 1176, device="cuda", dtype=torch.bfloat16)
    types = (ids == config.image_token_id).long()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    times = []
    for step in range(args.gpu_steps + 2):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = model(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=pixels,
                     image_grid_thw=grid, mm_token_type_ids=types, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.synchronize()
        if step >= 2:
            times.append(time.perf_counter() - start)
    return {"gpu": torch.cuda.get_device_name(), "batch": batch, "image_tokens": tokens,
            "sequence": length + tokens, "steps_per_s": 1 / median(times),
            "max_memory_gib": torch.cuda.max_memory_allocated() / 2**30}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repeats")
    parser.add_argument("--preset", default="tiny", choices=("tiny", "small", "base"))
    parser.add_argument("--concurrency", type=int, default=8, help="concurrent episodes")
    parser.add_argument("--steps", type=int, default=None, help="actions per batch-1 run")
    parser.add_argument("--new-tokens", type=int, default=16, help="tokens per reply")
    parser.add_argument("--episodes", type=int, default=None, help="eval episodes per task")
    parser.add_argument("--max-steps", type=int, default=6, help="eval step budget per episode")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--gpu-lora", action="store_true", help="the CUDA LoRA throughput run instead")
    parser.add_argument("--gpu-batch", type=int, default=4)
    parser.add_argument("--gpu-steps", type=int, default=10)
    parser.add_argument("--out", default=None, help="JSON results path")
    args = parser.parse_args(argv)
    if args.gpu_lora:
        result = gpu_lora(args)
        console.print(result)
        write_results("bench_policy_gpu", {"args": vars(args), **result}, out=args.out)
        return result
    args.steps = args.steps or (8 if args.quick else 24)
    args.episodes = args.episodes or (2 if args.quick else 4)
    args.repeats = args.repeats or (1 if args.quick else 3)
    result = asyncio.run(run(args))
    summary = summarize(result)
    path = write_results("bench_policy", {"args": vars(args), **summary, **result}, out=args.out,
                         quick=args.quick)
    console.print(f"results: {path}")
    return summary


if __name__ == "__main__":
    main()
