"""Specs for ``bench_engine``: the clinic of issue 11 in two forms.

- ``clinic_flat()``: the cut-down clinic as today's spec language forces it (the issue's
  first paragraph): no records, so each pet keeps one booking, spelled out as an enum of
  every (service, day, time); no copy, so booking takes one transition per combination;
  one page per pet. About 90,000 reachable states, today's size.
- ``fsm_sites/library/examples/clinic.yaml``: the faithful clinic with the new constructs
  (bookings as a set of records, one page per pet by parameter, a disabled Book button,
  toasts): over 10^7 reachable states (``clinic_lower_bound``).
"""

from __future__ import annotations

from math import comb
from pathlib import Path
from typing import Any

import yaml

CLINIC = Path(__file__).resolve().parent.parent / "fsm_sites" / "library" / "examples" / "clinic.yaml"
PETS = ("rex", "milo", "luna")
SERVICES = ("checkup", "dental")
DAYS = ("mon", "wed")
TIMES = ("0900", "1400")


def clinic_flat() -> dict[str, Any]:
    """The cut-down clinic in today's constructs only (see the module docstring)."""
    combos = [f"{s}_{d}_{t}" for s in SERVICES for d in DAYS for t in TIMES]
    variables = [{"name": f"booking_{p}", "type": "enum", "values": ["", *combos]} for p in PETS]
    variables += [{"name": "form_service", "type": "enum", "values": list(SERVICES)},
                  {"name": "form_day", "type": "enum", "values": list(DAYS)},
                  {"name": "form_time", "type": "enum", "values": list(TIMES)},
                  {"name": "reminders", "type": "bool"}, {"name": "sms", "type": "bool"}]
    nav = [("home", "Home"), ("pets", "Pets"), ("appointments", "Appointments"), ("settings", "Settings")]
    pages: list[dict[str, Any]] = []
    transitions: list[dict[str, Any]] = []

    def page(pid: str, title: str, elements: list[dict[str, Any]], *, with_nav: bool = True) -> None:
        links = [{"id": f"nav_{t}", "kind": "link", "label": label, "section": "nav"} for t, label in nav if t != pid]
        pages.append({"id": pid, "title": title, "elements": (links if with_nav else []) + elements})
        if with_nav:
            transitions.extend({"id": f"{pid}_to_{t}", "page": pid, "element": f"nav_{t}", "target": t,
                                "description": f"open {label}"} for t, label in nav if t != pid)

    page("home", "Clinic", [])
    page("pets", "Pets", [{"id": p, "kind": "card", "label": p.title()} for p in PETS])
    transitions += [{"id": f"open_{p}", "page": "pets", "element": p, "target": f"pet_{p}",
                     "description": f"open {p.title()}"} for p in PETS]
    page("appointments", "Appointments", [{"id": f"cancel_{p}", "kind": "button", "label": f"Cancel {p}",
                                           "visible_when": [{"var": f"booking_{p}", "op": "nonempty"}]} for p in PETS])
    transitions += [{"id": f"cancel_{p}", "page": "appointments", "element": f"cancel_{p}",
                     "effects": [{"op": "clear", "var": f"booking_{p}"}], "description": f"cancel {p}"} for p in PETS]
    page("settings", "Settings", [{"id": "reminders", "kind": "checkbox", "label": "Reminders", "bind": "reminders"},
                                  {"id": "sms", "kind": "checkbox", "label": "SMS", "bind": "sms"}])
    for var in ("reminders", "sms"):
        transitions += [
            {"id": f"{var}_on", "page": "settings", "element": var, "event": "check", "when": [{"var": var, "value": False}],
             "effects": [{"op": "set", "var": var, "value": True}], "description": f"turn on {var}"},
            {"id": f"{var}_off", "page": "settings", "element": var, "event": "uncheck", "when": [{"var": var, "value": True}],
             "effects": [{"op": "set", "var": var, "value": False}], "description": f"turn off {var}"}]
    for p in PETS:
        _pet_pages(p, page, transitions, combos)
    goals = [{"id": "rex_dental", "description": "book Rex's dental care on Wednesday at 14:00",
              "conditions": [{"var": "booking_rex", "value": "dental_wed_1400"}]},
             {"id": "two_pets", "description": "book Rex's dental care on Wednesday at 14:00 and Luna's check-up on Monday at 14:00, with SMS",
              "conditions": [{"var": "booking_rex", "value": "dental_wed_1400"},
                             {"var": "booking_luna", "value": "checkup_mon_1400"}, {"var": "sms", "value": True}]}]
    return {"name": "clinic_flat", "title": "Clinic (flat)", "start_page": "home", "variables": variables,
            "pages": pages, "transitions": transitions, "goals": goals, "max_states": 200_000}


def _pet_pages(p: str, page, transitions: list[dict[str, Any]], combos: list[str]) -> None:
    page(f"pet_{p}", p.title(), [{"id": "book", "kind": "button", "label": "Book"}])
    transitions.append({"id": f"start_{p}", "page": f"pet_{p}", "element": "book", "target": f"book_{p}",
                        "description": f"book for {p}"})
    fields = [("service", SERVICES), ("day", DAYS), ("time", TIMES)]
    elements = [{"id": f, "kind": "select", "label": f.title(), "bind": f"form_{f}",
                 "options": [{"value": v} for v in values]} for f, values in fields]
    elements += [{"id": "submit", "kind": "button", "label": "Book"}, {"id": "cancel", "kind": "link", "label": "Cancel"}]
    page(f"book_{p}", f"Book for {p}", elements, with_nav=False)
    clear = [{"op": "clear", "var": f"form_{f}"} for f, _ in fields]
    transitions += [{"id": f"{p}_pick_{f}", "page": f"book_{p}", "element": f, "event": "select",
                     "effects": [{"op": "set", "var": f"form_{f}", "value": "$value"}], "description": "pick $value"}
                    for f, _ in fields]
    for combo in combos:  # no copy of form values into the booking: one transition per combination
        s, d, t = combo.split("_")
        transitions.append({"id": f"{p}_submit_{combo}", "page": f"book_{p}", "element": "submit",
                            "when": [{"var": "form_service", "value": s}, {"var": "form_day", "value": d},
                                     {"var": "form_time", "value": t}],
                            "effects": [{"op": "set", "var": f"booking_{p}", "value": combo}, *clear],
                            "target": "appointments", "description": "book"})
    transitions.append({"id": f"{p}_cancel", "page": f"book_{p}", "element": "cancel", "effects": clear,
                        "target": f"pet_{p}", "description": "cancel"})


def write(data: dict[str, Any], folder: Path) -> Path:
    path = folder / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def clinic_lower_bound(most: int = 3) -> int:
    """States of the faithful clinic on its Appointments page alone, with the booking form at
    its defaults and no toast: every set of at most ``most`` bookings in distinct (day, time)
    slots, each of 3 pets x 4 services, times the settings (reminders, SMS, 3 vets). Each is
    reached by booking its appointments one by one (the Book button refuses only a taken slot
    or a fifth); the benchmark checks a sample of them with the search. (With up to 4
    bookings, as the site allows, there are over 10^9; the sample stays within 3.)"""
    slots, per_slot = 5 * 4, 3 * 4
    sets = sum(comb(slots, k) * per_slot**k for k in range(most + 1))
    return sets * 2 * 2 * 3
