"""Which page template, picture and icon an element gets: by its content, the site's
domain and the layout seed.

The seed picks presentation only (icons beside labels or not, a hero's placement, striped
tables, switches or check boxes); what is drawn where follows from the state's content, so
an agent must still read the page. Nothing here invents content: a card's price and badge
are parts of its own description, moved into their own places.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Literal

from fsm_sites.render.images import ImageKind

#: Domains whose catalog items are things one buys, and those whose items are people.
PRODUCT_DOMAINS = frozenset({"shop", "food", "food_delivery", "recipes", "grocery", "market"})
PEOPLE_DOMAINS = frozenset({"crm", "mail", "forum", "jobs", "job_board", "social", "contacts", "chat"})

#: Description parts shown as a badge (a pill) rather than as plain text.
BADGE_WORDS = frozenset({
    "new", "sale", "vegan", "vegetarian", "pinned", "lead", "qualified", "customer", "remote", "bestseller",
    "popular", "limited", "featured", "hot", "sold out", "in stock", "draft", "urgent", "closed", "open",
})

_PRICE = r"(?:[$€£¥]\s?\d[\d,.]*k?|(?:USD|EUR|GBP)\s?\d[\d,.]*k?)"
_SEPARATOR = r"(?: - |, )"


@dataclass(frozen=True)
class Look:
    """Seeded presentation choices of one site under one layout seed."""

    seed: int  # the layout seed: pictures are drawn from it and an item's name
    domain: str  # the site's domain (SiteSpec.domain): what its catalog's pictures show
    button_icons: bool  # an icon before a button's label when one fits it
    nav_icons: bool  # an icon before navigation links and tabs when one fits
    hero: Literal["banner", "side"]  # a detail page's picture above its title, or beside it
    striped: bool  # data tables with striped rows
    toggles: bool  # groups of check boxes drawn as switches in a settings list


PLAIN = Look(seed=0, domain="generic", button_icons=False, nav_icons=False, hero="banner", striped=False,
             toggles=False)


def choose_look(seed: int, domain: str) -> Look:
    """The look of a site of ``domain`` under layout ``seed`` (deterministic across processes)."""
    rng = random.Random(f"fsm-look:{seed}")
    return Look(seed=seed, domain=domain, button_icons=rng.random() < 0.6, nav_icons=rng.random() < 0.5,
                hero=rng.choice(("banner", "side")), striped=rng.random() < 0.5, toggles=rng.random() < 0.7)


def picture_kind(domain: str, *, priced: bool = False) -> ImageKind:
    """What a catalog item's picture shows: a product, a person, or a scene."""
    if priced or domain in PRODUCT_DOMAINS:
        return "product"
    if domain in PEOPLE_DOMAINS:
        return "avatar"
    return "illustration"


@dataclass(frozen=True)
class Description:
    """A card's description split into the parts a product card shows apart."""

    price: str | None
    badge: str | None
    rest: str


def split_description(text: str) -> Description:
    """"$25 - warm LED light" -> price "$25", rest "warm LED light"; "Acme Corp - Lead" ->
    badge "Lead", rest "Acme Corp". Every part of the text stays on the card, as written."""
    rest, price, badge = text.strip(), None, None
    head = re.match(rf"^({_PRICE})(?:{_SEPARATOR}|$)", rest)
    if head:
        price, rest = head.group(1), rest[head.end():]
    tail = re.search(rf"(?:^|{_SEPARATOR})((?:(?! - )[^,])+)$", rest)
    if tail and tail.group(1).strip().lower() in BADGE_WORDS:
        badge, rest = tail.group(1).strip(), rest[:tail.start()]
    return Description(price=price, badge=badge, rest=rest.strip())


def sender(description: str | None) -> str | None:
    """Who sent a message whose description reads "From: sam@acme.io" (also "By: ..."); None
    for any other description."""
    found = re.match(r"^\s*(?:from|by|sender)\s*:\s*(\S.*)$", description or "", flags=re.I)
    return found.group(1).strip() if found else None
