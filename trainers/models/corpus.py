"""The text the project's own tokenizer is trained on, built deterministically from the repo.

Nothing is downloaded: the corpus is what a policy in this project reads and writes,

- every codec's system prompt, in pixel and in 0-1000 coordinates;
- encodings of sampled actions of every type in every codec (what a policy emits);
- prompts from the one prompt builder (instruction, previous actions, action errors);
- the FSM site library's text (titles, labels, values, goal descriptions as instructions)
  and the random site generator's word lists;
- MiniWoB-like words (the widgets and instructions of MiniWoB++ pages).

``corpus()`` returns the same list of strings on every call and every machine (a fixed
random stream, sorted file lists), so the tokenizer built from it is the same too.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import yaml

from fsm_sites.generator.vocab import EMAILS, PEOPLE, VOCABS
from fsm_sites.library import SITES_DIR
from harness.actions import (
    MODIFIER_KEYS,
    NAMED_KEYS,
    Action,
    Click,
    ClickElement,
    Done,
    DoubleClick,
    Drag,
    Key,
    Move,
    RightClick,
    Scroll,
    TypeText,
    Wait,
)
from harness.codecs import CODECS, get_codec
from harness.errors import ActionParseError
from harness.prompts import HistoryEntry, PromptBuilder, PromptConfig
from sandboxes.base import UIElement

#: The random stream every sampled part of the corpus comes from.
CORPUS_SEED = 20250101
#: Actions sampled per codec and coordinate space.
ACTIONS_PER_CODEC = 300
#: Screenshot sizes the sampled actions are encoded against: MiniWoB, FSM pages, desktops.
SCREEN_SIZES = ((160, 210), (1280, 720), (1024, 768), (800, 600), (1280, 800))

MINIWOB_WORDS = tuple((
    "click button link checkbox radio tab dialog menu submit ok cancel yes no close open select "
    "enter type text field input box search find the a an of to in on at for with and or not "
    "first second third last next previous left right top bottom middle item items list options "
    "option choose pick mark unmark check uncheck date time day month year today tomorrow "
    "email inbox reply forward delete star important send message subject body from to "
    "login username password sign in out remember me terms agree continue back home page "
    "scroll up down drag drop slider resize circle square triangle shape color colour number "
    "numbers count ascending descending order sort copy paste highlight focus hover tooltip "
    "flight book from to departure arrival cheapest shortest price ticket buy social media "
    "post like share retweet follow user profile name address phone city state zip country "
    "red green blue yellow black white gray grey orange purple pink brown gold silver "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April "
    "May June July August September October November December"
).split())
SAMPLE_WORDS = ("lamp", "mug", "chair", "kettle", "Paris", "Tokyo", "Ada Lovelace", "12 Elm St",
                "hello world", "search", "kitchen", "10001", "lee@mail.com", "4242 4242 4242 4242")


def corpus() -> list[str]:
    """Every training text of the tokenizer, in a fixed order."""
    rng = random.Random(CORPUS_SEED)
    texts: list[str] = []
    texts += codec_texts(rng)
    texts += prompt_texts(rng)
    texts += fsm_texts()
    texts += [" ".join(MINIWOB_WORDS), " ".join(w.capitalize() for w in MINIWOB_WORDS)]
    texts += [f"{w}." for w in MINIWOB_WORDS] + [f"Click {w}" for w in MINIWOB_WORDS]
    return texts


def sample_action(rng: random.Random, size: tuple[int, int]) -> Action:
    """A random action of any type inside a ``size`` screenshot."""
    width, height = size
    x, y = rng.randrange(width), rng.randrange(height)
    kind = rng.randrange(10)
    if kind < 4:
        return rng.choice((Click, DoubleClick, RightClick, Move))(x=x, y=y)
    if kind == 4:
        return Drag(x=x, y=y, to_x=rng.randrange(width), to_y=rng.randrange(height))
    if kind == 5:
        return Scroll(x=x, y=y, dy=rng.choice((-300, -100, 100, 300, 500)), dx=rng.choice((0, 0, 50)))
    if kind == 6:
        return TypeText(text=rng.choice(SAMPLE_WORDS + MINIWOB_WORDS))
    if kind == 7:
        named = rng.choice(NAMED_KEYS + tuple("acvxz"))
        keys = (rng.choice(MODIFIER_KEYS), named) if rng.random() < 0.4 else (named,)
        return Key(keys=keys)
    if kind == 8:
        return Wait(seconds=rng.choice((0.5, 1.0, 2.0)))
    return Done(answer=rng.choice((None, "yes", "42", "Paris")))


def codec_texts(rng: random.Random) -> list[str]:
    """System prompts and encoded sampled actions of every codec, in both coordinate spaces."""
    texts = []
    for name in CODECS:
        for coordinates in ("pixel", "normalized"):
            codec = get_codec(name, coordinates=coordinates)
            texts.append(codec.prompt())
            for _ in range(ACTIONS_PER_CODEC):
                size = rng.choice(SCREEN_SIZES)
                texts.append(codec.encode(sample_action(rng, size), size=size))
            texts.append(_parse_error(codec, "I will click the button"))
        elements = get_codec(name, action_space="elements")
        texts.append(elements.prompt())
        for word in SAMPLE_WORDS + MINIWOB_WORDS:
            texts.append(elements.encode(ClickElement(element=word.capitalize())))
    return texts


def _parse_error(codec: Any, text: str) -> str:
    try:
        codec.decode(text, size=SCREEN_SIZES[0])
    except ActionParseError as exc:
        return str(exc)
    return ""


def prompt_texts(rng: random.Random) -> list[str]:
    """Messages of the prompt builder, in every observation mode, with sampled instructions,
    element lists, histories (element actions too) and errors."""
    texts = []
    for name in CODECS:
        for mode in ("screenshot", "screenshot+elements", "elements"):
            builder = PromptBuilder(PromptConfig(codec=name, observation=mode))
            for _ in range(20 if mode == "screenshot" else 8):
                size = rng.choice(SCREEN_SIZES)
                elements = _sample_elements(rng, size) if mode != "screenshot" else None
                history: list[HistoryEntry] = [(sample_action(rng, size).model_dump(), size, elements)
                                               for _ in range(rng.randrange(4))]
                if history and rng.random() < 0.3:
                    history[-1] = (None, size, elements)
                error = (_parse_error(builder.codec, rng.choice(MINIWOB_WORDS))
                         if rng.random() < 0.3 else None)
                prompt = builder.build(instruction=f"Click {rng.choice(MINIWOB_WORDS)}.",
                                       history=history, images=[b""], image_steps=[0], error=error,
                                       elements=elements)
                texts += [part["text"] for message in prompt.messages for part in message["content"]
                          if part.get("type") == "text"]
    return texts


#: Where a sampled element sits besides the main content (``UIElement.section``).
SECTIONS = (None, None, None, "navigation", "sidebar", "footer", "dialog")


def _sample_elements(rng: random.Random, size: tuple[int, int]) -> list[UIElement]:
    """A made-up element list: labelled buttons, links, fields across the screen, some in a
    row (``button "Archive" in row "Lamp"``) or outside the main content."""
    roles = ("button", "link", "textbox", "checkbox", "option", "tab", "card")
    out = []
    for i in range(rng.randrange(1, 6)):
        width, height = rng.randrange(20, min(200, size[0] // 2)), rng.randrange(12, 30)
        row = rng.choice(SAMPLE_WORDS).capitalize() if rng.random() < 0.3 else None
        out.append(UIElement(id=f"e{i}", role=rng.choice(roles),
                             label=rng.choice(SAMPLE_WORDS + MINIWOB_WORDS).capitalize(), row=row,
                             section=rng.choice(SECTIONS),
                             x=rng.randrange(0, size[0] - width), y=rng.randrange(0, size[1] - height),
                             width=width, height=height))
    return out


def fsm_texts() -> list[str]:
    """The strings of every curated FSM site (read as YAML: validating them all is slow) with
    goal descriptions as the sentences tasks use, and the site generator's word lists."""
    texts = []
    for path in sorted(SITES_DIR.glob("*.yaml")):
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        texts += list(_strings(data))
        for goal in data.get("goals", []):
            description = str(goal.get("description", ""))
            texts.append(description[:1].upper() + description[1:] + ".")
    for vocab in VOCABS:
        texts += list(_strings(dataclasses.asdict(vocab)))
    return texts + list(PEOPLE) + list(EMAILS)


def _strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        if data:
            yield data
    elif isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list | tuple):
        for value in data:
            yield from _strings(value)
