"""Random site generator: ``synthesize_site(seed, difficulty) -> SiteSpec``.

A site is a random *recipe* (see ``compose.py``) over one domain's vocabulary:
a catalog (one detail page whose parameter is the item) with a collection (a cart
with quantities, a map, for shops from medium up), a form, and by difficulty a
wizard, settings tabs, search, a confirm-in-a-modal action and, at hard, bookings (a
set of records made by a form, listed with a cancel button each: over 10^6 reachable
states). Difficulty sets the number of items, fields and steps, hence the pages and
the goals' path lengths. Every result passes ``validate_spec``; a draw that does not
is shrunk and drawn again, deterministically.
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Literal

from fsm_sites.generator.compose import (
    BookingsPart,
    CatalogPart,
    FormPart,
    ModalPart,
    RankPart,
    SettingsPart,
    SiteRecipe,
    TablePart,
    WizardPart,
    compose,
)
from fsm_sites.generator.structured import RowAction
from fsm_sites.generator.templates import FormField, Item, option_label
from fsm_sites.generator.vocab import VOCABS, DomainVocab
from fsm_sites.generator.widgets import FaqPart, MenuPart
from fsm_sites.spec.site import SiteSpec
from fsm_sites.validation.validate import validate_spec

Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")

# (items, form fields, wizard steps, optional parts) per difficulty. Persistent
# parts (collection, settings, modal list) multiply the state count of every
# page, so hard sites get depth from a longer wizard rather than more parts.
_SIZES: dict[str, tuple[tuple[int, int], tuple[int, int], int, int]] = {
    "easy": ((3, 3), (2, 2), 0, 1),
    "medium": ((4, 4), (2, 3), 2, 1),
    "hard": ((4, 4), (3, 3), 3, 1),
}
_ATTEMPTS = 6


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def synthesize_site(seed: int, difficulty: Difficulty = "medium") -> SiteSpec:
    """A new valid site for ``seed`` at ``difficulty``; the same arguments give the same site."""
    if difficulty not in _SIZES:
        raise ValueError(f"expected difficulty in {DIFFICULTIES}, got {difficulty!r}")
    rng = random.Random(f"fsm-site-{seed}-{difficulty}")
    problems: list = []
    for shrink in range(_ATTEMPTS):
        recipe = draw_recipe(rng, seed, difficulty, shrink)
        spec = compose(recipe)
        problems = validate_spec(spec)
        if not problems:
            return spec
    raise RuntimeError(  # a bug in the templates, not a user error: every draw should validate
        f"expected a valid site for seed {seed} ({difficulty}) within {_ATTEMPTS} draws, "
        f"got {len(problems)} problem(s), first: {problems[0]}"
    )


def draw_recipe(rng: random.Random, seed: int, difficulty: str, shrink: int = 0) -> SiteRecipe:
    """A random recipe; ``shrink`` > 0 draws a smaller one (fewer items, fields and parts)."""
    (lo, hi), (flo, fhi), wizard_steps, optional = _SIZES[difficulty]
    vocab = rng.choice(VOCABS)
    # shrinking drops the optional parts first, then items, fields and wizard steps
    n_items = max(3, rng.randint(lo, hi) - shrink // 2)
    labels = rng.sample(vocab.items, n_items)
    items = tuple(Item(slug(label), label, rng.choice(vocab.blurbs)) for label in labels)
    quantities = 2 if vocab.domain in ("shop", "food") and difficulty != "easy" else 0
    catalog = CatalogPart("catalog", vocab.catalog, items, vocab.action, slug(vocab.collection),
                          vocab.collection, max_len=2, per_page=rng.choice((2, 3, 3, 4)), quantities=quantities)
    parts = ["settings", "search", "modal"]
    rng.shuffle(parts)
    chosen = set(parts[: max(0, optional - shrink)])
    n_fields = max(1, rng.randint(flo, fhi) - shrink // 3)
    form_title, submit, goal = vocab.form
    # widgets draw from their own generator, so the rest of a seed's site stays as it was
    menu, faq, fields = _draw_widgets(random.Random(f"widgets/{seed}/{difficulty}/{shrink}"),
                                      _draw_fields(rng, vocab, n_fields))
    form = FormPart("form", form_title, fields, submit, goal,
                    confirm=difficulty != "easy", needs_collection=difficulty == "hard" and rng.random() < 0.5)
    steps = max(0, wizard_steps - shrink // 2)
    wizard = None
    if steps >= 2:
        pool = _draw_fields(rng, vocab, 2 * steps - 1, small=True)
        wizard = WizardPart("wiz", vocab.wizard[0], tuple(tuple(pool[i::steps]) for i in range(steps)),
                            vocab.wizard[1])
    # Widgets are drawn from their own generator, so the rest of a seed's site stays as it was.
    widgets = random.Random(f"fsm-widgets-{seed}-{difficulty}-{shrink}")
    if widgets.random() < 0.5:
        form = replace(form, fields=(*form.fields, _draw_widget_field(widgets)))
    return SiteRecipe(
        name=f"{vocab.domain}_{difficulty}_{seed}",
        title=rng.choice(vocab.brands),
        domain=vocab.domain,
        tagline=f"{vocab.catalog} and more.",
        catalog=catalog,
        forms=(form,),
        wizard=wizard,
        settings=_draw_settings(rng, vocab) if "settings" in chosen else None,
        search=_draw_search(rng, items) if "search" in chosen else {},
        modal=ModalPart(vocab.modal[0], vocab.modal[1], "hidden", vocab.modal[0],
                        tuple(i.id for i in rng.sample(items, 2))) if "modal" in chosen else None,
        bookings=_draw_bookings(rng, vocab) if difficulty == "hard" else None,
        menu=menu,
        faq=faq,
        ranking=_draw_ranking(widgets, items, vocab) if difficulty == "hard" and shrink == 0 else None,
        table=_draw_table(random.Random(f"fsm-table-{seed}-{difficulty}"), items) if shrink < 2 else None,
    )


def _draw_table(rng: random.Random, items: tuple[Item, ...]) -> TablePart | None:
    """A third of the time, a history table: 6-8 entries (reference, date, item, amount),
    3 a page, sortable by date (newest first at first), amount and item; its goals open
    the costliest entry sorted highest first, and the oldest one; half of those tables get
    a per-row action (``_draw_row_action``)."""
    if rng.random() >= 1 / 3:
        return None
    n = rng.randint(6, 8)
    days, cents = sorted(rng.sample(range(1, 29), n)), sorted(rng.sample(range(150, 90000), n))
    by_name = sorted(items, key=lambda i: i.label)
    amounts = rng.sample(range(n), n)
    rows = tuple((f"r{k + 1}", f"d{days[k]:02d}", rng.choice(items).id, f"a{cents[amounts[k]]}") for k in range(n))
    fields = (("ref", "Reference", tuple((f"r{k + 1}", f"#{2001 + k}") for k in range(n))),
              ("date", "Date", tuple((f"d{d:02d}", f"Jul {d}") for d in days)),
              ("item", "Item", tuple((i.id, i.label) for i in by_name)),
              ("amount", "Amount", tuple((f"a{c}", f"${c // 100:,}.{c % 100:02d}") for c in cents)))
    top = next(r[0] for r in rows if r[3] == f"a{cents[-1]}")
    return TablePart("history", "History", fields, rows, ("-date", "date", "amount", "-amount", "item"), 3, (
        ("history_top", "sort the history by amount, highest first, and open the top entry", "-amount", top),
        ("history_oldest", f"open the oldest entry of the history (Jul {days[0]})", None, rows[0][0])),
        _draw_row_action(rng, rows, dict(fields[2][2])))


def _draw_row_action(rng: random.Random, rows: tuple[tuple[str, ...], ...], names: dict[str, str]) -> RowAction | None:
    """Half of the time, a Flag button on one entry past the first page (newest first), so
    its goal, flagging it, needs paging or sorting; one row, as each doubles the states."""
    if rng.random() >= 0.5:
        return None
    ref, day, item, _ = rng.choice(rows[:-3])
    return RowAction("flagged", "Flagged", ("Flag", "Unflag"), (ref,), (
        ("history_flag", f"flag the {names[item]} entry of Jul {int(day[1:])} in the history", (ref,)),))


def _draw_widget_field(rng: random.Random) -> FormField:
    """A slider (a small int range, one value wanted) or a date picker (two days of July 2026)."""
    if rng.random() < 0.5:
        label = rng.choice(("Quantity", "Guests", "Rating", "Priority"))
        return FormField("slider", slug(label), label, ("1", "4", str(rng.randint(2, 4))))
    days = sorted(rng.sample(range(1, 32), 2))
    label = rng.choice(("Date", "Delivery date", "Start date", "Due date"))
    return FormField("date", slug(label), label, tuple(f"2026-07-{d:02d}" for d in rng.sample(days, 2)))


def _draw_ranking(rng: random.Random, items: tuple[Item, ...], vocab: DomainVocab) -> RankPart:
    """Three catalog items to put in order by dragging; the goal wants the last one first."""
    first = tuple(i.id for i in rng.sample(items, 3))
    return RankPart("ranking", f"Top {vocab.catalog.lower()}", first, ((first[2], first[0], first[1]),))


_MENU = MenuPart("account", "Account", (("profile", "Profile", "Your name, email and photo."),
                                        ("signout", "Sign out", "You are signed out. See you soon.")))
_FAQ = FaqPart("help", "Help", (
    ("start", "How do I get started?", "Browse the list, open an item and use its main button."),
    ("contact", "Something went wrong?", "Our team answers within a day."),
), "Contact support")


def _draw_widgets(rng: random.Random, fields: tuple[FormField, ...]) -> tuple[MenuPart | None, FaqPart | None,
                                                                            tuple[FormField, ...]]:
    """An account menu and a help page of accordions, each half of the time; a text field
    that becomes a combobox of its accepted values, and a tooltip, each a third of the time."""
    menu = _MENU if rng.random() < 0.5 else None
    faq = _FAQ if rng.random() < 0.5 else None
    out = list(fields)
    texts = [i for i, f in enumerate(out) if f.kind == "text"]
    if texts and rng.random() < 0.34:
        i = rng.choice(texts)
        out[i] = FormField("combobox", out[i].id, out[i].label, out[i].options)
    if rng.random() < 0.34:
        out.insert(rng.randint(0, len(out)), FormField("tooltip", "hint", "Why we ask", ("We use it only for this form.",)))
    return menu, faq, tuple(out)


def _draw_bookings(rng: random.Random, vocab: DomainVocab) -> BookingsPart:
    """Records made by a form (two choices and a checkbox), at most three, never two in one slot."""
    (a, a_label, a_opts), (b, b_label, b_opts) = rng.sample(vocab.selects, 2)
    a_opts, b_opts = a_opts[:3], b_opts[:3]
    check, check_label = rng.choice(vocab.checks)
    title, form_title = vocab.bookings
    fields = (FormField("select", a, a_label, a_opts), FormField("select", b, b_label, b_opts),
              FormField("checkbox", check, check_label))
    first = ((a, a_opts[-1]), (b, b_opts[-1]), (check, True))
    second = ((a, a_opts[0]), (b, b_opts[-1]), (check, False))
    words = [f"{a_label.lower()} {option_label(x)}, {b_label.lower()} {option_label(y)}" for (_, x), (_, y), _ in (first, second)]
    return BookingsPart(
        "entries", title, form_title, fields, (a, b), f"{{it.{a}}}, {{it.{b}}}", 3,
        ((f"add to {title.lower()} one with {words[0]} and '{check_label}' ticked", first),
         (f"one with {words[1]} and '{check_label}' not ticked", second)))


def _draw_fields(rng: random.Random, vocab: DomainVocab, n: int, *, small: bool = False) -> tuple[FormField, ...]:
    """``n`` distinct fields, at least one text input, in a random order.

    ``small`` keeps every field to two states (one accepted text, two options) for wizards,
    whose fields all live at once.
    """
    most = 1 if small else 2
    pool = [FormField("text", fid, label, tuple(rng.sample(vals, rng.randint(1, min(most, len(vals))))))
            for fid, label, vals in vocab.texts]
    pool += [FormField("select" if rng.random() < 0.6 else "radio", fid, label,
                      tuple(rng.sample(opts, 2)) if small else opts)
             for fid, label, opts in vocab.selects]
    pool += [FormField("checkbox", fid, label) for fid, label in vocab.checks]
    first = rng.choice(pool[: len(vocab.texts)])
    rest = [f for f in pool if f is not first]
    fields = [first] + rng.sample(rest, min(n - 1, len(rest)))
    rng.shuffle(fields)
    return tuple(fields)


def _draw_settings(rng: random.Random, vocab: DomainVocab) -> SettingsPart:
    a, b = rng.sample(vocab.toggles, 2)
    return SettingsPart("prefs", "Settings", (("general", "General", (a,)), ("more", "More", (b,))))


def _draw_search(rng: random.Random, items: tuple[Item, ...]) -> dict[str, tuple[str, ...]]:
    picks = rng.sample(items, 3)
    first_word = picks[0].label.split()[0].lower()
    return {first_word: (picks[0].id,), "popular": (picks[1].id, picks[2].id)}
