"""Issue 21 row 5's throughput benchmark, kept from rotting: its quick run times the project's
SFT step and GRPO update on the tiny model and reports figures a reader can trust."""

from __future__ import annotations

import json

from benchmarks.bench_throughput import main


def test_the_quick_run_measures_sft_and_grpo_against_the_same_runs_matmul(tmp_path, capsys) -> None:
    out = tmp_path / "bench_throughput.json"
    main(["--quick", "--out", str(out)])
    run = json.loads(out.read_text())
    cells = {(c["preset"], c["trainer"]): c for c in run["cells"]}
    assert list(cells) == [("tiny", "sft"), ("tiny", "grpo")]
    for cell in cells.values():
        assert cell["threads"] == 1 and cell["batch"] == 4
        assert len(cell["seconds_each"]) == len(cell["tokens_each"]) == len(cell["flops_each"]) == 2
        assert cell["seconds"] > 0 and cell["tokens_per_s"] > 0 and cell["peak_gflops"] > 0
        assert 0 < cell["ratio"] < 1, cell  # the model's FLOP/s never beat a plain matmul's
        assert cell["ratio"] == cell["gflops"] / cell["peak_gflops"]
        language = cell["params"]["language"]
        for tokens, flops in zip(cell["tokens_each"], cell["flops_each"], strict=True):
            # forward + backward: 3 x (2 P T + causal attention), attention well below the
            # matmuls at these lengths, and nothing from the vision tower (no image)
            assert 6 * language * tokens < flops < 2 * 6 * language * tokens
        assert cell["load_before"] >= 0 and cell["load_after"] >= 0 and cell["cpu_share"] > 0
        assert len(cell["cpu_seconds_each"]) == 2
    sft = cells[("tiny", "sft")]
    assert all(p > t for p, t in zip(sft["padded_tokens_each"], sft["tokens_each"], strict=True))  # padding not counted
    assert cells[("tiny", "grpo")]["trainable_params"] == sft["trainable_params"]  # full fine-tuning both
    assert "tiny grpo" in capsys.readouterr().out  # the table
