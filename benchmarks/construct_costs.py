"""What each spec construct costs in reachable states, measured on the worked example.

``python -m benchmarks.construct_costs`` counts the reachable states of
``fsm_sites/library/examples/vet_clinic.yaml`` (the clinic pattern of docs/fsm_spec.md)
and of variants that each change one construct, exactly (a BFS with the engine's
``graphs.count_states``), and prints them as the table in docs/fsm_spec.md ("What each construct
costs in states"). The counts are deterministic: no timing, nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from fsm_sites.engine.machine import Machine
from fsm_sites.spec.site import SiteSpec

EXAMPLE = Path(__file__).resolve().parent.parent / "fsm_sites" / "library" / "examples" / "vet_clinic.yaml"
Spec = dict[str, Any]


def _var(spec: Spec, name: str) -> dict[str, Any]:
    return next(v for v in spec["variables"] if v["name"] == name)


def _type(spec: Spec, name: str) -> dict[str, Any]:
    return next(t for t in spec["types"] if t["name"] == name)


def _transition(spec: Spec, tid: str) -> dict[str, Any]:
    return next(t for t in spec["transitions"] if t["id"] == tid)


def _no_toasts(spec: Spec) -> None:
    for t in spec["transitions"]:
        t.pop("toast", None)


def _no_reminders(spec: Spec) -> None:
    spec["variables"] = [v for v in spec["variables"] if v["name"] != "reminders"]
    home = next(p for p in spec["pages"] if p["id"] == "home")
    home["elements"] = [e for e in home["elements"] if e["id"] != "reminders"]
    spec["transitions"] = [t for t in spec["transitions"] if not t["id"].startswith("reminders_")]
    spec["goals"] = [g for g in spec["goals"] if g["id"] != "reminders"]


def _bookings_at_most(n: int) -> Callable[[Spec], None]:
    def edit(spec: Spec) -> None:
        _var(spec, "bookings")["max_len"] = n
        for start in spec["starts"]:
            start["vars"]["bookings"] = start["vars"]["bookings"][:n]
        for page in spec["pages"]:
            for el in page["elements"]:
                if el["id"] == "book":
                    el["disabled_when"] = f"count(bookings) == {n}"
    return edit


def _bookings_a_list(spec: Spec) -> None:
    _var(spec, "bookings")["type"] = "list"


def _a_fourth_day(spec: Spec) -> None:
    _type(spec, "day")["values"].append("thu")


def _no_confirm_dialog(spec: Spec) -> None:
    spec["variables"] = [v for v in spec["variables"] if v["name"] != "pending"]
    spec["pages"] = [p for p in spec["pages"] if p["id"] != "cancel_appt"]
    spec["transitions"] = [t for t in spec["transitions"] if t["id"] not in ("confirm_cancel", "keep_appt")]
    ask = _transition(spec, "ask_cancel")
    ask.update(effects=[{"remove": "bookings", "item": "it"}], toast="Visit cancelled")
    del ask["target"]


FORM_FIELDS = ("new_name", "new_species", "form_day", "form_time")


def _forms_kept(spec: Spec) -> None:
    for t in spec["transitions"]:
        if "effects" in t:
            t["effects"] = [e for e in t["effects"] if e.get("clear") not in FORM_FIELDS]


def _no_adding(spec: Spec) -> None:
    _var(spec, "pets")["max_len"] = 2
    for page in spec["pages"]:
        for el in page["elements"]:
            if el["id"] == "add" and page["id"] == "pets":
                el["disabled_when"] = "count(pets) == 2"
    spec["goals"] = [g for g in spec["goals"] if g["id"] != "add_luna"]


def _forms_start_chosen(spec: Spec) -> None:
    """No optional enums: each form field starts at a real value (the name at Rex, taken, so
    Add starts disabled), and the buttons are disabled only by what is taken."""
    for name in FORM_FIELDS:
        del _var(spec, name)["optional"]
    for page in spec["pages"]:
        for el in page["elements"]:
            if el["id"] in ("save", "submit"):
                el["disabled_when"] = el["disabled_when"].split(" or ", 2)[2]


def _a_typed_note(spec: Spec) -> None:
    """A note for the vet, typed on the booking form and kept with the visit: a free-text
    field with no `values` (two classes, none and some text)."""
    _type(spec, "booking")["fields"].append({"name": "note", "type": "text", "other": "Limping a little"})
    spec["variables"].append({"name": "form_note", "type": "text", "other": "Limping a little", "internal": True})
    book = next(p for p in spec["pages"] if p["id"] == "book")
    book["elements"].insert(2, {"id": "note", "kind": "text_input", "label": "Note for the vet", "bind": "form_note"})
    spec["transitions"].append({"id": "type_note", "page": "book", "element": "note", "event": "input",
                                "effects": [{"set": "form_note", "to": "value"}], "description": "type '$value'"})
    _transition(spec, "submit_booking")["effects"][0]["item"] = "{pet: pet, day: form_day, time: form_time, note: form_note}"
    for tid in ("submit_booking", "book_back"):
        _transition(spec, tid)["effects"].append({"clear": "form_note"})
    for start in spec["starts"]:
        for booking in start["vars"]["bookings"]:
            booking["note"] = ""
    for goal in spec["goals"]:
        conditions = goal["conditions"] if isinstance(goal["conditions"], list) else [goal["conditions"]]
        goal["conditions"] = [c.replace("'} in bookings", "', note: ''} in bookings") for c in conditions]


def _a_history_page(spec: Spec) -> None:
    spec["pages"].append({"id": "history", "title": "{pet}'s history", "params": [{"name": "pet", "type": "pet"}],
                          "elements": [{"id": "back", "kind": "link", "label": "Back", "section": "nav"}]})
    pet = next(p for p in spec["pages"] if p["id"] == "pet")
    pet["elements"].append({"id": "history", "kind": "link", "label": "History"})
    spec["transitions"] += [
        {"id": "open_history", "page": "pet", "element": "history", "target": "history", "args": {"pet": "pet"},
         "description": "open {pet}'s history"},
        {"id": "history_back", "page": "history", "element": "back", "target": "pet", "args": {"pet": "pet"},
         "description": "go back"}]


VARIANTS: tuple[tuple[str, Callable[[Spec], None] | None], ...] = (
    ("the worked example", None),
    ("without the reminders check box (one bool)", _no_reminders),
    ("without toasts", _no_toasts),
    ("without the confirm dialog (a row's Cancel removes it at once)", _no_confirm_dialog),
    ("form fields kept when their form is left (no `clear`)", _forms_kept),
    ("at most 1 booking", _bookings_at_most(1)),
    ("at most 3 bookings", _bookings_at_most(3)),
    ("bookings a list (order kept) instead of a set", _bookings_a_list),
    ("a fourth day to book", _a_fourth_day),
    ("no pet can be added (the list is fixed)", _no_adding),
    ("one more page per pet (a history page with a parameter)", _a_history_page),
    ("form fields start at a value, not at nothing chosen (no `optional`)", _forms_start_chosen),
    ("a typed note for the vet kept with each visit (a free-text field)", _a_typed_note),
)


def count(edit: Callable[[Spec], None] | None, budget: int = 2_000_000) -> int:
    """The reachable states of the worked example changed by ``edit``."""
    spec = yaml.safe_load(EXAMPLE.read_text())
    if edit is not None:
        edit(spec)
    states = Machine(SiteSpec.model_validate(spec)).graphs.count_states(budget)
    if not states.exact:
        raise RuntimeError(f"more than {budget} states; raise the budget")
    return states.count


def main() -> None:
    base = count(None)
    print("| the worked example, changed | reachable states | x the example |")
    print("|---|---:|---:|")
    for words, edit in VARIANTS:
        n = base if edit is None else count(edit)
        print(f"| {words} | {n:,} | {n / base:.2f} |")


if __name__ == "__main__":
    main()
