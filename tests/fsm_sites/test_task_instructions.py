"""Task synthesis says what the site does (issue 23): instructions that read cleanly on every
curated and some generated sites, structured goals measured from the task's start, and helper
variables marked `internal` never made a goal's subject."""

from __future__ import annotations

import random
import re

import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.generator import synthesize_site
from fsm_sites.library import EXAMPLES_DIR, list_sites, load_machine
from fsm_sites.spec.site import SiteSpec
from fsm_sites.synthesis.goals import structured
from fsm_sites.synthesis.tasks import _expr_goals, synthesize_tasks

# an empty quote ("type '' as ..."), an empty hole ("your new pet , Dog"), a hole or
# placeholder left as written, a Python value, the stand-in class of any other text
_BAD = re.compile(r"''|\"\"|\s,|,\s*,|\(\s*\)|[{}]|\$value|\s\s|something else|\b(None|True|False)\b")


def _clinic() -> dict:
    return yaml.safe_load((EXAMPLES_DIR / "clinic.yaml").read_text())


def test_instructions_read_cleanly_on_every_curated_and_some_generated_sites() -> None:
    specs = [load_machine(name).spec for name in list_sites()]
    specs += [SiteSpec.model_validate(yaml.safe_load(p.read_text())) for p in sorted(EXAMPLES_DIR.glob("*.yaml"))]
    specs += [synthesize_site(seed, d) for seed, d in ((0, "easy"), (1, "medium"), (2, "hard"))]
    bad = []
    for spec in specs:
        tasks = synthesize_tasks(spec, 12, seed=0) + synthesize_tasks(spec, 6, seed=1, start="random")
        assert tasks, spec.name
        bad += [(spec.name, t.instruction) for t in tasks if _BAD.search(t.instruction)]
    assert bad == []


def test_structured_goals_are_measured_from_the_start_not_the_default() -> None:
    machine = Machine(SiteSpec.model_validate(_clinic()))
    busy = machine.named_start("busy_week")  # three appointments already booked
    goals = _expr_goals(machine, busy, random.Random(0), 12, 15)
    assert goals
    held = [text for text, _ in goals if machine.resolve_goal("expr:" + text)(busy)]
    assert held == []
    tasks = synthesize_tasks(machine.spec, 10, seed=0, start="busy_week")
    assert all(t.difficulty > 0 for t in tasks)


def test_internal_variables_are_never_the_subject_of_a_goal() -> None:
    data = _clinic()
    for var in data["variables"]:
        if var["name"] in ("bookings", "form_day"):
            var["internal"] = True
    machine = Machine(SiteSpec.model_validate(data))
    assert structured(machine) == []
    goals = _expr_goals(machine, machine.initial, random.Random(0), 12, 15)
    assert goals and not [text for text, _ in goals if "bookings" in text or "form_day" in text]
