"""The verl agent loop against verl 0.9.1's real classes, in ``.venv-verl`` (``make verl-venv``;
verl pins a transformers older than this venv's TRL needs): an FSM episode in real Chromium,
the LLM server replaced at its transport seam (verl's ``LLMServerClient`` with in-process
actor handles) by the tiny model. tests/trainers/verl_loop_driver.py runs there; this
test checks what it reports."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness.codecs.base import excerpt

ROOT = Path(__file__).resolve().parents[2]
VERL_PYTHON = ROOT / ".venv-verl" / "bin" / "python"
DRIVER = Path(__file__).with_name("verl_loop_driver.py")

pytestmark = pytest.mark.skipif(
    not VERL_PYTHON.is_file(),
    reason=f"no verl venv at {VERL_PYTHON.parent.parent}: `make verl-venv` builds it "
           "(`make test` does so first)")


@pytest.fixture(scope="module")
def report(tiny_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("verl") / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([str(VERL_PYTHON), str(DRIVER), str(tiny_dir), str(out)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text(encoding="utf-8"))


def test_the_episode_is_model_turns_and_observation_turns(report: dict) -> None:
    assert report["type"] == "CUAAgentLoopOutput"
    # three model turns (1) with the two observations between them (0); none after the last
    assert [run[0] for run in report["mask_runs"]] == [1, 0, 1, 0, 1]
    assert report["mask_len"] == report["response_len"] == report["mask_runs"][-1][2]
    # the tiny model's own first text is the agent's mistake; then the oracle's, forced
    first, *rest = report["model_texts"]
    assert rest == report["scripted"] and len(rest) == 2
    error, verdict = report["observations"]
    assert "Last action error: json codec: expected a JSON object" in error
    assert "Step verdict: nothing changed" in error
    assert excerpt(first)[:20] in error  # the model's own text, quoted as the codecs quote it
    assert "Step verdict: closer to the goal (2 -> 1 steps away)" in verdict
    assert report["prompt_tail"].endswith(  # the prompt builder's opening
        "Instruction: Open the page of Coffee mug.\nPrevious actions:\n(none)\nNext action:"
        "<|im_end|>\n<|im_start|>assistant\n")
    assert report["server_calls"] == 3 and report["released"] == 3
    assert report["timings_positive"]  # verl's generate_sequences and tool_calls timings


def test_the_messages_are_the_prompt_builders_transcript(report: dict) -> None:
    """Prompt parity (as test_adapter_prompts.py for the other adapters): on the observations
    the episode met, the loop's conversation is the builder's opening, then its feedback
    after each reply, with each step's screenshot."""
    transcript = report["transcript"]
    assert transcript["loop"] == transcript["builder"]
    assert transcript["images_are_the_screenshots"] == [True] * 3


def test_screenshots_travel_as_image_data(report: dict) -> None:
    # the first screenshot and one per observation; the placeholder tokens in the ids are
    # exactly what the processor makes of those images (verl's postprocess relies on it)
    assert report["images"] == 3
    assert report["image_pad_tokens"] == report["image_pad_expected"] > 0


def test_rewards_per_turn_reach_the_advantage(report: dict) -> None:
    assert report["reward_score"] == 2.0
    assert report["num_turns"] == 6  # the prompt, three model turns, two observations
    assert report["extra_fields"] == {"turn_scores": [0.0, 0.5, 1.5], "tool_rewards": [],
                                      "success": True, "task": "fsm:shop/open_mug", "seed": 3}
    # rm_scores: each turn's reward on its last model token
    ends = [run[2] - 1 for run in report["mask_runs"] if run[0] == 1]
    assert report["rm_scores_nonzero"] == {str(ends[1]): 0.5, str(ends[2]): 1.5}
    # verl's compute_advantage with "cua_step_grpo": this episode against a group mate with
    # the same tokens and no reward: +2 (episode +1, each turn +1) on every model token,
    # -2 for the mate, 0 on the observations
    for row, sign in ((0, 1), (1, -1)):
        for (value, _, _), advantages in zip(report["mask_runs"], report["advantages_by_run"][row],
                                             strict=True):
            assert len(advantages) == 1
            assert advantages[0] == (pytest.approx(2.0 * sign, abs=1e-4) if value else 0.0)


def test_bad_config_and_rows_are_named(report: dict) -> None:
    config = report["refused"]["config"]
    assert "cua section" in config and "reward" in config and "colour" in config
    assert "expected the dataset row to name a task" in report["refused"]["row"]


def test_the_episode_runs_through_the_rollout_loop_into_the_store(report: dict) -> None:
    # the store sink of harness.rollout wrote the episode: one node per model turn, what
    # the agent got from verl (its text and tokens), the screenshots each prompt held
    stored = report["stored"]
    assert stored["episodes"] == [["fsm:shop/open_mug", "verl", 3, True, 2.0]]
    assert stored["completions"] == report["model_texts"]
    assert all(count > 0 for count in stored["token_counts"])
    assert stored["prompt_counts"] == sorted(stored["prompt_counts"])  # a growing transcript
    assert stored["images"] == [1, 2, 3]


def test_a_stuck_server_ends_at_the_episode_timeout(report: dict) -> None:
    timeout = report["timeout"]
    assert timeout["error"] is not None, "expected EpisodeTimeout from a server that never answers"
    assert timeout["type"] == "EpisodeTimeout"
    assert "within 8" in timeout["error"] and timeout["server_calls"] == 1
    assert 8 <= timeout["seconds"] < 60
    # the store dropped the episode in flight: still only the first
    assert report["stored_after_failures"] == report["stored"]["episodes"]


def test_a_failing_server_is_infrastructure_not_the_agents_mistake(report: dict) -> None:
    broken = report["broken"]
    assert broken["type"] == "GenerationError", broken  # not an episode ended by an agent error
    assert "RuntimeError: engine died" in broken["error"] and broken["server_calls"] == 1
    assert report["stored_after_failures"] == report["stored"]["episodes"]  # nothing stored
