"""Procedural pictures as inline SVG: product images, avatars and illustrations.

Each is drawn from an item's name and the layout seed through a random generator seeded
with their SHA-256, so the same (kind, name, seed) gives the same bytes in every process,
and different names give different pictures. They are decoration: ``aria-hidden``, no
text an agent could read as a label (an avatar's initials repeat the name beside it).
Gradient and clip ids are derived from the same digest, so two pictures on one page
never share an id unless they are the same picture.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from typing import Literal

ImageKind = Literal["product", "avatar", "illustration"]

#: (light, mid, deep) colour triples the pictures are painted with.
PALETTES: tuple[tuple[str, str, str], ...] = (
    ("#fde2e4", "#f4978e", "#c44536"), ("#e0f2fe", "#7dd3fc", "#0369a1"), ("#dcfce7", "#86efac", "#15803d"),
    ("#fef3c7", "#fcd34d", "#b45309"), ("#ede9fe", "#c4b5fd", "#6d28d9"), ("#fce7f3", "#f9a8d4", "#be185d"),
    ("#ccfbf1", "#5eead4", "#0f766e"), ("#ffedd5", "#fdba74", "#c2410c"), ("#e0e7ff", "#a5b4fc", "#4338ca"),
    ("#f1f5f9", "#cbd5e1", "#334155"), ("#ecfccb", "#bef264", "#4d7c0f"), ("#fae8ff", "#f0abfc", "#a21caf"),
)


class _Pen:
    """A seeded generator, a palette and the ids of one picture."""

    def __init__(self, kind: str, name: str, seed: int) -> None:
        digest = hashlib.sha256(f"{kind}\x00{seed}\x00{name}".encode()).digest()
        self.rng = random.Random(digest)
        self.uid = digest.hex()[:10]
        self.palette = PALETTES[digest[0] % len(PALETTES)]
        self.accent = PALETTES[digest[1] % len(PALETTES)]

    def jitter(self, value: float, spread: float = 0.12) -> float:
        return round(value * (1 + self.rng.uniform(-spread, spread)), 1)


def _svg(cls: str, width: int, height: int, body: str, fit: str = "slice", origin: str = "0 0") -> str:
    return (f'<svg class="{cls}" xmlns="http://www.w3.org/2000/svg" viewBox="{origin} {width} {height}"'
            f' preserveAspectRatio="xMidYMid {fit}" aria-hidden="true" focusable="false">{body}</svg>')


def initials(name: str) -> str:
    """Up to two capital letters of a name: "Ana Ruiz" -> "AR", "resume.pdf" -> "RP", an
    address by its local part: "sam.lee@acme.io" -> "SL"."""
    words = re.findall(r"[A-Za-z0-9]+", name.split("@")[0] if "@" in name else name)
    return "".join(w[0] for w in words[:2]).upper() or "?"


def avatar(name: str, seed: int) -> str:
    """Initials on a coloured circle with a seeded pattern."""
    pen = _Pen("avatar", name, seed)
    light, _, deep = pen.palette
    clip = f"a{pen.uid}"
    pattern = pen.rng.choice(("rings", "stripes", "dots", "split", "plain"))
    marks = ""
    if pattern == "rings":
        cx, cy = pen.rng.choice((0, 48)), pen.rng.choice((0, 48))
        marks = "".join(f'<circle cx="{cx}" cy="{cy}" r="{r}" fill="none" stroke="{light}" stroke-opacity=".3"'
                        f' stroke-width="4"/>' for r in (14, 26, 38))
    elif pattern == "stripes":
        step = pen.rng.choice((8, 10, 12))
        marks = "".join(f'<path d="M{x} 0 L{x - 48} 48" stroke="{light}" stroke-opacity=".22" stroke-width="3"/>'
                        for x in range(0, 100, step))
    elif pattern == "dots":
        marks = "".join(f'<circle cx="{pen.rng.randint(4, 44)}" cy="{pen.rng.randint(4, 44)}"'
                        f' r="{pen.rng.randint(2, 5)}" fill="{light}" fill-opacity=".3"/>' for _ in range(7))
    elif pattern == "split":
        marks = f'<path d="M0 {pen.rng.randint(20, 34)} L48 {pen.rng.randint(14, 28)} L48 48 L0 48Z" fill="{deep}" fill-opacity=".35"/>'
    body = (f'<clipPath id="{clip}"><circle cx="24" cy="24" r="24"/></clipPath>'
            f'<g clip-path="url(#{clip})"><rect width="48" height="48" fill="{deep}"/>'
            f'{marks}</g><text x="24" y="25" text-anchor="middle" dominant-baseline="middle"'
            f' font-family="DejaVu Sans, sans-serif" font-weight="700" font-size="18" fill="#fff">'
            f"{initials(name)}</text>")
    return _svg("img avatar", 48, 48, body)


# Object silhouettes for product pictures, on a 160x120 canvas standing on y=100.
def _mug(p: _Pen, ink: str, dark: str) -> str:
    w, h = p.jitter(40), p.jitter(46)
    x = 76 - w / 2
    return (f'<rect x="{x}" y="{100 - h}" width="{w}" height="{h}" rx="5" fill="{ink}"/>'
            f'<path d="M{x + w} {100 - h * .75} a12 12 0 0 1 0 {h * .45}" fill="none" stroke="{dark}" stroke-width="6"/>'
            f'<rect x="{x + 4}" y="{100 - h + 4}" width="6" height="{h - 12}" rx="3" fill="#fff" fill-opacity=".3"/>')


def _lamp(p: _Pen, ink: str, dark: str) -> str:
    lean = p.rng.randint(-14, 14)
    return (f'<ellipse cx="80" cy="97" rx="20" ry="5" fill="{dark}"/>'
            f'<path d="M80 96 L{80 + lean} 46" stroke="{dark}" stroke-width="5"/>'
            f'<path d="M{62 + lean} 50 L{70 + lean} 22 L{92 + lean} 22 L{100 + lean} 50Z" fill="{ink}"/>'
            f'<ellipse cx="{81 + lean}" cy="53" rx="10" ry="4" fill="#fff7c2"/>')


def _chair(p: _Pen, ink: str, dark: str) -> str:
    back = p.jitter(38)
    return (f'<rect x="58" y="{58 - back}" width="44" height="{back}" rx="8" fill="{ink}"/>'
            f'<rect x="54" y="58" width="52" height="12" rx="5" fill="{dark}"/>'
            f'<path d="M80 70 V90 M62 100 L80 90 L98 100" stroke="{dark}" stroke-width="5" fill="none"/>')


def _rug(p: _Pen, ink: str, dark: str) -> str:
    stripes = "".join(f'<path d="M{40 + i * 16} 62 L{28 + i * 16} 96" stroke="{dark}" stroke-width="4"/>'
                      for i in range(1, 6))
    return (f'<path d="M36 60 L128 60 L120 98 L24 98Z" fill="{ink}"/>{stripes}'
            f'<path d="M24 98 L120 98" stroke="#fff" stroke-opacity=".6" stroke-width="3" stroke-dasharray="2 3"/>')


def _kettle(p: _Pen, ink: str, dark: str) -> str:
    return (f'<path d="M60 100 L64 56 Q80 46 96 56 L100 100Z" fill="{ink}"/>'
            f'<path d="M62 66 L44 54" stroke="{ink}" stroke-width="7" stroke-linecap="round"/>'
            f'<path d="M66 54 Q80 26 94 54" fill="none" stroke="{dark}" stroke-width="5"/>'
            f'<circle cx="80" cy="50" r="4" fill="{dark}"/>')


def _clock(p: _Pen, ink: str, dark: str) -> str:
    angle = p.rng.randint(0, 11) * 30
    ticks = "".join(f'<path d="M80 {36} V{41}" stroke="{dark}" stroke-width="2" transform="rotate({a} 80 62)"/>'
                    for a in range(0, 360, 30))
    return (f'<circle cx="80" cy="62" r="30" fill="#fff" stroke="{ink}" stroke-width="7"/>{ticks}'
            f'<path d="M80 62 V44" stroke="{dark}" stroke-width="3" transform="rotate({angle} 80 62)"/>'
            f'<path d="M80 62 H94" stroke="{dark}" stroke-width="3"/>')


def _bowl(p: _Pen, ink: str, dark: str) -> str:
    food = p.accent[1]
    return (f'<ellipse cx="80" cy="66" rx="40" ry="9" fill="{food}"/>'
            f'<circle cx="{p.rng.randint(66, 94)}" cy="64" r="5" fill="{p.accent[2]}"/>'
            f'<path d="M40 66 Q44 98 80 98 Q116 98 120 66Z" fill="{ink}"/>'
            f'<path d="M96 60 L122 30 M102 62 L128 34" stroke="{dark}" stroke-width="3"/>')


def _pizza(p: _Pen, ink: str, dark: str) -> str:
    spots = "".join(f'<circle cx="{80 + p.rng.randint(-22, 22)}" cy="{70 + p.rng.randint(-12, 12)}" r="5"'
                    f' fill="{dark}"/>' for _ in range(6))
    return (f'<ellipse cx="80" cy="72" rx="44" ry="26" fill="#e9b872"/>'
            f'<ellipse cx="80" cy="71" rx="37" ry="21" fill="{ink}"/>{spots}'
            f'<path d="M80 46 V96 M40 72 H120" stroke="#e9b872" stroke-width="2"/>')


def _box(p: _Pen, ink: str, dark: str) -> str:
    h = p.jitter(40)
    return (f'<path d="M50 {100 - h} L80 {88 - h} L110 {100 - h} L80 {112 - h}Z" fill="{p.palette[1]}"/>'
            f'<path d="M50 {100 - h} L80 {112 - h} L80 104 L50 92Z" fill="{ink}"/>'
            f'<path d="M110 {100 - h} L80 {112 - h} L80 104 L110 92Z" fill="{dark}"/>'
            f'<path d="M65 {94 - h} L95 {106 - h} V98" stroke="#fff" stroke-opacity=".7" stroke-width="4" fill="none"/>')


def _bottle(p: _Pen, ink: str, dark: str) -> str:
    h = p.jitter(52)
    return (f'<rect x="66" y="{100 - h}" width="28" height="{h}" rx="8" fill="{ink}"/>'
            f'<rect x="74" y="{100 - h - 16}" width="12" height="18" fill="{ink}"/>'
            f'<rect x="73" y="{100 - h - 22}" width="14" height="7" rx="2" fill="{dark}"/>'
            f'<rect x="66" y="{100 - h * .6}" width="28" height="{h * .3}" fill="#fff" fill-opacity=".75"/>')


def _plant(p: _Pen, ink: str, dark: str) -> str:
    leaves = "".join(f'<ellipse cx="80" cy="50" rx="7" ry="22" fill="{p.accent[2] if i % 2 else ink}"'
                     f' transform="rotate({a} 80 70)"/>' for i, a in enumerate((-50, -25, 0, 25, 50)))
    return f'{leaves}<path d="M62 74 L98 74 L92 100 L68 100Z" fill="{dark}"/>'


def _device(p: _Pen, ink: str, dark: str) -> str:
    w = p.rng.choice((34, 62))
    return (f'<rect x="{80 - w / 2}" y="34" width="{w}" height="64" rx="7" fill="{dark}"/>'
            f'<rect x="{84 - w / 2}" y="40" width="{w - 8}" height="50" rx="3" fill="{ink}"/>'
            f'<path d="M{86 - w / 2} 84 L{72 + w / 2} 48" stroke="#fff" stroke-opacity=".25" stroke-width="8"/>')


def _ball(p: _Pen, ink: str, dark: str) -> str:
    r = p.jitter(30)
    return (f'<circle cx="80" cy="{100 - r}" r="{r}" fill="{ink}"/>'
            f'<path d="M{80 - r} {100 - r} Q80 {100 - r * 1.6} {80 + r} {100 - r}" fill="none" stroke="{dark}"'
            f' stroke-width="4"/><circle cx="{80 - r / 3}" cy="{100 - r * 1.4}" r="{r / 4}" fill="#fff" fill-opacity=".4"/>')


_SHAPES: dict[str, Callable[[_Pen, str, str], str]] = {
    "mug": _mug, "cup": _mug, "coffee": _mug, "tea": _mug, "lamp": _lamp, "light": _lamp, "chair": _chair,
    "sofa": _chair, "seat": _chair, "rug": _rug, "carpet": _rug, "mat": _rug, "blanket": _rug, "kettle": _kettle,
    "pot": _kettle, "teapot": _kettle, "clock": _clock, "watch": _clock, "timer": _clock, "ramen": _bowl,
    "soup": _bowl, "curry": _bowl, "salad": _bowl, "pasta": _bowl, "noodles": _bowl, "bowl": _bowl, "rice": _bowl,
    "pizza": _pizza, "pie": _pizza, "tacos": _pizza, "cake": _box, "box": _box, "gift": _box, "bottle": _bottle,
    "wine": _bottle, "oil": _bottle, "juice": _bottle, "soap": _bottle, "plant": _plant, "flower": _plant,
    "phone": _device, "tablet": _device, "laptop": _device, "ball": _ball, "wings": _ball, "orange": _ball,
}
_GENERIC = (_box, _bottle, _ball, _mug, _plant)


def product(name: str, seed: int, *, square: bool = False) -> str:
    """A product shot: an object (by a word of the name, else by its hash) on a gradient;
    ``square`` frames the object closely, for thumbnails."""
    pen = _Pen("product", name, seed)
    light, mid, deep = pen.palette
    words = re.findall(r"[a-z]+", name.lower())
    draw = next((_SHAPES[w] for w in words if w in _SHAPES), None) or _GENERIC[int(pen.uid, 16) % len(_GENERIC)]
    ink, dark = pen.accent[1], pen.accent[2]
    if pen.accent == pen.palette:  # the object would vanish into its background
        ink, dark = deep, "#1f2937"
    grad = f"p{pen.uid}"
    angle = pen.rng.choice((0, 45, 90, 135))
    body = (f'<defs><linearGradient id="{grad}" gradientTransform="rotate({angle} .5 .5)">'
            f'<stop offset="0" stop-color="{light}"/><stop offset="1" stop-color="{mid}"/></linearGradient></defs>'
            f'<rect x="-320" y="-120" width="800" height="360" fill="url(#{grad})"/>'
            f'<circle cx="{pen.rng.randint(30, 130)}" cy="{pen.rng.randint(20, 60)}" r="{pen.rng.randint(26, 48)}"'
            f' fill="#fff" fill-opacity=".35"/><ellipse cx="80" cy="101" rx="46" ry="6" fill="#000" fill-opacity=".12"/>'
            + draw(pen, ink, dark))
    # The whole object shows in any frame ("meet"); the backdrop runs past the view box and
    # fills the rest of the frame (the SVG's overflow is visible, the frame clips it).
    if square:
        return _svg("img product", 104, 104, body, fit="meet", origin="28 6")
    return _svg("img product", 160, 120, body, fit="meet")


def _ridge(pen: _Pen, base: int, height: int, colour: str) -> str:
    points = [f"0,{base}"]
    for x in range(0, 321, pen.rng.choice((40, 64, 80))):
        points.append(f"{x},{base - pen.rng.randint(height // 3, height)}")
    points += ["320,160", "0,160"]
    return f'<polygon points="{" ".join(points)}" fill="{colour}"/>'


def illustration(name: str, seed: int) -> str:
    """A seeded geometric scene: hills, a sea or a skyline under a sun."""
    pen = _Pen("illustration", name, seed)
    light, mid, deep = pen.palette
    sky = f"s{pen.uid}"
    scene = pen.rng.choice(("hills", "sea", "city", "shapes"))
    parts = [f'<defs><linearGradient id="{sky}" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="{mid}"/>'
             f'<stop offset="1" stop-color="{light}"/></linearGradient></defs>',
             f'<rect width="320" height="160" fill="url(#{sky})"/>',
             f'<circle cx="{pen.rng.randint(40, 280)}" cy="{pen.rng.randint(26, 60)}" r="{pen.rng.randint(14, 26)}"'
             f' fill="{pen.accent[1]}"/>']
    if scene == "hills":
        parts += [_ridge(pen, 120, 60, pen.accent[2]), _ridge(pen, 150, 40, deep)]
    elif scene == "sea":
        parts.append(f'<rect y="104" width="320" height="56" fill="{deep}"/>')
        parts += [f'<path d="M0 {y} Q40 {y - 6} 80 {y} T160 {y} T240 {y} T320 {y}" fill="none" stroke="{light}"'
                  f' stroke-opacity=".6" stroke-width="3"/>' for y in range(116, 160, 14)]
    elif scene == "city":
        x = 0
        while x < 320:
            w, h = pen.rng.randint(22, 44), pen.rng.randint(40, 110)
            parts.append(f'<rect x="{x}" y="{160 - h}" width="{w - 3}" height="{h}" fill="{deep}"/>')
            parts += [f'<rect x="{x + 5}" y="{166 - h + row * 14}" width="5" height="6" fill="{light}"/>'
                      for row in range(h // 14 - 1)]
            x += w
    else:
        for _ in range(6):
            colour = pen.rng.choice((deep, pen.accent[1], pen.accent[2], "#ffffff"))
            parts.append(f'<rect x="{pen.rng.randint(0, 280)}" y="{pen.rng.randint(30, 130)}" width="{pen.rng.randint(30, 90)}"'
                         f' height="{pen.rng.randint(20, 60)}" rx="{pen.rng.choice((0, 8, 30))}" fill="{colour}"'
                         f' fill-opacity=".8" transform="rotate({pen.rng.randint(-20, 20)} 160 80)"/>')
    return _svg("img illustration", 320, 160, "".join(parts))


def picture(kind: ImageKind, name: str, seed: int, *, thumbnail: bool = False) -> str:
    """The picture of ``kind`` for ``name`` under layout ``seed``; a ``thumbnail`` (a small
    square frame) shows a product closer."""
    if kind == "product":
        return product(name, seed, square=thumbnail)
    if kind == "avatar":
        return avatar(name, seed)
    if kind == "illustration":
        return illustration(name, seed)
    raise ValueError(f"expected an image kind among ['avatar', 'illustration', 'product'], got {kind!r}")
