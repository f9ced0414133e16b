"""Icons inlined into rendered pages, chosen by what an element's label and id say.

The SVGs are Lucide's (``lucide-static``, ISC licence), vendored by
``scripts/vendor_icons.sh`` into ``static/icons/`` with the package's LICENSE and a
VERSION line; nothing is fetched at run time. An icon is drawn ``aria-hidden`` with no
text, so an element's accessible name and the text an agent reads stay its label.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

#: (icon, words or phrases that choose it), most specific first: the first entry with a
#: word of the label (or id) wins: "Add to cart" is a cart, "Back to products" an arrow, "Add a note" a plus.
KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("arrow-left", ("back", "previous", "prev", "return")),
    ("user-plus", ("new contact", "invite", "sign up", "register")),
    ("log-out", ("sign out", "log out", "logout")),
    ("log-in", ("sign in", "log in", "login")),
    ("shopping-cart", ("cart", "basket")),
    ("trash-2", ("delete", "trash", "remove", "discard", "bin")),
    ("inbox", ("inbox", "mailbox")),
    ("archive", ("archive", "archived")),
    ("search", ("search", "find")),
    ("house", ("home",)),
    ("chart-column", ("dashboard", "report", "stats", "analytics", "overview")),
    ("arrow-left-right", ("transfer",)),
    ("snowflake", ("freeze",)),
    ("plane", ("flight", "flights", "trip", "trips", "travel")),
    ("briefcase", ("job", "jobs", "role", "roles", "career", "work")),
    ("chef-hat", ("recipe", "recipes", "meal", "cooking")),
    ("book-open", ("cookbook", "read")),
    ("utensils", ("menu", "food", "restaurant", "dinner", "lunch")),
    ("message-square", ("topic", "topics", "forum", "comment", "reply", "replies", "post", "chat", "message")),
    ("pencil", ("edit", "rename", "compose", "write")),
    ("send", ("send", "apply", "submit")),
    ("star", ("star", "starred", "favorite", "favourite", "rating")),
    ("heart", ("like", "follow", "following", "wishlist")),
    ("bookmark", ("save", "saved", "bookmark")),
    ("pin", ("pin", "pinned")),
    ("flag", ("campaign", "flag")),
    ("calendar-days", ("calendar", "week", "day", "days", "date", "schedule", "meeting", "meetings", "busy",
                       "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")),
    ("clock", ("time", "clock", "hour", "later")),
    ("bell", ("notification", "notifications", "notify", "remind", "reminder", "alert")),
    ("mail", ("mail", "email", "newsletter")),
    ("landmark", ("bank", "banking")),
    ("credit-card", ("card", "payment", "pay", "bill", "billing", "checkout")),
    ("wallet", ("account", "accounts", "wallet", "balance")),
    ("receipt", ("invoice", "receipt", "transactions")),
    ("banknote", ("money", "amount", "cash")),
    ("shield", ("trust", "trusted", "secure", "security")),
    ("lock", ("password", "privacy", "lock", "private")),
    ("key-round", ("key", "code")),
    ("laptop", ("laptop",)),
    ("smartphone", ("device", "devices", "phone", "tablet", "mobile")),
    ("monitor", ("display", "screen")),
    ("volume-2", ("sound", "audio", "volume")),
    ("moon", ("dark",)),
    ("sun", ("light", "bright")),
    ("sliders-horizontal", ("preferences", "options", "customize")),
    ("settings", ("settings", "setting", "config", "configure", "workspace")),
    ("upload", ("upload",)),
    ("download", ("download", "export")),
    ("folder", ("folder", "folders")),
    ("music", ("music", "song", "songs", "playlist")),
    ("image", ("photo", "photos", "image", "images", "picture")),
    ("file-text", ("file", "files", "document", "documents", "resume", "notes")),
    ("truck", ("shipping", "delivery", "deliver")),
    ("shopping-bag", ("order", "orders", "buy", "purchase")),
    ("package", ("product", "products", "item", "items", "catalog")),
    ("store", ("shop", "store")),
    ("tag", ("sale", "deal", "deals", "offer", "offers", "promo", "price")),
    ("gift", ("gift",)),
    ("ticket", ("ticket", "tickets", "event", "events")),
    ("users", ("contacts", "team", "people", "members", "group")),
    ("user", ("contact", "profile", "user", "name", "passenger")),
    ("map-pin", ("address", "location", "city", "where")),
    ("share-2", ("share",)),
    ("refresh-cw", ("sync", "refresh", "reload")),
    ("repeat", ("repeat", "recurring")),
    ("undo-2", ("undo", "restore")),
    ("eye", ("view", "preview", "watch")),
    ("circle-help", ("help", "faq", "support")),
    ("info", ("about", "info", "details")),
    ("funnel", ("filter", "filters")),
    ("check", ("confirm", "ok", "yes", "done", "accept", "agree")),
    ("x", ("cancel", "close", "no", "dismiss", "clear", "decline")),
    ("arrow-right", ("next", "continue", "proceed", "forward")),
    ("plus", ("add", "new", "create", "more", "increase")),
    ("minus", ("less", "decrease", "fewer")),
)

#: Labels that are a symbol rather than words.
SYMBOLS = {"+": "plus", "-": "minus", "−": "minus", "×": "x", "›": "chevron-right", "‹": "chevron-left"}

#: Icons the page frame draws itself (the search box, a dropdown's caret, the mobile menu).
FRAME_ICONS = ("search", "chevron-down", "chevron-right", "chevron-left", "menu", "bell", "user")

ICON_NAMES: frozenset[str] = frozenset(
    {name for name, _ in KEYWORDS} | set(SYMBOLS.values()) | set(FRAME_ICONS)
)


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def icon_for(label: str, element_id: str = "") -> str | None:
    """The icon for an element with this label and id, or None when nothing fits; the label
    decides first, the id (``nav_settings``) only when the label says nothing."""
    symbol = SYMBOLS.get(label.strip())
    if symbol:
        return symbol
    for text in (label, element_id.replace("_", " ")):
        words = _words(text)
        for name, keys in KEYWORDS:
            if any(f" {key} " in words for key in keys):
                return name
    return None


@cache
def _source(name: str) -> str:
    path = resources.files("fsm_sites.render") / "static" / "icons" / f"{name}.svg"
    if not path.is_file():
        raise KeyError(f"expected one of the vendored icons {sorted(ICON_NAMES)}, got {name!r}; "
                       "add it to scripts/vendor_icons.sh and run it")
    svg = re.sub(r"<!--.*?-->", "", path.read_text(encoding="utf-8"), flags=re.S)
    svg = re.sub(r"\s+", " ", svg).replace("> <", "><").replace(" >", ">").replace(" />", "/>").strip()
    return re.sub(r'\s(class|width|height)="[^"]*"', "", svg)


def icon_svg(name: str, cls: str = "icon") -> str:
    """The vendored icon ``name`` as inline SVG, sized by CSS (1em) and hidden from the
    accessibility tree."""
    return _source(name).replace("<svg ", f'<svg class="{cls}" aria-hidden="true" focusable="false" ', 1)


def vendored_version() -> str:
    """The ``package version licence`` line scripts/vendor_icons.sh wrote."""
    path = resources.files("fsm_sites.render") / "static" / "icons" / "VERSION"
    return path.read_text(encoding="utf-8").strip()
