"""Issue 26's GPU benchmark, kept from rotting on the CPU: the whole script at the tiny preset,
its budget and out-of-memory records, the 3B shapes it builds, and the wheel set for a GPU
machine without network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import gpu_phases
from benchmarks.bench_gpu import PRESETS, Budget, main, run_variant
from benchmarks.gpu_batch import FIXTURE, VIEWPORT, load_steps
from trainers.models.inputs import open_image

ROOT = Path(__file__).resolve().parents[2]


def test_the_tiny_run_on_the_cpu_writes_every_phase(tmp_path, capsys) -> None:
    out = tmp_path / "bench_gpu.json"
    # a budget no loaded CI machine reaches: the budget's skipping is the next test's, not this one's
    assert main(["--device", "cpu", "--preset", "tiny", "--budget-s", "1200", "--out", str(out)]) == 0
    run = json.loads(out.read_text())
    phases = run["phases"]
    assert list(phases) == ["peak", "correctness", "gpu_tests", "generate", "update/lora+ckpt",
                            "largest/lora+ckpt", "update/lora", "update/full+ckpt", "largest/full+ckpt",
                            "update/full"]
    assert all(p["status"] == "ok" for p in phases.values()), {k: p.get("reason") for k, p in phases.items()}
    check = phases["correctness"]
    assert check["passed"] and check["loss_cpu_fp32"][0] != 0.0  # a loss that can disagree
    tests = phases["gpu_tests"]["tests"]
    assert "tests.trainers.test_gpu::test_lora_with_checkpointing_steps_on_the_gpu" in tests
    assert {t["outcome"] for t in tests.values()} == {"skipped"}  # no CUDA here
    assert all(v["status"] == "ok" and v["new_tokens"] > 0 for v in phases["generate"]["batch_sizes"].values())
    for name in ("update/lora+ckpt", "update/lora", "update/full+ckpt", "update/full"):
        assert phases[name]["tokens"] > 0 and 0 < phases[name]["mfu"]
    assert phases["update/lora"]["trainable_params"] < phases["update/full"]["trainable_params"]
    assert phases["largest/lora+ckpt"]["largest"] == 2  # the tiny preset's cap
    assert list(phases["largest/lora+ckpt"]["tried"]) == ["1", "2"]
    assert "update/full+ckpt" in capsys.readouterr().out  # the table


def test_a_phase_that_does_not_fit_or_runs_out_of_memory_is_recorded_and_the_run_goes_on() -> None:
    budget = Budget(30)
    assert budget.run("big", 60, lambda: {"never": True}) is None

    def oom() -> dict:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    def broken() -> dict:
        raise ValueError("expected a batch, got none")

    budget.run("oom", 0, oom)
    budget.run("broken", 0, broken)
    budget.run("fine", 0, lambda: {"x": 1})
    assert budget.phases["big"] == {"status": "skipped", "reason": "needs about 60 s, 30 s left of --budget-s 30"}
    assert budget.phases["oom"]["status"] == "oom" and "2.00 GiB" in budget.phases["oom"]["reason"]
    assert budget.phases["broken"]["status"] == "error" and "ValueError" in budget.phases["broken"]["traceback"]
    assert budget.phases["fine"]["x"] == 1


def test_an_update_that_runs_out_of_memory_is_retried_at_half_the_batch(monkeypatch) -> None:
    tried: list[int] = []

    def update(policy, steps, finetune, peak_tflops):
        tried.append(len(steps))
        if len(steps) > 4:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.52 GiB")
        return {"status": "ok", "batch": len(steps), "tokens": 10 * len(steps)}, None

    monkeypatch.setattr(gpu_phases, "update", update)
    policy = type("Policy", (), {"model": torch.nn.Linear(2, 2), "device": torch.device("cpu")})()
    budget = Budget(60)
    run_variant(budget, PRESETS["tiny"], lambda finetune, checkpointing: policy, list(range(16)), "lora", False, None)
    assert tried == [16, 8, 4]
    assert budget.phases["update/lora"]["batch"] == 4 and budget.phases["update/lora"]["oom_at"] == 8


def test_phases_picks_what_runs_and_refuses_a_name_it_does_not_know(tmp_path, capsys) -> None:
    out = tmp_path / "bench_gpu.json"
    assert main(["--device", "cpu", "--preset", "tiny", "--phases", "update/full", "--out", str(out)]) == 0
    phases = json.loads(out.read_text())["phases"]
    assert list(phases) == ["peak", "update/full"]  # an update's MFU needs the same run's peak
    assert phases["update/full"]["mfu"] > 0
    with pytest.raises(SystemExit):
        main(["--device", "cpu", "--preset", "tiny", "--phases", "peak,update/ful", "--out", str(out)])
    err = capsys.readouterr().err
    assert "expected names among" in err and "got update/ful" in err


def test_the_3b_model_has_the_released_shapes_and_a_screenshot_its_token_count() -> None:
    from trainers.models.checkpoint import count_parameters
    from trainers.models.real_shapes import random_policy

    policy = random_policy("qwen2.5-vl-3b", device="meta")  # shapes only: no memory, no time
    assert count_parameters(policy.model).total == 3_754_622_976  # Qwen2.5-VL-3B-Instruct's
    steps = load_steps(FIXTURE, limit=1)
    image = open_image(steps[0].prompt.images[0])
    assert image.size == VIEWPORT
    batch = policy.processor.image_processor(images=[image], return_tensors="pt")
    assert batch["image_grid_thw"].tolist() == [[1, 58, 92]]  # 1288x812 pixels: 1,334 tokens


def test_the_wheel_set_is_what_the_gpu_path_needs_without_torch() -> None:
    listed = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_wheels.sh"), "list"], capture_output=True,
                            text=True, check=True, env={**os.environ, "PY": sys.executable}).stdout
    pins = dict(line.split("==") for line in listed.split())
    import peft
    import transformers

    assert pins["transformers"] == transformers.__version__ and pins["peft"] == peft.__version__
    # openai: the gpu tests import the GRPO loop, whose backends import it (the first H200 run's lesson)
    assert {"tokenizers", "safetensors", "accelerate", "pydantic", "jinja2", "pytest-asyncio", "openai"} <= set(pins)
    assert not {"torch", "torchvision", "vllm", "sympy", "qwen-vl-utils", "av"} & set(pins)
    assert not any(name.startswith("nvidia-") for name in pins)


@pytest.mark.parametrize("mode", ["install", "nonsense"])
def test_the_wheel_script_refuses_what_it_cannot_do(tmp_path, mode) -> None:
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_wheels.sh"), mode, str(tmp_path / "none")],
                          capture_output=True, text=True, env={**os.environ, "PY": sys.executable})
    assert done.returncode != 0
    assert ("expected wheels in" if mode == "install" else "expected list, download") in done.stderr
