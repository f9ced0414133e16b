"""`cua sites ...` through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import typer
import yaml
from typer.testing import CliRunner

from fsm_sites.cli import register
from fsm_sites.library import EXAMPLES_DIR, list_sites
from fsm_sites.validation.validate import load_and_validate

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:  # a callback keeps `sites` as a subcommand group
        pass

    register(app)
    return app


def test_list_json() -> None:
    result = runner.invoke(_app(), ["sites", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list_sites()
    assert all(r["pages"] >= 8 and r["goals"] >= 4 and r["states_exact"] for r in rows)


def test_validate_ok_and_broken(tmp_path: Path) -> None:
    good = EXAMPLES_DIR / "tiny_shop.yaml"
    ok = runner.invoke(_app(), ["sites", "validate", str(good)])
    assert ok.exit_code == 0 and "valid" in ok.stdout
    data = yaml.safe_load(good.read_text())
    data["transitions"][0]["target"] = "basket"
    data["goals"][0]["conditions"][0]["var"] = "bag"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(data))
    bad = runner.invoke(_app(), ["sites", "validate", str(broken)])
    assert bad.exit_code == 1
    assert "transitions.open_cart.target" in bad.output and "goals.lamp_in_cart.conditions[0].var" in bad.output


def test_validate_json_reports_counts_and_lower_bounds(tmp_path: Path) -> None:
    small = runner.invoke(_app(), ["sites", "validate", "--json", str(EXAMPLES_DIR / "tiny_shop.yaml")])
    report = json.loads(small.stdout)
    assert small.exit_code == 0 and report["valid"] and report["reachable_states"] == 152
    assert report["reachable_states_exact"] and report["goal_depths"]["buy_two_express"] == 8
    big = runner.invoke(_app(), ["sites", "validate", "--json", "--count", "2000", str(EXAMPLES_DIR / "clinic.yaml")])
    report = json.loads(big.stdout)
    assert big.exit_code == 0 and (report["reachable_states_at_least"], report["reachable_states_exact"]) == (2000, False)
    data = yaml.safe_load((EXAMPLES_DIR / "clinic.yaml").read_text())
    data["transitions"][0]["target"] = "basket"
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(data))
    bad = runner.invoke(_app(), ["sites", "validate", "--json", str(broken)])
    assert bad.exit_code == 1 and json.loads(bad.stdout)["problems"][0]["place"] == "transitions.home_pets.target"


def test_synth_writes_valid_site(tmp_path: Path) -> None:
    out = tmp_path / "site.yaml"
    result = runner.invoke(_app(), ["sites", "synth", "--seed", "4", "--difficulty", "easy", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_and_validate(out).name.endswith("_easy_4")
    wrong = runner.invoke(_app(), ["sites", "synth", "--difficulty", "extreme", "--out", str(out)])
    assert wrong.exit_code == 2 and "expected --difficulty" in wrong.output


def test_path_prints_the_oracle_path_with_its_length_and_time() -> None:
    clinic = str(EXAMPLES_DIR / "clinic.yaml")
    shown = runner.invoke(_app(), ["sites", "path", clinic, "rex_vaccination"])
    assert shown.exit_code == 0, shown.output
    assert "clinic: goal 'rex_vaccination' from home: 5 step(s), found in " in shown.stdout
    assert "  5. book the appointment  [book(rex) submit click]" in shown.stdout
    data = json.loads(runner.invoke(_app(), ["sites", "path", "--json", "--start", "busy_week", clinic,
                                             "expr:count(bookings) == 0"]).stdout)
    assert data["length"] == 3 == len(data["path"]) and data["seconds"] >= 0
    assert [s["transition_id"] for s in data["path"]] == ["cancel_appointment"] * 3
    assert data["path"][0]["description"] == "cancel Rex's Check-up on Monday at 09:00"
    none = runner.invoke(_app(), ["sites", "path", str(EXAMPLES_DIR / "tiny_shop.yaml"), "expr:count(cart) > 2"])
    assert none.exit_code == 1 and "no state reachable from home meets goal" in none.output
    unknown = runner.invoke(_app(), ["sites", "path", "shop", "nope"])
    assert unknown.exit_code == 2 and "expected a goal of site 'shop'" in unknown.output
