"""``cua train grpo``: online multi-turn GRPO in live sandboxes with verified step rewards.

    train_grpo(load_config(GRPOConfig, file=Path("trainers/configs/grpo-tiny.yaml")))

The loop, top to bottom (one update):

1. the curriculum samples ``group.tasks`` tasks; each gets a layout seed, and G episodes of
   it run from that start through the one rollout path, every model call batched; a
   training episode ends at its first no-op step (``no_op``: an invalid action, or the
   ``idle_after``-th step in a row that fired nothing);
2. with ``tree.branch_states``, states the group visited (where its episodes disagree) are
   restored by jump and M continuations sampled from each;
3. dynamic sampling: groups whose every advantage is zero (all rewards equal) are dropped
   and, up to ``group.resample`` rounds, replaced by groups of tasks not drawn yet;
4. rewards (the env's, less ``no_op.penalty`` on no-op steps) become advantages:
   episode-level within the group plus ``step_weight`` times step-level within the steps
   taken from the same FSM state (returns-to-go discounted by ``gamma``);
5. dead-signal checks: a warning for groups whose returns are all equal, an error after
   ``signal.patience`` updates in a row whose completions were all truncated or in which no
   group carried a signal;
6. ``loss.epochs`` passes of PPO-clip minibatch steps (ratios against the rollout's own
   log-probabilities, k3 KL to the frozen starting policy, ``episode-mean`` aggregation by
   default);
7. the curriculum folds in the outcomes of every group, dropped ones too; held-out
   evaluation every ``eval.every`` updates; one metrics.jsonl line (clip fraction and KL
   among its figures, the update's env steps and the run's); a checkpoint every
   ``checkpoint_every`` updates.

The run stops after ``updates`` updates or, with ``env_steps`` (a budget), after the update
in which its env steps reach the budget (that update runs whole; no new one starts), with a
``stop`` line saying which and how many env steps it used.

At the end: ``OUT/model`` (with its ``cua_agent.yaml``) and ``OUT/report.html``.

Under ``accelerate launch --num_processes N`` the ranks share each update's groups and
all-reduce the gradients (DDP), or shard the policy with ``distributed.strategy: fsdp``;
what they gather keeps their decisions identical, and only the main process writes
(``trainers.grpo.distributed``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import time
import warnings
import zlib
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from harness.agents.base import wants_elements
from harness.cli_config import check_output_dir
from harness.env_providers import EnvOptions, make_env_provider
from harness.evaluation.stats import wilson_interval
from harness.store.store import TrajectoryStore
from trainers.agents.hf import HFAgent
from trainers.errors import ConfigError, TrainingSignalError
from trainers.grpo import checkpoint
from trainers.grpo.backends import agent_options, make_backend
from trainers.grpo.batch import BatchStats, Replay, build_batch, has_signal, stored_success
from trainers.grpo.config import GRPOConfig
from trainers.grpo.curriculum import Curriculum
from trainers.grpo.distributed import Outcome, Ranks, make_ranks, merge_figures, unsupported
from trainers.grpo.rollouts import NoOpStop, Rollout, Rollouts, branch_points
from trainers.models.checkpoint import ModelInitConfig, init_checkpoint
from trainers.models.policy import PolicyConfig, load_policy, require_train_extra
from trainers.training.config import task_ids
from trainers.training.evaluate import write_agent_file
from trainers.training.heldout import HeldoutProbe
from trainers.training.loggers import Loggers
from trainers.training.metrics import METRICS_FILE, MetricsLog

console = Console(stderr=True)


class DeadSignalWarning(UserWarning):
    """Groups whose episodes all earned the same return: no episode-level signal."""


def train_grpo(config: GRPOConfig, *, agent_class: type | None = None) -> Path:
    """Run GRPO as ``config`` says; returns the path of the run's report.html.
    ``agent_class``: the rollout agent's class (default ``HFAgent``; the test seam)."""
    require_train_extra()
    ranks = make_ranks(config.distributed.strategy)
    if ranks.world == 1:
        _start_run(config)
    else:  # the main process prepares the run directory; every rank raises its error
        error = unsupported(config)
        if error is None and ranks.main:
            try:
                _start_run(config)
            except ConfigError as exc:
                error = str(exc)
        error = ranks.first_error(error)
        if error is not None:
            raise ConfigError(error)
    return asyncio.run(_train(config, agent_class, ranks))


def _start_run(config: GRPOConfig) -> None:
    out = Path(config.out)
    check_output_dir(out, "out")
    found = checkpoint.checkpoints(out)
    if config.resume and not found:
        raise ConfigError(f"resume: expected a checkpoint under {out / checkpoint.CHECKPOINTS}, got "
                          "none; run without resume to start this run")
    if not config.resume and found:
        raise ConfigError(f"out: expected a new run directory, got {out} holding a previous run's "
                          "checkpoints; set resume: true to continue it or pick another out")
    out.mkdir(parents=True, exist_ok=True)
    if not config.resume:
        (out / METRICS_FILE).unlink(missing_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False),
                                     encoding="utf-8")
    path = Path(config.model.path)
    if not (path / "config.json").is_file() and not (path / "adapter_config.json").is_file():
        if config.init is None:
            raise ConfigError(f"model.path: expected a checkpoint directory, got {path}; make one with "
                              "`cua model init` or set init: tiny")
        init_checkpoint(ModelInitConfig(out=path, preset=config.init))


def check_signal(loop: checkpoint.LoopState, stats: BatchStats, rewards: list[float], update: int,
                 patience: int) -> None:
    """Warn about groups whose returns are all equal; stop after ``patience`` updates in a row
    whose completions were all truncated or in which no group carried a training signal
    (every advantage zero, e.g. every reward identical)."""
    if stats.flat_groups:
        warnings.warn(f"update {update}: {stats.flat_groups} of {stats.groups} groups earned the same "
                      "return in every episode (no episode-level signal)", DeadSignalWarning, stacklevel=2)
    loop.truncated_streak = loop.truncated_streak + 1 if stats.truncated == stats.steps else 0
    loop.flat_streak = loop.flat_streak + 1 if stats.silent_groups >= stats.groups else 0
    if loop.truncated_streak >= patience:
        raise TrainingSignalError(
            f"expected some completions to end before rollout.max_new_tokens, got every one of "
            f"{stats.steps} truncated for {patience} updates in a row (update {update}); raise "
            "rollout.max_new_tokens or start from a model that answers in the prompt's format")
    if loop.flat_streak >= patience:
        same = f", every reward equal to {rewards[0]}" if rewards and len(set(rewards)) == 1 else ""
        raise TrainingSignalError(
            f"expected a training signal, got every advantage zero (no group whose episodes' "
            f"rewards differ{same}) for {patience} updates in a row (update {update}); use "
            "reward: step or progress, easier tasks (curriculum), or start from an SFT model")


class Trainer:
    """The objects one run holds; ``update`` is one pass of the loop in the module docstring."""

    def __init__(self, config: GRPOConfig, agent_class: type | None = None, ranks: Ranks | None = None) -> None:
        import torch

        self.config = config
        self.ranks = ranks = ranks or Ranks()
        if ranks.device is not None:  # each rank's own device (cuda:LOCAL_RANK, or the CPU)
            config = config.model_copy(update={"model": config.model.model_copy(update={"device": ranks.device})})
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        torch.manual_seed(config.seed)
        self.policy = load_policy(config.model)
        ranks.wrap(self.policy.model)  # before the optimizer: FSDP replaces the parameters
        self.reference = None
        if config.loss.kl_coef > 0:
            self.reference = load_policy(PolicyConfig(**{**config.model.model_dump(), "finetune": "none"})).model
            ranks.wrap_frozen(self.reference)
        self.greedy = HFAgent(self.policy, agent_options(config, temperature=0.0))
        self.backend = make_backend(config, self.policy, agent_class)
        self.agent: Any = self.backend.agent
        loss = config.loss
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=loss.learning_rate,
                                           weight_decay=loss.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda done: loss.lr_factor(done, config.updates))
        self.sampler = random.Random(config.seed)
        self.shuffle = torch.Generator().manual_seed(config.seed)
        self.curriculum = Curriculum(task_ids(config.tasks), config.curriculum)
        self.loop = checkpoint.LoopState()
        # metrics.jsonl, and the same lines to TensorBoard / W&B (report_to) from the main process
        self.metrics = MetricsLog(Path(config.out) / METRICS_FILE, Loggers(
            config.report_to, Path(config.out), config=config.model_dump(mode="json")) if ranks.main else None)
        self.store = TrajectoryStore(config.store_path) if ranks.main else None
        self.envs = make_env_provider(config.rollout.provider_spec())
        options = EnvOptions(codec=config.prompt.codec, max_steps=config.rollout.max_steps,
                             reward=config.reward, elements=wants_elements(self.agent),
                             step_timeout_s=config.rollout.step_timeout_s,
                             reset_timeout_s=config.rollout.step_timeout_s)
        stop = [NoOpStop(config.no_op.idle_after)] if config.no_op.effect == "end" else []
        self.rollouts = Rollouts(self.agent, self.envs, options, store=self.store, sinks=stop)
        self.filmstrips: list[Rollout] = []
        if config.eval is not None:
            eval_options = options.model_copy(update={"max_steps": config.eval.max_steps})
            self.eval_rollouts = Rollouts(self.greedy, self.envs, eval_options)

    def resume(self) -> None:
        latest = checkpoint.checkpoints(Path(self.config.out))[-1]
        self.loop, weights, optim = checkpoint.load(
            latest, scheduler=self.scheduler, sampler=self.sampler, shuffle=self.shuffle,
            curriculum=self.curriculum, strategy=self._strategy)
        self.ranks.load_state(self.policy.model, self.optimizer, weights, optim)
        if self.ranks.main:
            console.print(f"resumed from {latest} (update {self.loop.update})")

    async def collect(self, update: int) -> tuple[list[list[Rollout]], list[bool], int]:
        """The update's rollout groups (each with its tree branches), whether each goes into
        the batch, and how many groups were resampled. Dynamic sampling: groups without a
        training signal are dropped and, up to ``group.resample`` rounds, replaced by groups of
        tasks not yet drawn this update; if no group has a signal, all go in (the update then
        counts toward ``signal.patience``). Dropped groups still count for the curriculum."""
        config = self.config
        tasks = self.curriculum.sample(config.group.tasks, self.sampler)
        seeds = [self.sampler.choice(config.group.seeds) for _ in tasks]
        groups = await self._groups(update, 0, tasks, seeds, self.ranks.slots(len(tasks)))
        keep = [self._keeps(g) for g in groups]
        # Per rank, derived from (seed, update, rank): resampling needs no saved state.
        rng = random.Random(f"{config.seed}:{update}:{self.ranks.rank}:resample")
        tried, resampled = set(tasks), 0
        for round_ in range(1, config.group.resample + 1):
            more = self.curriculum.sample(keep.count(False) - resampled, rng, exclude=tried) \
                if not all(keep) else []
            if not more:
                break
            tried.update(more)
            extra = await self._groups(update, round_, more, [rng.choice(config.group.seeds) for _ in more],
                                       list(range(len(more))))
            groups, keep, resampled = groups + extra, keep + [self._keeps(g) for g in extra], resampled + len(more)
        return groups, keep if any(keep) else [True] * len(groups), resampled

    async def _groups(self, update: int, round_: int, tasks: list[str], seeds: list[int],
                      slots: list[int]) -> list[list[Rollout]]:
        """Each slot's group of ``tasks[k % n]`` at ``seeds[k % n]``, its tree branches appended."""
        size, n = self.config.group.size, len(tasks)
        base = update * 10_000 + round_ * (10**9 + self.ranks.rank * 10**8)  # distinct episode seeds
        suffix = f"~r{round_}" + (f".{self.ranks.rank}" if self.ranks.world > 1 else "") if round_ else ""
        groups = await asyncio.gather(*(
            self.rollouts.group(tasks[k % n], seeds[k % n], size, base + k * 1000,
                                f"u{update}:{tasks[k % n]}@{seeds[k % n]}" + (f"#{k}" if k >= n else "") + suffix)
            for k in slots))
        rng = self.sampler if self.ranks.world == 1 and not round_ else \
            random.Random(f"{self.config.seed}:{update}:{self.ranks.rank}:{round_}")
        branches = await asyncio.gather(*(self._branch(group, base + k * 1000 + size, rng)
                                          for k, group in zip(slots, groups, strict=True)))
        return [group + more for group, more in zip(groups, branches, strict=True)]

    def _keeps(self, group: list[Rollout]) -> bool:
        """Whether a group goes into the batch: it has a signal, or dynamic sampling is off, or
        a replay will give it one (replay: no success, and the store holds one)."""
        config = self.config
        if config.group.resample == 0 or has_signal(group, config.advantage, config.no_op):
            return True
        return config.curriculum.replay and bool(self.replays([r for r in group if r.parent is None]))

    async def _branch(self, group: list[Rollout], first_index: int, rng: random.Random) -> list[Rollout]:
        tree = self.config.tree
        if tree.branch_states == 0:
            return []
        points = branch_points(group, tree.branch_states, tree.where, rng)
        made = await asyncio.gather(*(self.rollouts.branches(
            parent, step, tree.continuations, first_index + j * tree.continuations,
            len(group) + j * tree.continuations) for j, (parent, step) in enumerate(points)))
        return [r for rs in made for r in rs]

    async def update(self, update: int) -> dict[str, Any]:
        """One update (see the module docstring); returns its metrics line."""
        from trainers.grpo.optimize import optimize

        await self.backend.sync(self.policy, update - 1)  # the weights that sample this update
        generator = getattr(self.agent, "generator", None)  # in-process rollouts: time its model calls
        generated_before = generator.seconds if generator is not None else 0.0
        cpu_before, started = time.process_time(), time.perf_counter()
        with self.ranks.full_params(self.policy.model):  # FSDP: generation needs whole weights
            groups, keep, resampled = await self.collect(update)
        rollout_s = time.perf_counter() - started
        generation_s = generator.seconds - generated_before if generator is not None else None
        everything = [r for g in groups for r in g]  # dropped groups too: env steps, the store
        rollouts = [r for g, kept in zip(groups, keep, strict=True) if kept for r in g]
        mains = [r for r in everything if r.parent is None]
        replays = self.replays([r for r in rollouts if r.parent is None]) if self.config.curriculum.replay else []
        steps, stats = build_batch(rollouts, self.config.advantage, self.greedy.generator.stop_ids, replays,
                                   self.config.no_op)
        stats = dataclasses.replace(stats, dropped_groups=keep.count(False), resampled_groups=resampled)
        rewards = [t.reward for r in rollouts for t in r.episode.transitions] + [r.reward for r in replays]
        outcomes = [(g[0].episode.task_id, [r.episode.success for r in g if r.parent is None]) for g in groups]
        mine = Outcome(stats, rewards, outcomes, [(r.episode.total_reward, r.episode.success, r.episode.progress)
                                                  for r in mains], len(everything) - len(mains),
                       sum(r.episode.steps for r in everything), [r.episode.task_id for r in mains])
        outcome = Outcome.merge(self.ranks.gather(mine))
        with contextlib.nullcontext() if self.ranks.main else warnings.catch_warnings():
            if not self.ranks.main:  # the gathered counts: one warning, from the main process
                warnings.simplefilter("ignore", DeadSignalWarning)
            check_signal(self.loop, outcome.stats, outcome.rewards, update, self.config.signal.patience)
        started = time.perf_counter()
        if self.ranks.world > 1:  # each rank's own minibatch order, derived (so resume needs no state)
            self.shuffle.manual_seed(zlib.crc32(f"{self.config.seed}:{update}:{self.ranks.rank}".encode()))
        figures = merge_figures(self.ranks.gather(
            optimize(self.policy, self.reference, steps, self.config.loss, self.optimizer, self.shuffle,
                     update=update, ranks=self.ranks)))
        learning_rate = self.scheduler.get_last_lr()[0]  # this update's, before the step to the next
        self.scheduler.step()
        train_s = time.perf_counter() - started
        await self.store_other_ranks(everything)
        events = []
        for task, successes in outcome.groups:
            events += self.curriculum.record(task, successes)
        self.filmstrips = mains[: self.config.filmstrips]
        self.loop.env_steps += outcome.env_steps
        self.loop.seconds["rollout"] += rollout_s
        self.loop.seconds["train"] += train_s
        n = len(outcome.episodes)
        return {"update": update, "policy_version": update - 1, "episodes": n, "branches": outcome.branches,
                "steps": outcome.stats.steps, "env_steps": self.loop.env_steps,
                "update_env_steps": outcome.env_steps,
                "reward": sum(e[0] for e in outcome.episodes) / n,
                "success": sum(e[1] for e in outcome.episodes) / n,
                "progress": sum(e[2] for e in outcome.episodes) / n,
                "replayed": len(replays), "flat_groups": outcome.stats.flat_groups,
                "groups": outcome.stats.groups, "truncated": outcome.stats.truncated,
                "silent_groups": outcome.stats.silent_groups, "dropped_groups": outcome.stats.dropped_groups,
                "resampled_groups": outcome.stats.resampled_groups, "no_op_steps": outcome.stats.no_op_steps,
                **figures, "learning_rate": learning_rate,
                "rollout_s": round(rollout_s, 3), "train_s": round(train_s, 3),
                **({"generation_s": round(generation_s, 3), "env_s": round(rollout_s - generation_s, 3)}
                   if generation_s is not None else {}),
                "cpu_s": round(time.process_time() - cpu_before, 3),
                "tasks": sorted(set(outcome.tasks)), "events": events,
                "pool": self.curriculum.summary(), **({"ranks": self.ranks.world} if self.ranks.world > 1 else {})}

    async def store_other_ranks(self, rollouts: list[Rollout]) -> None:
        """Data parallel: the main process writes the other ranks' rollouts to the store (it
        writes its own as they run), so the store holds every rollout of the run."""
        if self.ranks.world == 1:
            return
        # The env stays behind (it is this rank's live sandbox); the sink reads only the episode's data.
        portable = [] if self.ranks.main else \
            [dataclasses.replace(r, episode=dataclasses.replace(r.episode, env=None), stored=None)  # type: ignore[arg-type]
             for r in rollouts]
        for part in self.ranks.gather_to_main(portable)[1:]:
            await self.rollouts.record(part)

    def replays(self, mains: list[Rollout]) -> list[Replay]:
        """A stored success for each group without one (where the store has one)."""
        assert self.store is not None  # replay runs in one process (distributed.unsupported)
        found = []
        for group in dict.fromkeys(r.group for r in mains):
            members = [r for r in mains if r.group == group]
            if not any(r.episode.success for r in members):
                replay = stored_success(self.store, members[0].episode.task_id, group)
                found += [replay] if replay is not None else []
        return found

    async def evaluate(self, update: int, phase: str) -> dict[str, Any]:
        """Greedy episodes of the held-out tasks with the current weights."""
        spec = self.config.eval
        assert spec is not None
        started = time.perf_counter()
        pairs = [(task, i) for task in task_ids(spec.tasks) for i in range(spec.episodes)]
        mine = pairs[self.ranks.rank::self.ranks.world]  # data parallel: each rank its share
        with self.ranks.full_params(self.policy.model):
            groups = await asyncio.gather(*(self.eval_rollouts.group(task, spec.seed + i, 1, i, "eval")
                                            for task, i in mine))
        results = [(task, g[0].episode.success, g[0].episode.progress, g[0].episode.total_reward, g[0].episode.steps)
                   for (task, _), g in zip(mine, groups, strict=True)]
        episodes = [e for part in self.ranks.gather(results) for e in part]
        seconds = time.perf_counter() - started
        self.loop.seconds["eval"] += seconds
        n = len(episodes)
        by_task: dict[str, dict[str, float]] = {}
        for task in dict.fromkeys(e[0] for e in episodes):
            mine_task = [e for e in episodes if e[0] == task]
            by_task[task] = {"episodes": len(mine_task),
                             "success_rate": sum(e[1] for e in mine_task) / len(mine_task),
                             "progress": round(sum(e[2] for e in mine_task) / len(mine_task), 4)}
        successes = sum(bool(e[1]) for e in episodes)
        return self.write(
            "eval", update=update, phase=phase, episodes=n,
            success_rate=successes / n, success_ci=list(wilson_interval(successes, n)),
            progress=sum(e[2] for e in episodes) / n,
            mean_reward=sum(e[3] for e in episodes) / n,
            steps=sum(e[4] for e in episodes), seconds=round(seconds, 2), by_task=by_task)

    def stopped(self) -> dict[str, Any]:
        """The run's last metrics line: why it stopped and the env steps it used (a
        comparison at equal env steps quotes these)."""
        config, loop = self.config, self.loop
        line = self.write("stop", reason=loop.stop_reason(config.updates, config.env_steps),
                          updates=loop.update, env_steps=loop.env_steps,
                          env_steps_budget=config.env_steps, updates_cap=config.updates)
        if self.ranks.main:
            console.print(checkpoint.stop_text(line))
        return line

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        """A metrics line: written by the main process, returned on every rank."""
        return self.metrics.write(event, **fields) if self.ranks.main else {"event": event, **fields}

    @property
    def _strategy(self) -> str:
        return "fsdp" if self.ranks.sharded else "ddp"

    def save(self) -> None:
        """A checkpoint (every rank calls it: FSDP gathers the shards; the main process writes)."""
        weights, optim = self.ranks.state(self.policy.model, self.optimizer)
        if not self.ranks.main:
            return
        checkpoint.save(Path(self.config.out), self.loop, model_state=weights, optimizer_state=optim,
                        scheduler=self.scheduler, sampler=self.sampler, shuffle=self.shuffle,
                        curriculum=self.curriculum, strategy=self._strategy)

    def save_model(self, path: Path) -> None:
        """The final weights (every rank calls it; the main process writes)."""
        weights = self.ranks.state(self.policy.model, None)[0] if self.ranks.sharded else None
        if self.ranks.main:
            self.policy.save(path, state_dict=weights)

    async def close(self) -> None:
        self.metrics.close()
        await self.envs.close()
        if self.store is not None:
            self.store.close()


async def _train(config: GRPOConfig, agent_class: type | None, ranks: Ranks) -> Path:
    from trainers.grpo.report import save_filmstrips, write_report

    trainer = Trainer(config, agent_class, ranks)
    if config.resume:
        trainer.resume()
    every = config.eval.every if config.eval is not None else 0
    probe = HeldoutProbe.load(config.heldout, config.prompt, Path(config.out) / "heldout") \
        if config.heldout is not None else None  # the dense held-out metric: forward passes only
    try:
        await trainer.envs.start()
        if config.eval is not None and trainer.loop.update == 0:
            await trainer.evaluate(0, "before")
        while trainer.loop.stop_reason(config.updates, config.env_steps) is None:
            update = trainer.loop.update + 1
            line = await trainer.update(update)
            trainer.loop.update = update
            last = trainer.loop.stop_reason(config.updates, config.env_steps) is not None
            if every and (update % every == 0 or last):
                phase = "after" if last else "during"
                line["heldout_success"] = (await trainer.evaluate(update, phase))["success_rate"]
            if probe is not None and (last or probe.due(update, config.updates)):
                line.update(probe.measure(trainer.policy))
            line["seconds"] = {k: round(v, 2) for k, v in trainer.loop.seconds.items()}
            trainer.write("update", **line)
            if ranks.main:
                console.print(f"update {update}/{config.updates}: reward {line['reward']:.3f} · success "
                              f"{line['success']:.0%} · loss {line['loss']:.4f} · kl {line['kl']:.4f} · "
                              f"rollout {line['rollout_s']:.1f}s train {line['train_s']:.1f}s · "
                              f"env steps {line['update_env_steps']} ({line['env_steps']} in all)")
            if update % config.checkpoint_every == 0 or last:
                trainer.save()
            if ranks.main:
                save_filmstrips(Path(config.out), update, trainer.filmstrips)
        trainer.stopped()
    finally:
        await trainer.close()
    report = Path(config.out) / "report.html"
    model_dir = Path(config.out) / "model"
    trainer.save_model(model_dir)
    if ranks.main:
        write_agent_file(model_dir, config.prompt)
        report = write_report(Path(config.out), config, trainer.metrics.read())
    ranks.close()  # the others wait until the main process has written everything
    return report
