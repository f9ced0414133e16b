"""The recorded GRPO batch that ``bench_gpu`` trains on: rollouts at 1280x800, exported from
the trajectory store as PNG screenshots plus one JSONL line per step.

    .venv/bin/python -m benchmarks.gpu_batch record --out benchmarks/data/gpu_batch  # Chromium
    .venv/bin/python -m benchmarks.gpu_batch export --store runs/x/store.db --out DIR  # a store

``record`` rolls out GRPO groups (``trainers.grpo.rollouts.Rollouts``: the one rollout path,
every episode written to a ``TrajectoryStore`` by its ``StoreSink``) with the ``hf:`` agent
over a random-init ``tiny`` checkpoint, on FSM library tasks in a 1280x800 browser, then
``export``s the store. ``export`` writes each step the agent recorded: the prompt's messages
(from the one prompt builder), its screenshots (``images/<hash>.png``, one file per distinct
screenshot), the completion's token ids and log-probabilities, and what the advantage
functions need (group, episode, step, FSM state, step reward). A random policy writes
random replies, which is all a timing needs: the prompts and screenshots are the real ones.

``load_steps`` reads the export back as ``TrainStep``s with advantages from
``trainers.grpo.advantages`` (GRPO's own code), on any machine: it needs no browser.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.store.store import TrajectoryStore
    from trainers.grpo.batch import TrainStep

FIXTURE = Path(__file__).parent / "data" / "gpu_batch"
VIEWPORT = (1280, 800)
TASKS = ("fsm:shop/add_lamp", "fsm:settings/open_laptop")


def export(store: TrajectoryStore, out: Path) -> int:
    """Write every recorded step of ``store``'s episodes to ``out`` (see the module
    docstring); returns how many steps."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "images").mkdir(exist_ok=True)
    lines: list[str] = []
    numbers: dict[str, int] = {}
    for episode in store.episodes():
        group = f"{episode.task_id}@{episode.tree_id}"
        number = numbers[group] = numbers.get(group, -1) + 1
        for step, node_id, record in store.episode_steps(episode.id):
            if not record.get("prompt") or not record.get("token_ids"):
                continue
            names = []
            for digest in record.get("images") or []:
                name = f"{digest[:16]}.png"
                if not (out / "images" / name).is_file():
                    (out / "images" / name).write_bytes(store.blob(digest))
                names.append(name)
            node = store.node(node_id)
            lines.append(json.dumps({
                "group": group, "episode": number, "step": step, "anchor": node.verdict and
                node.verdict.get("state_before"), "reward": node.step_reward,
                "messages": record["prompt"], "images": names, "token_ids": record["token_ids"],
                "logprobs": record["logprobs"]}, sort_keys=True))
    (out / "steps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def load_steps(directory: Path = FIXTURE, limit: int | None = None, scale: float = 1.0) -> list[TrainStep]:
    """The first ``limit`` exported steps (all with None) as training steps, each with its
    advantage over the whole export (plain GRPO plus the step-level term, as grpo-tiny.yaml);
    ``scale`` < 1 shrinks the screenshots (the CPU preset: a 1280x800 screenshot is 5,336
    patches through the vision tower, which on 2 loaded cores takes a minute)."""
    from harness.prompts import Prompt
    from trainers.grpo.advantages import StepSample, combined_advantages
    from trainers.grpo.batch import TrainStep

    path = Path(directory) / "steps.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"expected a recorded batch at {path}, found none; make one with "
                                "python -m benchmarks.gpu_batch record --out DIR")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    samples = [StepSample(r["group"], r["episode"], r["step"], r["anchor"], r["reward"]) for r in rows]
    advantages = combined_advantages(samples, step_weight=0.5)
    steps = []
    for row, advantage in zip(rows[:limit], advantages, strict=False):
        images = [_scaled((Path(directory) / "images" / name).read_bytes(), scale) for name in row["images"]]
        prompt = Prompt(messages=row["messages"], images=images, image_steps=list(range(len(images))))
        steps.append(TrainStep(prompt, row["token_ids"], row["logprobs"], advantage, truncated=True))
    return steps


def _scaled(png: bytes, scale: float) -> bytes:
    if scale == 1.0:
        return png
    from PIL import Image

    image = Image.open(io.BytesIO(png))
    small = image.resize((max(28, round(image.width * scale)), max(28, round(image.height * scale))))
    out = io.BytesIO()
    small.save(out, format="PNG")
    return out.getvalue()


async def record(out: Path, *, episodes: int, max_steps: int, new_tokens: int) -> int:
    """Roll out ``episodes`` per task with the tiny random policy into a fresh store and
    export it to ``out``."""
    from harness.env_providers import EnvOptions, LocalEnvs
    from harness.store.store import TrajectoryStore
    from trainers.agents.hf import HFAgent
    from trainers.agents.options import HFAgentOptions
    from trainers.grpo.rollouts import Rollouts
    from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
    from trainers.models.policy import PolicyConfig, load_policy

    with tempfile.TemporaryDirectory() as tmp:
        init_checkpoint(ModelInitConfig(out=Path(tmp) / "tiny", preset="tiny", seed=0))
        policy = load_policy(PolicyConfig(path=Path(tmp) / "tiny", device="cpu"))
        agent = HFAgent(policy, HFAgentOptions(codec="json", temperature=1.0, max_new_tokens=new_tokens))
        options = EnvOptions(codec="json", max_steps=max_steps, reward="step", viewport=VIEWPORT)
        store = TrajectoryStore(Path(tmp) / "store.db")
        envs = LocalEnvs()
        await envs.start()
        try:
            rollouts = Rollouts(agent, envs, options, store=store)
            await asyncio.gather(*(rollouts.group(task, 0, episodes, 10 * k, task)
                                   for k, task in enumerate(TASKS)))
            return export(store, out)
        finally:
            await envs.close()
            store.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="roll out at 1280x800 into a fresh store, then export it")
    rec.add_argument("--out", type=Path, default=FIXTURE)
    rec.add_argument("--episodes", type=int, default=2, help="episodes per task (a GRPO group)")
    rec.add_argument("--max-steps", type=int, default=2)
    rec.add_argument("--new-tokens", type=int, default=24, help="tokens per reply")
    exp = sub.add_parser("export", help="export an existing store's recorded steps")
    exp.add_argument("--store", type=Path, required=True)
    exp.add_argument("--out", type=Path, default=FIXTURE)
    args = parser.parse_args(argv)
    if args.command == "record":
        count = asyncio.run(record(args.out, episodes=args.episodes, max_steps=args.max_steps,
                                   new_tokens=args.new_tokens))
    else:
        from harness.store.store import TrajectoryStore

        with TrajectoryStore(args.store) as store:
            count = export(store, args.out)
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"{count} steps, {size / 1024:.0f} KiB in {args.out}")


if __name__ == "__main__":
    main()
