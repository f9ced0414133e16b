"""`cua train grpo` end to end on the tiny model in live Chromium sandboxes, plus its parts.

The random-init tiny model never reaches a goal, so its groups carry no signal. The runs
here roll out with ``TeacherMix`` (a fake at the model seam only): even-numbered episodes
take the oracle's action as their text, tokenized and scored by the real policy (so their
log-probabilities are the policy's own), odd ones sample from the policy. Everything else
is real: envs, FSM sessions, rewards, advantages, the loss, the optimizer, the store.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
import torch

from harness.agents.base import AgentContext, AgentStep, episode_prompt
from harness.observation import Observation
from trainers.agents.hf import HFAgent
from trainers.errors import TrainingSignalError
from trainers.grpo.batch import BatchStats, TrainStep
from trainers.grpo.checkpoint import LoopState
from trainers.grpo.config import CurriculumSpec, GRPOConfig, LossSpec
from trainers.grpo.curriculum import Curriculum, make_variants, register_variant
from trainers.grpo.optimize import optimize
from trainers.grpo.train import DeadSignalWarning, check_signal, train_grpo
from trainers.models.inputs import completion_ids, completion_logprobs


class TeacherMix(HFAgent):
    """Even-numbered episodes follow the oracle (scored by the policy), odd ones sample."""

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        if ctx.index % 2 or ctx.env is None:
            return await super().act(obs, ctx)
        action = await ctx.env.oracle_action()
        prompt = episode_prompt(self.prompts, obs, ctx.history)
        text = self.prompts.action_text(action, (obs.width, obs.height), obs.elements)
        ids = completion_ids(self.policy, text)
        # The generator's lock: one forward at a time (FSDP's hooks keep per-forward state).
        with self.generator.lock:
            training = self.policy.model.training
            self.policy.model.eval()
            with torch.no_grad():
                [logprobs] = completion_logprobs(self.policy, [prompt], [ids])
            self.policy.model.train(training)
        return AgentStep(text=text, prompt=prompt.messages, image_steps=prompt.image_steps,
                         completion=text, token_ids=ids, logprobs=logprobs.tolist(),
                         policy_version=self.policy_version)


ROLLOUT = {"max_steps": 3, "max_new_tokens": 8, "max_batch": 1}


def grpo_config(out: Path, model_dir: Path, **over: object) -> GRPOConfig:
    base: dict = {
        "out": str(out), "updates": 2, "model": {"path": str(model_dir), "finetune": "full", "device": "cpu"},
        "prompt": {"codec": "json", "observation": "elements", "system_prompt": False},
        "tasks": ["fsm:shop/open_mug"], "group": {"tasks": 1, "size": 2, "seeds": [0]},
        "reward": "step", "rollout": ROLLOUT,
        "loss": {"epochs": 2, "minibatch": 8, "learning_rate": 1e-3, "kl_coef": 0.02},
        "tree": {"branch_states": 1, "continuations": 2}, "checkpoint_every": 1, "filmstrips": 2,
    }
    for key, value in over.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and key in base else value
    return GRPOConfig.model_validate(base)


def lines(out: Path, event: str) -> list[dict]:
    records = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x]
    return [r for r in records if r["event"] == event]


def weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(next(path.glob("*.safetensors"))))


def test_grpo_updates_change_the_policy_and_write_metrics_report_and_store(tmp_path, tiny_dir, oracle_store) -> None:
    out = tmp_path / "run"
    config = grpo_config(out, tiny_dir, eval={"tasks": ["fsm:shop/add_lamp"], "every": 2, "max_steps": 2},
                         heldout={"states": str(oracle_store), "every": 1})
    report = train_grpo(config, agent_class=TeacherMix)

    before, after = weights(tiny_dir), weights(out / "model")
    changed = [k for k in before if k in after and not torch.equal(before[k], after[k])]
    assert changed, "expected GRPO updates to change some parameters"
    updates = lines(out, "update")
    assert [u["update"] for u in updates] == [1, 2]
    assert all(u["episodes"] == 2 and u["branches"] == 2 for u in updates)
    assert any(u["success"] == 0.5 for u in updates)  # the oracle's episode solved, the sample did not
    assert all(math.isfinite(u["loss"]) and u["entropy"] > 0 for u in updates)
    # where the update's time went: the model's calls and the rest of the rollout (envs), and CPU
    assert all(0 < u["generation_s"] <= u["rollout_s"] and u["env_s"] == pytest.approx(
        u["rollout_s"] - u["generation_s"], abs=2e-3) and u["cpu_s"] > 0 for u in updates)
    assert all(u["heldout_states"] >= 8 and 0 <= u["heldout_exact_match"] <= 1 for u in updates)
    # the sampled episodes' junk ends them at once (no_op.effect: end), recorded all the same
    assert all(u["no_op_steps"] >= 1 and u["dropped_groups"] == 0 for u in updates)
    evals = lines(out, "eval")
    assert [e["phase"] for e in evals] == ["before", "after"]
    assert all(set(e["by_task"]) == {"fsm:shop/add_lamp"} and e["by_task"]["fsm:shop/add_lamp"]["episodes"] == 1
               and e["by_task"]["fsm:shop/add_lamp"]["success_rate"] == e["success_rate"] for e in evals)
    page = report.read_text()
    assert "Curves" in page and "filmstrips/e0-s1.jpg" in page and "fsm:shop/open_mug" in page
    assert "steps to go" in page  # the filmstrips give each step's verdict in words
    assert "heldout_token_accuracy" in page
    assert all(e["success_ci"][0] <= e["success_rate"] <= e["success_ci"][1] for e in evals)
    assert "Success (95% CI): before: " in page
    assert "<h2>Per update</h2>" in page and "<th>clip fraction</th><th>KL</th>" in page
    total = updates[-1]["env_steps"]
    assert total == sum(u["update_env_steps"] for u in updates) and lines(out, "stop")[-1]["reason"] == "updates"
    assert f"stopped after update 2: 2 updates done, {total} env steps used" in page
    from tests.trainers.test_training import scalars

    seen = scalars(out)  # report_to's default: the same lines in TensorBoard
    assert len(seen["update/reward"]) == 2 and "eval/success_rate" in seen

    from harness.store.store import TrajectoryStore

    with TrajectoryStore(out / "store") as store:
        episodes = store.episodes()
        versions = {json.dumps(s[2].get("policy_version")) for e in episodes
                    for s in store.episode_steps(e.id)}
    assert len(episodes) == 2 * (2 + 2)  # G episodes and two branches per update
    assert {"0", "1"} <= versions


def test_grpo_rollouts_run_over_a_ray_env_pool(tmp_path, tiny_dir, monkeypatch) -> None:
    """rollout.ray: the groups and the tree branches (a jump in an actor's env) run in Ray
    actors; the policy, the store and the update stay in this process."""
    pytest.importorskip("ray")
    from harness.ray_envs import RayEnvs

    opened: list[str] = []
    real_open = RayEnvs.open

    async def counting_open(self, task_id, options):
        opened.append(task_id)
        return await real_open(self, task_id, options)

    monkeypatch.setattr(RayEnvs, "open", counting_open)
    out = tmp_path / "run"
    config = grpo_config(out, tiny_dir, updates=1, rollout={**ROLLOUT, "ray": True}, filmstrips=0)
    train_grpo(config, agent_class=TeacherMix)
    assert len(opened) == 4  # two group episodes and two branches, each in an actor's env
    [update] = lines(out, "update")
    assert update["episodes"] == 2 and update["branches"] == 2 and update["success"] == 0.5


def test_grpo_trains_on_a_miniwob_task_with_its_episode_reward(tmp_path, tiny_dir) -> None:
    """A MiniWoB task (written by others) trains through the same loop: its page's episode
    reward is the outcome; tree branches are skipped (no machine to restore a state from)."""
    out = tmp_path / "run"
    config = grpo_config(out, tiny_dir, updates=1, tasks=["miniwob:click-button"], reward="outcome",
                         rollout={**ROLLOUT, "max_steps": 2, "max_new_tokens": 24}, filmstrips=0)
    train_grpo(config, agent_class=TeacherMix)
    before, after = weights(tiny_dir), weights(out / "model")
    assert any(not torch.equal(before[k], after[k]) for k in before if k in after)
    [update] = lines(out, "update")
    assert update["episodes"] == 2 and update["branches"] == 0
    assert update["success"] >= 0.5  # the oracle's episode clicks the named button


def test_resume_continues_bit_identically(tmp_path, tiny_dir) -> None:
    full = tmp_path / "full"
    warm = {"warmup_updates": 1}  # the resumed run goes on with the warm-up where it stood
    train_grpo(grpo_config(full, tiny_dir, loss=warm), agent_class=TeacherMix)
    assert [x["learning_rate"] for x in lines(full, "update")] == pytest.approx([5e-4, 1e-3])
    resumed = tmp_path / "resumed"
    shutil.copytree(full, resumed)
    shutil.rmtree(resumed / "checkpoints" / "update-2")
    train_grpo(grpo_config(resumed, tiny_dir, loss=warm, resume=True), agent_class=TeacherMix)

    a = torch.load(full / "checkpoints" / "update-2" / "model.pt")
    b = torch.load(resumed / "checkpoints" / "update-2" / "model.pt")
    assert all(torch.equal(a[k], b[k]) for k in a)
    noisy = {"rollout_s", "train_s", "generation_s", "env_s", "cpu_s", "seconds"}
    last_full, last_resumed = lines(full, "update")[-1], lines(resumed, "update")[-1]
    assert {k: v for k, v in last_full.items() if k not in noisy} == \
        {k: v for k, v in last_resumed.items() if k not in noisy}
    assert lines(full, "stop")[-1]["reason"] == lines(resumed, "stop")[-1]["reason"] == "updates"
    # a resumed run counts the env steps its checkpoint holds: a budget they already reach
    # runs no further update
    spent = tmp_path / "spent"
    shutil.copytree(full, spent)
    shutil.rmtree(spent / "checkpoints" / "update-2")
    first = lines(full, "update")[0]["env_steps"]
    train_grpo(grpo_config(spent, tiny_dir, loss=warm, resume=True, env_steps=first), agent_class=TeacherMix)
    assert len(lines(spent, "update")) == 2  # the copied run's two, no new one
    assert lines(spent, "stop")[-1] == {"event": "stop", "reason": "env_steps", "updates": 1, "env_steps": first,
                                        "env_steps_budget": first, "updates_cap": 2}


def test_groups_without_a_signal_are_dropped_and_resampled(tmp_path, tiny_dir) -> None:
    """Outcome rewards in 2 steps: the oracle solves open_mug (2 steps) but neither 3-step
    task, so those groups are all zeros: dropped, one resampled in their place (their env
    steps count); the curriculum still counts every group. An env-step budget below one
    update's steps stops the run after that update, though ``updates`` allows two."""
    out = tmp_path / "run"
    config = grpo_config(out, tiny_dir, updates=2, env_steps=1, reward="outcome", tasks=["fsm:shop/add_lamp", "fsm:shop/open_mug",
                         "fsm:mail/star_m1"], group={"tasks": 2, "size": 2, "seeds": [0], "resample": 1},
                         rollout={**ROLLOUT, "max_steps": 2}, tree={"branch_states": 0},
                         curriculum={"enabled": False}, filmstrips=0)
    train_grpo(config, agent_class=TeacherMix)
    [update] = lines(out, "update")
    assert update["tasks"] == ["fsm:mail/star_m1", "fsm:shop/add_lamp", "fsm:shop/open_mug"]
    assert update["episodes"] == 6 and update["groups"] == 1 and update["silent_groups"] == 0
    assert update["dropped_groups"] == 2 and update["resampled_groups"] == 1
    assert all(p["n"] == 2 for p in update["pool"].values())  # every group's outcomes recorded
    assert update["update_env_steps"] == update["env_steps"] >= 6  # 6 episodes, each one step at least
    [stop] = lines(out, "stop")
    assert stop == {"event": "stop", "reason": "env_steps", "updates": 1, "env_steps": update["env_steps"],
                    "env_steps_budget": 1, "updates_cap": 2}
    assert f"stopped after update 1: env-step budget of 1 reached, {stop['env_steps']} env steps used" \
        in (out / "report.html").read_text()


def test_no_op_steps_end_a_training_episode_or_cost_their_penalty() -> None:
    import asyncio
    import dataclasses

    from trainers.grpo.config import NoOpSpec
    from trainers.grpo.rollouts import NoOpStop, no_op_steps, training_rewards

    episode = _episode("t", [("A", "B", 0.5), ("B", "B", 0.0), ("B", "B", 0.0), ("B", "B", 0.0), ("B", "C", 0.5)])
    assert no_op_steps(episode.transitions, 3) == [False, False, False, True, False]  # the third idle in a row
    assert no_op_steps(episode.transitions, 1) == [False, True, True, True, False]
    refused = episode.transitions[1]
    episode.transitions[1] = dataclasses.replace(
        refused, after=refused.after.model_copy(update={"last_action_error": "expected an element label"}))
    assert no_op_steps(episode.transitions, 3) == [False, True, False, True, False]  # invalid: at once
    spec = NoOpSpec(effect="end", penalty=0.25)
    assert training_rewards(episode.transitions, spec) == [0.5, -0.25, 0.0, -0.25, 0.5]
    assert training_rewards(episode.transitions, NoOpSpec(effect="off", penalty=0.25))[1] == 0.0
    stop = NoOpStop(idle_after=3)
    reasons = [asyncio.run(stop.on_step(dataclasses.replace(episode, transitions=episode.transitions[:k + 1]), t))
               for k, t in enumerate(episode.transitions)]
    assert reasons == [None, "no-op: expected an element label", None, "no-op: 3 steps in a row fired nothing", None]


def test_a_run_whose_completions_are_all_truncated_stops_with_a_clear_error(tmp_path, tiny_dir) -> None:
    config = grpo_config(tmp_path / "dead", tiny_dir, reward="outcome", signal={"patience": 1},
                         tree={"branch_states": 0}, rollout={"max_steps": 1, "max_new_tokens": 4})
    with pytest.raises(TrainingSignalError, match="every one of 2 truncated for 1 updates"), \
            pytest.warns(DeadSignalWarning, match="1 of 1 groups"):
        train_grpo(config)  # the random-init model: 4 tokens never finish a reply


def test_dead_signal_checks_count_updates_in_a_row() -> None:
    loop = LoopState()
    truncated = BatchStats(steps=4, episodes=2, flat_groups=0, groups=1, truncated=4, returns=[0.0, 1.0])
    check_signal(loop, truncated, [0.0, 1.0], 1, patience=2)
    check_signal(loop, BatchStats(4, 2, 0, 1, 3, [0.0, 1.0]), [0.0, 1.0], 2, patience=2)  # streak broken
    check_signal(loop, truncated, [0.0, 1.0], 3, patience=2)
    with pytest.raises(TrainingSignalError, match="every one of 4 truncated for 2 updates"):
        check_signal(loop, truncated, [0.0, 1.0], 4, patience=2)
    loop, flat = LoopState(), BatchStats(4, 2, 1, 1, 0, [0.0, 0.0], silent_groups=1)
    with pytest.warns(DeadSignalWarning, match="update 1: 1 of 1 groups"):
        check_signal(loop, flat, [0.0] * 4, 1, patience=2)
    with pytest.raises(TrainingSignalError, match="every advantage zero .*every reward equal to 0.0.* for 2 updates"), \
            pytest.warns(DeadSignalWarning):
        check_signal(loop, flat, [0.0] * 4, 2, patience=2)
    # rewards that differ but cancel in every group (all advantages zero) are as dead
    loop, silent = LoopState(), BatchStats(4, 2, 0, 2, 0, [1.0, 1.0], silent_groups=2)
    check_signal(loop, silent, [0.0, 1.0, 0.0, 1.0], 1, patience=2)
    with pytest.raises(TrainingSignalError, match="every advantage zero"):
        check_signal(loop, silent, [0.0, 1.0, 0.0, 1.0], 2, patience=2)


def test_a_nan_loss_stops_the_update(tiny_policy, prompts) -> None:
    ids = completion_ids(tiny_policy, '{"action": "click"}')
    step = TrainStep(prompts[0], ids, [float("nan")] * len(ids), 1.0, False)
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])
    with pytest.raises(TrainingSignalError, match="update 7: expected a finite GRPO loss"):
        optimize(tiny_policy, None, [step], LossSpec(kl_coef=0.0), optimizer, torch.Generator(), update=7)


def test_curriculum_spawns_verified_variants_and_retires_solved_tasks() -> None:
    from fsm_sites.engine.state import State
    from fsm_sites.library import load_machine
    from harness.tasks.registry import make_task

    machine = load_machine("mail")
    variants = {v.id.split("~")[1]: v for v in make_variants("fsm:mail/star_two")}
    assert set(variants) == {"start2", "goal2"}  # star_two is 5 steps (the second star from the reading pane)
    start, goal = variants["start2"], variants["goal2"]
    assert machine.distance(State.from_key(start.start_state), machine.resolve_goal(start.goal)) == start.difficulty == 3
    assert machine.distance(machine.initial, machine.state_goal(State.from_key(goal.goal))) == goal.difficulty == 2
    assert goal.instruction.count(".") >= 2  # names the two steps to the nearer goal
    task_id = register_variant(start, "fsm:mail/star_two")
    assert make_task(task_id).id == task_id

    curriculum = Curriculum(["fsm:mail/star_two", "fsm:shop/open_mug"],
                            CurriculumSpec(variants_after=2, retire_after=2, window=4))
    assert curriculum.record("fsm:mail/star_two", [False, False]) == []
    spawned = curriculum.record("fsm:mail/star_two", [False, False])
    assert sorted(e.split("~")[1] for e in spawned) == ["goal2", "start2"]
    assert curriculum.record("fsm:mail/star_two", [False, False]) == []  # spawns once
    curriculum.record("fsm:shop/open_mug", [True, True])
    assert curriculum.record("fsm:shop/open_mug", [True, True]) == ["retired fsm:shop/open_mug"]
    picks = curriculum.sample(10, random.Random(0))
    assert "fsm:shop/open_mug" not in picks and len(picks) == 3
    assert set(curriculum.sample(10, random.Random(0), exclude=["fsm:mail/star_two"])) == set(picks) - {"fsm:mail/star_two"}
    summary = curriculum.summary()
    assert summary["fsm:mail/star_two"]["rate"] == 0.0 and summary["fsm:shop/open_mug"]["retired"]
    restored = Curriculum([], CurriculumSpec())
    restored.load_state_dict(curriculum.state_dict())
    assert restored.summary() == summary


def test_sampling_favours_tasks_neither_solved_nor_hopeless() -> None:
    curriculum = Curriculum(["a", "b", "c"], CurriculumSpec(window=4))
    curriculum.pool["a"].outcomes = [1.0, 1.0, 1.0, 1.0]
    curriculum.pool["b"].outcomes = [1.0, 0.0, 1.0, 0.0]
    curriculum.pool["c"].outcomes = [0.0, 0.0, 0.0, 0.0]
    rng = random.Random(0)
    counts = {t: 0 for t in "abc"}
    for _ in range(300):
        counts[curriculum.sample(1, rng)[0]] += 1
    assert counts["b"] > 5 * counts["a"] and counts["b"] > 5 * counts["c"]


def test_a_curriculum_pool_smaller_than_its_base_tasks_is_refused(tmp_path) -> None:
    from pydantic import ValidationError

    tasks = ["fsm:shop/add_lamp", "fsm:shop/search_open", "fsm:settings/open_laptop", "fsm:mail/open_m2"]
    with pytest.raises(ValidationError, match=r"max_pool of at least the 4 base tasks \+ 2.*got 5.*>= 6"):
        grpo_config(tmp_path, tmp_path, tasks=tasks, curriculum={"max_pool": 5})
    assert grpo_config(tmp_path, tmp_path, tasks=tasks, curriculum={"max_pool": 6}).curriculum.max_pool == 6
    assert Curriculum(tasks, CurriculumSpec()).max_pool == 12  # unset: room for every task's two variants
    with pytest.raises(ValidationError, match="expected env_steps of at least 1.*got 0"):
        grpo_config(tmp_path, tmp_path, env_steps=0)
    with pytest.raises(ValidationError, match="penalty > 0 with effect: penalize"):
        grpo_config(tmp_path, tmp_path, no_op={"effect": "penalize"})
    # a start model saved with its prompt is trained in that prompt
    (tmp_path / "cua_agent.yaml").write_text("codec: json\nobservation: elements\nelement_refs: index\n")
    with pytest.raises(ValidationError, match=r"trained with \(element_refs='index'.*got element_refs='label'"):
        grpo_config(tmp_path, tmp_path)
    assert grpo_config(tmp_path, tmp_path, prompt={"element_refs": "index"}).prompt.element_refs == "index"
    (tmp_path / "cua_agent.yaml").unlink()
    # the defaults a multi-turn run gets: episode-mean, discounted step returns, no-ops end episodes
    defaults = grpo_config(tmp_path, tmp_path)
    assert defaults.loss.aggregation == "episode-mean" and 0.9 <= defaults.advantage.gamma < 1
    assert defaults.no_op.effect == "end" and defaults.group.resample > 0


def test_the_cli_reports_every_bad_field_at_once_in_one_line(tmp_path) -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "harness.cli", "train", "grpo", "--config",
                           "trainers/configs/grpo-tiny.yaml", "--set", f"out={tmp_path / 'run'}",
                           "--set", "group.size=1", "--set", "reward=bogus", "--set", "loss.kl=1",
                           "--set", "rollout.backend=openai"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: cua train grpo: 4 bad field(s):")
    for field in ("group.size", "reward", "loss.kl", "rollout"):
        assert field in line
    assert not (tmp_path / "run").exists()


def _episode(task: str, steps: list[tuple[str, str, float]], first_step: int = 0):
    """A finished episode whose steps go (state before, state after, reward)."""
    from fsm_sites.serving.verdict import StepVerdict
    from harness.observation import StepInfo
    from harness.rollout import Episode, RolloutStep

    def obs(step: int) -> Observation:
        return Observation(screenshot=b"", image_format="png", width=1, height=1, instruction="", step=step)

    episode = Episode(task, 0, 0, None, obs(first_step), None)  # type: ignore[arg-type]
    for k, (before, after, reward) in enumerate(steps):
        verdict = StepVerdict(state_before=before, state_after=after, transition_fired=before != after,
                              on_shortest_path=reward > 0, distance_before=1, distance_after=0,
                              goal_reached=False)
        info = StepInfo(task=task, episode_id="e", action=None, raw_reward=reward, step_seconds=0.0,
                        verdict=verdict)
        step = first_step + k
        episode.transitions.append(RolloutStep(step + 1, obs(step), AgentStep(text="x"), obs(step + 1),
                                              reward, False, False, info))
    return episode


def test_a_branch_counts_its_prefix_in_its_return_and_shares_the_restored_state_group() -> None:
    from trainers.grpo.advantages import combined_advantages
    from trainers.grpo.batch import step_samples
    from trainers.grpo.rollouts import Rollout

    good = Rollout(_episode("t", [("A", "B", 1.0), ("B", "G", 1.0)]), "g", 0)
    bad = Rollout(_episode("t", [("A", "B", 1.0), ("B", "X", -1.0)]), "g", 1)
    branch = Rollout(_episode("t", [("B", "G", 1.0)], first_step=1), "g", 2,
                     prefix=bad.episode.transitions[:1], parent=1)
    samples, where = step_samples([good, bad, branch])
    assert [(s.episode, s.step, s.anchor, s.reward) for s in samples if s.episode == 2] == \
        [(2, -1, None, 1.0), (2, 0, "B", 1.0)]
    advantages = dict(zip([(r.number, t) for r, t in where], combined_advantages(samples, step_weight=1.0),
                          strict=True))
    # returns 2, 0, 2: the branch competes as a whole episode; from B, 1 and 1 beat -1
    assert advantages[(2, 0)] == pytest.approx(advantages[(0, 1)])
    assert advantages[(1, 1)] < 0 < advantages[(2, 0)]


def test_replay_brings_a_stored_success_into_a_group_without_one(tmp_path, tiny_dir) -> None:
    store = tmp_path / "store"
    teacher = grpo_config(tmp_path / "teacher", tiny_dir, updates=1, store=str(store), tree={"branch_states": 0})
    train_grpo(teacher, agent_class=TeacherMix)  # stores a solved episode of fsm:shop/open_mug
    out = tmp_path / "replay"
    config = grpo_config(out, tiny_dir, updates=1, store=str(store), tree={"branch_states": 0},
                         curriculum={"replay": True}, signal={"patience": 5})
    train_grpo(config)  # the random-init model alone never solves it
    [update] = lines(out, "update")
    assert update["success"] == 0.0 and update["replayed"] == 1 and update["flat_groups"] == 0
    before, after = weights(tiny_dir), weights(out / "model")
    assert any(not torch.equal(before[k], after[k]) for k in before if k in after)
