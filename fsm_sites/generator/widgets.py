"""Templates for the widget kinds (docs/fsm_spec.md, "Widgets"): form fields that are a
combobox or a tooltip, an account-style dropdown menu, a help page of accordions, and a
wizard step's stepper. Each widget's open state is a bool variable local to its page, so
leaving the page closes it and the state count grows only there."""

from __future__ import annotations

from dataclasses import dataclass

from fsm_sites.generator.builder import Cond, FormField, SiteBuilder, cond, effect


@dataclass(frozen=True)
class MenuPart:
    """A dropdown menu in the home page's header (e.g. "Account"): each item opens a page."""

    key: str
    label: str
    items: tuple[tuple[str, str, str], ...]  # (id, item label, the page's body text)


@dataclass(frozen=True)
class FaqPart:
    """A help page of accordions (question, answer); the last answer holds a link to a
    contact page, which the goal wants opened."""

    key: str
    title: str
    questions: tuple[tuple[str, str, str], ...]  # (id, question, answer)
    contact: str  # the link's label, e.g. "Contact support"


def field_var(b: SiteBuilder, name: str, f: FormField) -> str:
    """The variable of a combobox (free text, its suggestions the values that matter) or a
    tooltip (whether it is shown)."""
    if f.kind == "combobox":
        return b.add_var(name, "text", values=list(f.options), label=f.label.lower())
    return b.add_var(name, "bool")


def add_widget_field(b: SiteBuilder, page: str, f: FormField, var: str) -> list[Cond]:
    """A combobox or a tooltip field and its transitions; returns what completes it."""
    label = f.label.lower()
    if f.kind == "combobox":
        options = [{"value": o} for o in f.options]
        b.add_element(page, f.id, "combobox", f.label, placeholder=f"Type {label}", bind=var, options=options)
        b.add_transition(page, f.id, f"type '$value' into the {label} field", event="input",
                         effects=[effect("set", var, "$value")])
        b.add_transition(page, f.id, f"choose '$value' from the {label} suggestions", event="select",
                         effects=[effect("set", var, "$value")])
        return [cond(var, op="nonempty")]
    b.add_element(page, f.id, "tooltip", f.label, description=f.options[0] if f.options else f.label, bind=var)
    b.add_transition(page, f.id, f"point at '{f.label}'", event="hover", when=[cond(var, False)],
                     effects=[effect("set", var, True)])
    b.add_transition(page, f.id, f"close the tip of '{f.label}'", event="close", when=[cond(var, True)],
                     effects=[effect("set", var, False)])
    return []


def account_menu(b: SiteBuilder, page: str, part: MenuPart) -> list[str]:
    """A header menu on ``page`` whose items open their own pages; returns those pages."""
    var = b.add_var(f"{part.key}_open", "bool")
    b.add_element(page, part.key, "menu", part.label, bind=var, section="header")
    b.add_transition(page, part.key, f"open the {part.label} menu", when=[cond(var, False)],
                     effects=[effect("set", var, True)])
    b.add_transition(page, part.key, f"close the {part.label} menu", when=[cond(var, True)],
                     effects=[effect("set", var, False)], tid=f"{page}__{part.key}_shut")
    b.add_transition(page, part.key, f"close the {part.label} menu", event="close", when=[cond(var, True)],
                     effects=[effect("set", var, False)])
    pages = []
    for item, label, body in part.items:
        target = b.add_page(f"{part.key}_{item}", label, body=body)
        b.add_element(page, f"{part.key}_{item}", "link", label, inside=part.key)
        b.add_transition(page, f"{part.key}_{item}", f"choose '{label}' in the {part.label} menu", target=target)
        pages.append(target)
    b.local_group({page}, [var])
    return pages


def faq(b: SiteBuilder, part: FaqPart) -> tuple[str, str]:
    """A help page of accordions; returns (the help page, the contact page)."""
    page = b.add_page(part.key, part.title, body="Answers to common questions.")
    contact = b.add_page(f"{part.key}_contact", part.contact, body="Write to us and we answer within a day.")
    variables = []
    for qid, question, answer in part.questions:
        var = b.add_var(f"{part.key}_{qid}", "bool")
        variables.append(var)
        b.add_element(page, qid, "accordion", question, description=answer, bind=var)
        b.add_transition(page, qid, f"expand '{question}'", when=[cond(var, False)], effects=[effect("set", var, True)])
        b.add_transition(page, qid, f"collapse '{question}'", when=[cond(var, True)], effects=[effect("set", var, False)],
                         tid=f"{page}__{qid}_shut")
    last = part.questions[-1][0]
    b.add_element(page, "contact_link", "link", part.contact, inside=last)
    b.add_transition(page, "contact_link", f"open '{part.contact}'", target=contact)
    b.local_group({page}, variables)
    return page, contact


def add_stepper(b: SiteBuilder, page: str, title: str, steps: list[str], current: int) -> None:
    """Step ``current`` (0-based) of ``steps`` on a wizard page."""
    options = [{"value": f"s{i + 1}", "label": s} for i, s in enumerate(steps)]
    b.add_element(page, "progress", "stepper", title, options=options, current=f"s{current + 1}")
