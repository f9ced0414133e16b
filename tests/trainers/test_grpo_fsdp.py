"""FSDP GRPO (``distributed.strategy: fsdp``): two real processes shard one policy (FSDP2's
``fully_shard`` over gloo on the CPU).

The bare-update test runs the same two-rank ``optimize`` under FSDP and under DDP (ranks
with unequal step counts, a sharded reference for the KL, a rank that generates more often
than the other inside ``full_params``) and checks that FSDP ends where DDP does. The run
test drives ``train_grpo`` end to end (live Chromium, ``TeacherMix`` at the model seam, see
test_grpo_train.py), then resumes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from tests.trainers.test_grpo_dp import _free_port
from tests.trainers.test_grpo_train import ROLLOUT, TeacherMix, grpo_config, lines, weights


def _environ(rank: int, port: int) -> None:
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                       "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})


def _update_rank(rank: int, port: int, model: str, record: str, strategy: str) -> None:
    """One rank of a bare update: generation inside ``full_params`` (rank 0 twice, rank 1
    once), then ``optimize`` with a KL to the reference over 3 (rank 0) and 1 (rank 1) steps,
    then the full state dicts written (rank 0) and loaded back into fresh shards."""
    _environ(rank, port)
    from tests.harness.store.helpers import screenshot
    from tests.trainers.conftest import make_prompt
    from trainers.grpo.batch import TrainStep
    from trainers.grpo.config import LossSpec
    from trainers.grpo.distributed import make_ranks
    from trainers.grpo.optimize import optimize
    from trainers.models.generation import GenerationRequest, Generator
    from trainers.models.inputs import completion_ids, completion_logprobs
    from trainers.models.policy import PolicyConfig, load_policy

    torch.set_num_threads(1)
    ranks = make_ranks(strategy)
    config = PolicyConfig(path=Path(model), finetune="full", device="cpu")
    policy = load_policy(config)
    reference = load_policy(config.model_copy(update={"finetune": "none"})).model
    ranks.wrap(policy.model)
    ranks.wrap_frozen(reference)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    prompt = make_prompt("Click the red button.", [screenshot("red")])
    generated = []
    with ranks.full_params(policy.model):
        for _ in range(2 - rank):  # unequal call counts: no collective may run in here
            [out] = Generator(policy).generate([GenerationRequest(prompt, max_new_tokens=4, temperature=0.0)])
            generated.append(out.completion().token_ids)
    ids = completion_ids(policy, '{"action": "click"}')
    with ranks.full_params(policy.model), torch.no_grad():
        [old] = completion_logprobs(policy, [prompt], [ids])
    steps = [TrainStep(prompt, ids, old.tolist(), a, False) for a in ([1.0, -1.0, 0.5] if rank == 0 else [1.0])]
    spec = LossSpec(kl_coef=0.05, minibatch=1, epochs=2, max_grad_norm=0.05)
    figures = optimize(policy, reference, steps, spec, optimizer, torch.Generator().manual_seed(rank),
                       update=1, ranks=ranks)
    weights_now, optim_now = ranks.state(policy.model, optimizer)
    if rank == 0:
        torch.save(weights_now, Path(record) / f"{strategy}-weights.pt")
    again = load_policy(config)
    ranks.wrap(again.model)
    again_optimizer = torch.optim.AdamW(again.parameters(), lr=1e-3)
    both = [torch.load(Path(record) / f"{strategy}-weights.pt") if rank else weights_now, optim_now]
    both = ranks.gather(both)[0]  # rank 0's full dicts, on every rank (as a resume reads them)
    ranks.load_state(again.model, again_optimizer, *both)
    reloaded, reloaded_optim = ranks.state(again.model, again_optimizer)
    def same_state(a: dict, b: dict) -> bool:
        return a.keys() == b.keys() and all(torch.equal(torch.as_tensor(a[p][k]), torch.as_tensor(b[p][k]))
                                            for p in a for k in a[p])

    result = {"generated": generated, "minibatches": figures["minibatches"], "grad_norm": figures["grad_norm"],
              "reload_equal": rank != 0 or (all(torch.equal(reloaded[k], weights_now[k]) for k in weights_now)
                                            and same_state(reloaded_optim["state"], optim_now["state"]))}
    (Path(record) / f"{strategy}-{rank}.json").write_text(json.dumps(result))
    ranks.close()


def test_fsdp_updates_like_ddp_generates_whole_and_its_full_state_round_trips(tmp_path, tiny_dir) -> None:
    for strategy in ("fsdp", "ddp"):  # a hang (a collective on one rank only) fails by timeout
        torch.multiprocessing.start_processes(_update_rank, (_free_port(), str(tiny_dir), str(tmp_path), strategy),
                                              nprocs=2, join=True, start_method="spawn")
    fsdp, ddp = (torch.load(tmp_path / f"{s}-weights.pt") for s in ("fsdp", "ddp"))
    from trainers.models.policy import PolicyConfig, load_policy

    start = load_policy(PolicyConfig(path=tiny_dir, device="cpu")).model.state_dict()
    assert set(fsdp) == set(ddp)
    assert any(not torch.equal(fsdp[k], start[k]) for k in start if k in fsdp), "expected the update to move weights"
    worst = max((fsdp[k] - ddp[k]).abs().max().item() for k in fsdp)
    assert worst < 1e-5, f"expected FSDP to end where DDP does, got a largest difference of {worst}"
    results = {(s, r): json.loads((tmp_path / f"{s}-{r}.json").read_text()) for s in ("fsdp", "ddp") for r in (0, 1)}
    assert [results["fsdp", r]["minibatches"] for r in (0, 1)] == [6, 2]  # 2 epochs; padding not counted
    for r in (0, 1):
        assert results["fsdp", r]["generated"] == results["ddp", r]["generated"]  # whole weights, same tokens
        assert results["fsdp", r]["grad_norm"] == pytest.approx(results["ddp", r]["grad_norm"], rel=1e-4)
    assert results["fsdp", 0]["reload_equal"] and results["ddp", 0]["reload_equal"]


def _run_rank(rank: int, config: dict, port: int, record: str) -> None:
    """One rank of ``train_grpo``; records what it wrote and the full weights it ended with."""
    _environ(rank, port)
    from trainers.grpo import checkpoint, train
    from trainers.grpo.config import GRPOConfig

    wrote: list[str] = []
    real_save, real_close = checkpoint.save, train.Trainer.close

    def save(*args, **kwargs):
        wrote.append("checkpoint")
        return real_save(*args, **kwargs)

    async def close(self):
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full = get_model_state_dict(self.policy.model, options=StateDictOptions(full_state_dict=True))
        torch.save(full, Path(record) / f"params-{rank}.pt")
        await real_close(self)

    checkpoint.save, train.Trainer.close = save, close  # type: ignore[method-assign]
    train.train_grpo(GRPOConfig.model_validate(config), agent_class=TeacherMix)
    (Path(record) / f"wrote-{rank}.json").write_text(json.dumps(wrote))


@pytest.mark.slow
def test_two_fsdp_ranks_train_one_sharded_policy_and_resume(tmp_path, tiny_dir) -> None:
    out, record = tmp_path / "run", tmp_path / "ranks"
    record.mkdir()
    config = grpo_config(out, tiny_dir, updates=1, tasks=["fsm:shop/open_mug", "fsm:shop/add_lamp"],
                         group={"tasks": 2, "size": 2, "seeds": [0]}, tree={"branch_states": 1, "continuations": 1},
                         loss={"epochs": 1, "minibatch": 2, "learning_rate": 1e-3, "kl_coef": 0.02},
                         eval={"tasks": ["fsm:shop/open_mug"], "episodes": 2, "every": 1, "max_steps": 1},
                         distributed={"strategy": "fsdp"})
    torch.multiprocessing.start_processes(_run_rank, (config.model_dump(mode="json"), _free_port(), str(record)),
                                          nprocs=2, join=True, start_method="spawn")
    first, second = (torch.load(record / f"params-{r}.pt") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first), "expected one policy (its shards) on both ranks"
    before, saved = weights(tiny_dir), weights(out / "model")
    assert any(not torch.equal(before[k], v) for k, v in saved.items() if k in before)
    assert all(torch.equal(first[k], saved[k]) for k in saved if k in first)  # the gathered final model
    assert json.loads((record / "wrote-1.json").read_text()) == []
    [update] = lines(out, "update")
    assert update["ranks"] == 2 and update["episodes"] == 4 and update["branches"] == 2
    assert [(e["phase"], e["episodes"]) for e in lines(out, "eval")] == [("before", 2), ("after", 2)]
    [ckpt] = sorted((out / "checkpoints").glob("update-*"))
    optim = torch.load(ckpt / "optimizer.pt")
    assert all(isinstance(k, str) for k in optim["state"]), "expected AdamW's full state keyed by name"

    resumed = config.model_copy(update={"updates": 2, "resume": True, "eval": None})
    torch.multiprocessing.start_processes(_run_rank, (resumed.model_dump(mode="json"), _free_port(), str(record)),
                                          nprocs=2, join=True, start_method="spawn")
    first, second = (torch.load(record / f"params-{r}.pt") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], saved[k]) for k in saved if k in first)  # update 2 trained on
    assert [u["update"] for u in lines(out, "update")] == [1, 2]


def test_a_checkpoint_resumes_only_under_the_strategy_that_wrote_it(tmp_path) -> None:
    import random

    from trainers.errors import ConfigError
    from trainers.grpo import checkpoint
    from trainers.grpo.config import CurriculumSpec
    from trainers.grpo.curriculum import Curriculum

    model = torch.nn.Linear(2, 2)
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda u: 1.0)
    parts = {"scheduler": scheduler, "sampler": random.Random(0), "shuffle": torch.Generator(),
             "curriculum": Curriculum(["fsm:shop/open_mug"], CurriculumSpec())}
    path = checkpoint.save(tmp_path, checkpoint.LoopState(update=1), model_state=model.state_dict(),
                           optimizer_state=optimizer.state_dict(), strategy="fsdp", **parts)
    with pytest.raises(ConfigError, match=r"distributed.strategy: expected the strategy that wrote .* \(fsdp\), got ddp"):
        checkpoint.load(path, strategy="ddp", **parts)
    loop, weights_back, _ = checkpoint.load(path, strategy="fsdp", **parts)
    assert loop.update == 1 and torch.equal(weights_back["weight"], model.weight.detach())


def test_fsdp_refuses_what_it_cannot_shard(tmp_path, tiny_dir) -> None:
    from trainers.grpo.distributed import unsupported

    fsdp = {"strategy": "fsdp"}
    assert unsupported(grpo_config(tmp_path, tiny_dir, distributed=fsdp)) is None
    base = grpo_config(tmp_path, tiny_dir, distributed=fsdp)
    pointer = base.model_copy(update={"model": base.model.model_copy(update={"pointer_head": True})})
    assert "model.pointer_head: expected false with distributed.strategy: fsdp" in (unsupported(pointer) or "")
    vllm = grpo_config(tmp_path, tiny_dir, rollout={**ROLLOUT, "backend": "vllm"})
    assert "rollout.backend: expected hf with more than one process, got vllm" in (unsupported(vllm) or "")


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA GPUs (NCCL FSDP)")
def test_two_gpu_fsdp_ranks_train_one_policy(tmp_path, tiny_dir) -> None:
    """The same run on two GPUs: each rank's shards on cuda:RANK, NCCL collectives, LoRA."""
    out, record = tmp_path / "run", tmp_path / "ranks"
    record.mkdir()
    config = grpo_config(out, tiny_dir, updates=1, distributed={"strategy": "fsdp"},
                         model={"path": str(tiny_dir), "finetune": "lora", "device": "auto"},
                         group={"tasks": 2, "size": 2, "seeds": [0]}, tree={"branch_states": 0})
    torch.multiprocessing.start_processes(_run_rank, (config.model_dump(mode="json"), _free_port(), str(record)),
                                          nprocs=2, join=True, start_method="spawn")
    first, second = (torch.load(record / f"params-{r}.pt", map_location="cpu") for r in (0, 1))
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert [u["episodes"] for u in lines(out, "update")] == [4]
    assert (out / "model" / "adapter_config.json").is_file()
