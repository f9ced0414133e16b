"""`cua eval` end to end, and the summary and report pieces it is made of."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from harness.evaluation import SUMMARY_KEYS, summarize
from harness.evaluation.cli import register
from harness.records import EpisodeRecord, StepRecord
from harness.step_display import action_svg


def _app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command("version")  # a second command keeps typer from flattening `eval`
    def version() -> None:
        return None

    return app


def test_cua_eval_writes_all_outputs_and_resume_skips(tmp_path) -> None:
    out = tmp_path / "run"
    args = ["eval", "--suite", "miniwob:click-test,click-button", "--agent", "random",
            "--episodes", "2", "--concurrency", "2", "--seed", "3", "--max-steps", "3",
            "--out", str(out)]
    result = CliRunner().invoke(_app(), args)  # with the progress bar
    assert result.exit_code == 0, result.output
    assert "report.html" in result.output
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4
    first = json.loads(lines[0])
    for key in ("task", "seed", "success", "reward", "raw_reward", "steps", "wall_seconds", "trajectory"):
        assert key in first
    summary = json.loads((out / "summary.json").read_text())
    assert tuple(summary) == SUMMARY_KEYS and summary["episodes"] == 4
    assert set(summary["per_task"]) == {"miniwob:click-test", "miniwob:click-button"}
    assert set(summary["per_task"]["miniwob:click-test"]) == set(SUMMARY_KEYS) - {"per_task", "sampled"}
    assert summary["sampled"] is None
    solved = round(summary["success_rate"] * 4)
    assert f"solved {solved} · unsolved {4 - solved} · infra errors 0" in result.output
    # the table: the ids' shared prefix once, in the caption; each row the rest, whole
    assert "task ids begin with miniwob:" in result.output and "miniwob:click" not in result.output
    assert "│ click-button" in result.output and "│ click-test" in result.output
    html = (out / "report.html").read_text()
    assert html.count('class="episode"') == 4 and "<svg" in html and "episodes/" in html

    again = CliRunner().invoke(_app(), [*args, "--resume", "--no-progress"])
    assert again.exit_code == 0, again.output
    assert (out / "results.jsonl").read_text().splitlines() == lines


def test_cua_eval_refuses_bad_input_before_starting_a_browser(tmp_path) -> None:
    base = ["eval", "--out", str(tmp_path), "--no-progress"]
    typo = CliRunner().invoke(_app(), [*base, "--suite", "miniwob:clik-test"])
    assert typo.exit_code == 2 and "click-test" in typo.output
    assert "list the suite's tasks with `cua tasks list miniwob`" in typo.output
    oracle = CliRunner().invoke(_app(), [*base, "--suite", "miniwob:book-flight", "--agent", "oracle"])
    assert oracle.exit_code == 2 and "book-flight" in oracle.output
    agent = CliRunner().invoke(_app(), [*base, "--suite", "miniwob:click-test", "--agent", "gpt"])
    assert agent.exit_code == 2 and "random" in agent.output
    assert not (tmp_path / "results.jsonl").exists()


def _record(task: str, index: int, **kw) -> EpisodeRecord:
    return EpisodeRecord(task=task, seed=index, index=index, episode=f"{task}-{index}", **kw)


def test_summary_figures_by_hand() -> None:
    records = [
        _record("a", 0, success=True, reward=0.8, steps=2, wall_seconds=1.0, progress=1.0),
        _record("a", 1, success=False, reward=-1.0, steps=4, wall_seconds=3.0, trajectory=[
            StepRecord(step=i + 1, action=None, error="expected an element label" if i < 3 else None,
                       reward=0.0, raw_reward=0.0) for i in range(4)]),
        _record("b", 0, success=True, reward=1.0, steps=2, wall_seconds=1.0, progress=1.0),
        _record("b", 1, error="SandboxCrashed: gone"),  # not scored
        _record("b", 0, success=False, reward=-1.0, steps=2, wall_seconds=1.0),  # resumed: wins
    ]
    summary = summarize(records)
    assert summary["episodes"] == 3 and summary["success_rate"] == round(1 / 3, 4)
    assert summary["progress"] == round(1 / 3, 4)  # progress defaults to 1 on success, else 0
    assert summary["mean_reward"] == round((0.8 - 1.0 - 1.0) / 3, 4)
    assert summary["steps"] == 8 and summary["wall_seconds"] == 5.0 and summary["steps_per_second"] == 1.6
    assert summary["refused_steps"] == round(3 / 8, 4) and summary["per_task"]["b"]["refused_steps"] == 0.0
    assert summary["per_task"]["a"]["success_rate"] == 0.5 and summary["per_task"]["b"]["episodes"] == 1
    # Wilson 95% intervals: 1/3 -> 0.0615-0.7923; 0/1 -> 0-0.7935 (z^2 / (1 + z^2))
    assert summary["success_ci"] == [0.0615, 0.7923] and summary["per_task"]["b"]["success_ci"] == [0.0, 0.7935]
    assert summary["sampled"] is None
    sampled = summarize([*records, _record("a", 2, temperature=1.0, success=True, steps=1, wall_seconds=1.0)])
    assert summary == {**sampled, "sampled": None}  # sampled episodes stay out of the top figures
    assert sampled["sampled"]["temperatures"] == [1.0] and sampled["sampled"]["episodes"] == 1
    assert sampled["sampled"]["success_ci"] == [0.2065, 1.0]  # 1/1: 1 / (1 + z^2)


def test_actions_are_drawn() -> None:
    click = action_svg({"type": "click", "x": 10, "y": 20}, 160, 210)
    assert 'cx="10"' in click and click.count("<line") == 2
    drag = action_svg({"type": "drag", "x": 1, "y": 2, "to_x": 30, "to_y": 40}, 160, 210)
    assert 'x2="30"' in drag and "marker-end" in drag
    typed = action_svg({"type": "type_text", "text": "<hi>"}, 160, 210)
    assert "&lt;hi&gt;" in typed and "<text" in typed
    assert action_svg(None, 160, 210) == ""


def test_cua_eval_with_store_config_file_and_step_rewards(tmp_path) -> None:
    """`--config` gives the fields, options override it, `--store` keeps every episode in
    the tree store, and the step verdicts reach results.jsonl, summary.json and the report."""
    config = tmp_path / "eval.yaml"
    config.write_text("suite: fsm:shop/open_mug\nagent: random\nepisodes: 3\nreward: step\n"
                      "concurrency: 1\nprogress: false\n")
    out, store_dir = tmp_path / "run", tmp_path / "store"
    result = CliRunner().invoke(_app(), ["eval", "--config", str(config), "--agent", "oracle",
                                         "--out", str(out), "--store", str(store_dir)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(r["success"] and r["reward_mode"] == "step" for r in records)
    for record in records:
        steps = record["trajectory"]
        assert all(s["verdict"]["on_shortest_path"] for s in steps)
        # verdict-shaped: 1/d0 per step on the path, plus 1 at the goal
        d0 = record["start_distance"]
        assert record["reward"] == round(1.0 + len(steps) / d0, 6) and record["progress"] == 1.0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["progress"] == 1.0
    html = (out / "report.html").read_text()
    assert html.count("· on the shortest path ·") == sum(len(r["trajectory"]) for r in records)
    assert 'target="_blank"' in html  # a screenshot opens full size

    from harness.store import TrajectoryStore

    store = TrajectoryStore(store_dir)
    assert len(store.episodes()) == 3 and all(e.success and e.agent == "oracle" for e in store.episodes())
    assert {t.env for t in store.trees()} == {f"fsm:shop/open_mug@seed={s}" for s in (0, 1, 2)}


def test_config_file_errors_name_every_bad_field(tmp_path) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text("suite: miniwob:click-test\nepisodes: 0\nconcurency: 2\n")
    result = CliRunner().invoke(_app(), ["eval", "--config", str(config), "--out", str(tmp_path / "x"),
                                         "--set", "reward=money"])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    for part in ("--episodes (episodes)", "concurency", "--reward (reward)", "3 bad field(s)"):
        assert part in result.output
    assert not (tmp_path / "x").exists()


def test_cua_eval_compare_pairs_two_real_runs(tmp_path) -> None:
    """The oracle against the random agent on the same episodes: every pair discordant
    for A, exact McNemar 2 * (1/2)^3, the Newcombe CI of +1; then the clear refusals."""
    common = ["--suite", "fsm:shop/open_mug", "--episodes", "3", "--concurrency", "2", "--no-progress"]
    for agent, out in (("oracle", "a"), ("random", "b")):
        result = CliRunner().invoke(_app(), ["eval", *common, "--agent", agent, "--max-steps", "2",
                                             "--out", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
    shown = CliRunner().invoke(_app(), ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert shown.exit_code == 0, shown.output
    assert "+100.0 pts" in shown.output and "McNemar p = 0.25" in shown.output
    as_json = CliRunner().invoke(_app(), ["eval", "compare", str(tmp_path / "a"),
                                          str(tmp_path / "b" / "results.jsonl"), "--json"])
    [group] = json.loads(as_json.output)["groups"]
    assert (group["pairs"], group["only_a"], group["only_b"], group["both"]) == (3, 3, 0, 0)
    assert group["mcnemar_p"] == 0.25 and group["difference"] == 1.0
    # Newcombe with p1 = 1 (Wilson 0.4385-1), p2 = 0 (Wilson 0-0.5615), phi = 0:
    # lower = 1 - sqrt(0.5615^2 + 0.5615^2) = 1 - 0.7941 = 0.2059
    assert group["difference_ci"] == [0.2059, 1.0] and group["ci_a"] == [0.4385, 1.0]
    assert group["per_task"] == {"fsm:shop/open_mug": {"pairs": 3, "success_a": 3, "success_b": 0,
                                                       "difference": 1.0}}

    missing = CliRunner().invoke(_app(), ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "c")])
    assert missing.exit_code == 2 and "RUN_B" in missing.output and "not there" in missing.output
    (tmp_path / "other").mkdir()
    shifted = [json.loads(line) | {"seed": 100} for line in (tmp_path / "b" / "results.jsonl").open()]
    (tmp_path / "other" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in shifted))
    unpaired = CliRunner().invoke(_app(), ["eval", "compare", str(tmp_path / "a"), str(tmp_path / "other")])
    assert unpaired.exit_code == 2 and "same --suite, --seed" in unpaired.output


def test_cua_eval_refuses_samples_from_an_agent_that_cannot_sample(tmp_path) -> None:
    result = CliRunner().invoke(_app(), ["eval", "--suite", "miniwob:click-test", "--agent", "random",
                                         "--samples", "2", "--out", str(tmp_path / "x"), "--no-progress"])
    assert result.exit_code == 2 and "--samples" in result.output and "hf" in result.output
    assert not (tmp_path / "x").exists()


def test_demo_index_shows_before_and_after_success_with_its_interval(tmp_path) -> None:
    from harness.demo import Stage, write_index
    from harness.evaluation import write_summary

    for name, solved in (("tiny_before", 0), ("tiny_after", 3)):
        (tmp_path / name).mkdir()
        write_summary(tmp_path / name / "summary.json",
                      [_record("fsm:t", i, success=i < solved) for i in range(4)])
    stage = Stage("eval <before>", ["eval", "--out", "tiny_before"], {"report": "tiny_before/summary.json"})
    page = write_index(tmp_path, [(stage, 0, 1.5)]).read_text()
    assert "eval &lt;before&gt;" in page and '<a href="tiny_before/summary.json">report</a>' in page
    # Wilson: 0/4 -> [0, z^2 / (4 + z^2)] = [0, 49%]; 3/4 -> [30%, 95%]
    assert "0% [0–49]" in page and "75% [30–95]" in page and page.index("0% [0–49]") < page.index("75%")
