"""Data-parallel GRPO: two real processes (gloo on the CPU) train one policy.

Each rank is a process started the way ``torchrun`` starts one (RANK, WORLD_SIZE,
MASTER_ADDR/PORT in its environment) and runs ``train_grpo`` with ``TeacherMix`` (a fake at
the model seam only, see test_grpo_train.py); envs, Chromium, FSM sessions, rewards, the
loss, DDP's all-reduce and the store are real. Each rank records what it wrote and its final
parameters, so the test can tell the ranks apart.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch

from tests.trainers.test_grpo_train import ROLLOUT, TeacherMix, grpo_config, lines, weights
from trainers.grpo.distributed import Outcome, Ranks, merge_figures


def _rank(rank: int, config: dict, port: int, record: str) -> None:
    """One rank of the run (the body of a torch.multiprocessing child)."""
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                       "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    from trainers.grpo import checkpoint, train
    from trainers.grpo.config import GRPOConfig
    from trainers.training.metrics import MetricsLog

    wrote: list[str] = []
    real_save, real_write, real_close = checkpoint.save, MetricsLog.write, train.Trainer.close

    def save(*args, **kwargs):
        wrote.append("checkpoint")
        return real_save(*args, **kwargs)

    def write(self, event, **fields):
        wrote.append(f"metrics:{event}")
        return real_write(self, event, **fields)

    async def close(self):
        torch.save(self.policy.model.state_dict(), Path(record) / f"params-{rank}.pt")
        wrote.extend(["store"] if self.store is not None else [])
        await real_close(self)

    checkpoint.save, MetricsLog.write, train.Trainer.close = save, write, close  # type: ignore[method-assign]
    train.train_grpo(GRPOConfig.model_validate(config), agent_class=TeacherMix)
    (Path(record) / f"wrote-{rank}.json").write_text(json.dumps(wrote))


def _optimize_rank(rank: int, port: int, model: str, record: str) -> None:
    """One rank of a bare ``optimize``: rank 0 has three steps, rank 1 one (two zero-weight
    passes), then a batch whose loss is NaN on rank 1 only."""
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                       "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    from tests.harness.store.helpers import screenshot
    from tests.trainers.conftest import make_prompt
    from trainers.errors import TrainingSignalError
    from trainers.grpo.batch import TrainStep
    from trainers.grpo.config import LossSpec
    from trainers.grpo.distributed import make_ranks
    from trainers.grpo.optimize import optimize
    from trainers.models.inputs import completion_ids, completion_logprobs
    from trainers.models.policy import PolicyConfig, load_policy

    torch.set_num_threads(1)
    ranks = make_ranks()
    policy = load_policy(PolicyConfig(path=Path(model), finetune="full", device="cpu"))
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    ranks.wrap(policy.model)
    prompt = make_prompt("Click the red button.", [screenshot("red")])
    ids = completion_ids(policy, '{"action": "click"}')
    with torch.no_grad():
        [old] = completion_logprobs(policy, [prompt], [ids])
    steps = [TrainStep(prompt, ids, old.tolist(), a, False) for a in ([1.0, -1.0, 0.5] if rank == 0 else [1.0])]
    spec = LossSpec(kl_coef=0.0, minibatch=1, epochs=1)
    figures = optimize(policy, None, steps, spec, optimizer, torch.Generator(), update=1, ranks=ranks)
    if rank == 1:
        steps = [TrainStep(prompt, ids, [float("nan")] * len(ids), 1.0, False)]
    error = None
    try:
        optimize(policy, None, steps, spec, optimizer, torch.Generator(), update=2, ranks=ranks)
    except TrainingSignalError as exc:
        error = str(exc)
    torch.save(policy.model.state_dict(), Path(record) / f"params-{rank}.pt")
    (Path(record) / f"result-{rank}.json").write_text(json.dumps({"minibatches": figures["minibatches"],
                                                                  "error": error}))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_two_ranks_train_one_policy_only_the_main_one_writes_and_resume(tmp_path, tiny_dir) -> None:
    out, record = tmp_path / "run", tmp_path / "ranks"
    record.mkdir()
    config = grpo_config(out, tiny_dir, updates=1, tasks=["fsm:shop/open_mug", "fsm:shop/add_lamp"],
                         group={"tasks": 2, "size": 2, "seeds": [0]},
                         tree={"branch_states": 1, "continuations": 1}, filmstrips=1,
                         loss={"epochs": 1, "minibatch": 2, "learning_rate": 1e-3, "kl_coef": 0.02},
                         eval={"tasks": ["fsm:shop/open_mug"], "episodes": 2, "every": 1, "max_steps": 1})
    torch.multiprocessing.start_processes(_rank, (config.model_dump(mode="json"), _free_port(), str(record)),
                                          nprocs=2, join=True, start_method="spawn")

    first, second = (torch.load(record / f"params-{r}.pt") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first), "expected identical parameters on both ranks"
    before = weights(tiny_dir)
    assert any(not torch.equal(before[k], v) for k, v in weights(out / "model").items() if k in before)
    assert all(torch.equal(first[k], v) for k, v in weights(out / "model").items() if k in first)

    wrote = [json.loads((record / f"wrote-{r}.json").read_text()) for r in (0, 1)]
    assert wrote[1] == [], f"expected rank 1 to write nothing, got {wrote[1]}"
    assert "checkpoint" in wrote[0] and "metrics:update" in wrote[0] and "store" in wrote[0]

    [update] = lines(out, "update")
    assert update["ranks"] == 2 and update["episodes"] == 4 and update["groups"] == 2
    assert update["branches"] == 2  # one per rank's group
    assert update["minibatches"] >= 2  # both ranks' minibatches counted
    assert [(e["phase"], e["episodes"]) for e in lines(out, "eval")] == [("before", 2), ("after", 2)]
    from harness.store.store import TrajectoryStore

    with TrajectoryStore(out / "store") as store:
        episodes = store.episodes()
    assert len(episodes) == 2 * (2 + 1)  # each rank's group and its branch, rank 1's written by rank 0
    assert {e.task_id for e in episodes} == {"fsm:shop/open_mug", "fsm:shop/add_lamp"}

    resumed = config.model_copy(update={"updates": 2, "resume": True, "eval": None})
    torch.multiprocessing.start_processes(_rank, (resumed.model_dump(mode="json"), _free_port(), str(record)),
                                          nprocs=2, join=True, start_method="spawn")
    first, second = (torch.load(record / f"params-{r}.pt") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert [u["update"] for u in lines(out, "update")] == [1, 2]
    assert json.loads((record / "wrote-1.json").read_text()) == []


def test_ranks_with_fewer_steps_take_zero_weight_passes_and_a_nan_stops_every_rank(tmp_path, tiny_dir) -> None:
    torch.multiprocessing.start_processes(_optimize_rank, (_free_port(), str(tiny_dir), str(tmp_path)),
                                          nprocs=2, join=True, start_method="spawn")  # a hang fails by timeout
    first, second = (torch.load(tmp_path / f"params-{r}.pt") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first)
    results = [json.loads((tmp_path / f"result-{r}.json").read_text()) for r in (0, 1)]
    assert [r["minibatches"] for r in results] == [3, 1]  # rank 1's two padding passes are not counted
    assert "update 2 (rank 0): another rank's GRPO loss was not finite" in results[0]["error"]
    assert "update 2 (rank 1): expected a finite GRPO loss" in results[1]["error"]


def test_ranks_take_alternate_group_slots_and_repeat_tasks_when_there_are_fewer() -> None:
    class Fake:
        device = "cpu"

        def __init__(self, rank: int, world: int) -> None:
            self.process_index, self.num_processes = rank, world

    assert Ranks().slots(3) == [0, 1, 2]
    assert Ranks(Fake(0, 2)).slots(3) == [0, 2] and Ranks(Fake(1, 2)).slots(3) == [1]
    assert Ranks(Fake(1, 2)).slots(1) == [1]  # slot 1 repeats task 0 with its own seeds
    assert Ranks(Fake(2, 3)).slots(2) == [2]


def test_gathered_outcomes_and_figures_add_up_over_ranks() -> None:
    from trainers.grpo.batch import BatchStats

    a = Outcome(BatchStats(3, 2, 1, 1, 0, [0.0, 1.0]), [0.0, 1.0, 0.5], [("t1", [False, True])],
                [(0.0, False, 0.0), (1.0, True, 1.0)], 1, 3, ["t1", "t1"])
    b = Outcome(BatchStats(2, 2, 0, 1, 2, [0.5, 0.5]), [0.5, 0.5], [("t2", [False, False])],
                [(0.5, False, 0.5), (0.5, False, 0.5)], 0, 2, ["t2", "t2"])
    merged = Outcome.merge([a, b])
    assert merged.stats == BatchStats(5, 4, 1, 2, 2, [0.0, 1.0, 0.5, 0.5])
    assert merged.groups == [("t1", [False, True]), ("t2", [False, False])]
    assert (merged.branches, merged.env_steps, len(merged.episodes)) == (1, 5, 4)
    assert Outcome.merge([a]) is a
    figures = merge_figures([{"loss": 1.0, "minibatches": 3}, {"loss": 3.0, "minibatches": 1}])
    assert figures == {"loss": 1.5, "minibatches": 4}


def test_a_multi_process_run_refuses_what_only_one_process_can_do(tmp_path, tiny_dir) -> None:
    from trainers.grpo.distributed import unsupported

    assert unsupported(grpo_config(tmp_path, tiny_dir)) is None
    assert "curriculum.replay: expected false" in (unsupported(grpo_config(tmp_path, tiny_dir, curriculum={
        "replay": True})) or "")
    assert "rollout.backend: expected hf" in (unsupported(grpo_config(tmp_path, tiny_dir, rollout={
        **ROLLOUT, "backend": "openai", "url": "http://127.0.0.1:1/v1"})) or "")


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs (NCCL data parallel)")
def test_two_gpu_ranks_train_one_policy(tmp_path, tiny_dir) -> None:
    """The same run on two GPUs: each rank's policy on cuda:RANK, gradients all-reduced by NCCL."""
    out, record = tmp_path / "run", tmp_path / "ranks"
    record.mkdir()
    config = grpo_config(out, tiny_dir, updates=1, model={"path": str(tiny_dir), "finetune": "full",
                                                           "device": "auto"},
                         group={"tasks": 2, "size": 2, "seeds": [0]}, tree={"branch_states": 0})
    torch.multiprocessing.start_processes(_rank, (config.model_dump(mode="json"), _free_port(), str(record)),
                                          nprocs=2, join=True, start_method="spawn")
    first, second = (torch.load(record / f"params-{r}.pt", map_location="cpu") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert [u["episodes"] for u in lines(out, "update")] == [4]
