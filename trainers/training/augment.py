"""Augmentations of element-list training rows: label renaming and list shuffling.

**Label renaming**: training rows whose element labels only copying can predict.

A model trained on a few dozen sites learns their labels by heart: on a site it never saw it
answers with a training site's label ("Inbox", "Next page") that its element list does not
hold (BENCHMARKS.md, issue 21 row 1). Renaming fixes what that failure needs. Each label of a
row's element list is replaced, with probability ``p``, by one to three words drawn from the
training rows' labels, everywhere the row writes it: the element list,
the instruction, the previous actions, the last error and the target action. The row stays
the same task on a page that names its elements differently, and its target is still the
element the list shows, now under a name only the list gives away. The words are drawn each
as likely: drawing whole labels instead made "Remove ..." (many cart rows' buttons) the
likeliest start of a renamed target, and the tiny model learned to answer "Remove ..." to
everything rather than to copy (BENCHMARKS.md, issue 21 row 1).

The labels of an element list are what is renamed (``- role "label"`` and its ``in row
"..."``), never values (``= "..."``) for their own sake; a value that reads the same as a
renamed label is renamed with it (a combobox showing its option "Lead"), so the same words
stay the same words everywhere in the row. A label is matched as a whole word, the longest first, as written
and, for labels of four or more characters, in lower case (the instruction's "hardware
board" for the option "Hardware"). Labels a whole-word match cannot find safely are left as
they are: those that start or end with a sign (``+``, ``-``, ``$12.50``) and those whose JSON
form escapes a character (the actions write them escaped). Prompts with images cannot be
renamed: the screenshot would still show the old label (``DataConfig`` refuses the
combination).

**List shuffling** (``ListShuffler``): the lines of a row's element list in a random order, renumbered
from 1 where the list numbers them (``element_refs: index``), the target's ``[k]`` following
its element. A model trained on lists in page order learns where content usually sits (the
corpus's lists open with navigation, so the answer is rarely ``[1]``-``[4]``) and names
``[4]`` on MiniWoB's three-element lists (BENCHMARKS.md, issue 21 row 2); in a shuffled list
only reading the lines says which number is the element.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from harness.prompts import ELEMENT_NUMBER, Message
from trainers.errors import TrainingDataError

#: an element line: ``- role "label"`` (``[k] role "label"`` in a numbered list) then an
#: optional `` in row "row"``
_LINE = re.compile(r'^(?:-|\[\d+\]) \S+ "((?:[^"\\]|\\.)*)"(?: in row "((?:[^"\\]|\\.)*)")?', re.MULTILINE)
#: a prompt's element list: ``Elements:`` and its lines (group 1), up to the first line that
#: is not one of them
_LIST = re.compile(r"^Elements:\n((?:(?:-|\[\d+\]) [^\n]*(?:\n|$))+)", re.MULTILINE)
_NUMBERED = re.compile(r" #\d+$")
_WORD = re.compile(r"[^\W\d_]{2,}")
#: a label renaming can find as a whole word: word characters at its edges (a closing ``?``,
#: ``!``, ``.`` or ``)`` allowed); ``+``, ``-`` or ``$12.50`` would match bullets and prices
_RENAMABLE = re.compile(r"\w(?:.*[\w?!.)])?", re.DOTALL)


def listed_labels(text: str) -> list[str]:
    """The distinct renamable labels (and rows) of the element list in a prompt's text, in
    list order, with a last-resort ``#k`` number taken off (``Mailbox #2`` is ``Mailbox``'s
    copy). Left out: labels whose JSON form escapes a character (the actions write them
    escaped) and labels that do not start with a word character or end with one (``+``,
    ``-``: a whole-word match could not tell them from a list's bullets)."""
    found: dict[str, None] = {}
    for block in _LIST.findall(text):
        for match in _LINE.finditer(block):
            for quoted in match.groups():
                if quoted is None:
                    continue
                label = _NUMBERED.sub("", json.loads(f'"{quoted}"'))
                if _RENAMABLE.fullmatch(label) and json.dumps(label, ensure_ascii=False) == f'"{label}"':
                    found[label] = None
    return list(found)


@dataclass
class LabelRenamer:
    """Renames a row's element labels consistently across its prompt and replies (see the
    module docstring). ``vocabulary`` is the words a renamed label is made of; ``seed`` makes the
    sequence of renamings a run sees repeatable."""

    probability: float
    vocabulary: Sequence[str]
    seed: int = 0
    _random: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.probability <= 1.0:
            raise TrainingDataError(f"expected a renaming probability in [0, 1], got {self.probability}")
        if self.probability and len(set(self.vocabulary)) < 2:
            raise TrainingDataError(
                f"expected element labels to rename with, got {len(set(self.vocabulary))} words in "
                "the training rows' labels (label renaming needs the element-list observation); "
                "set data.rename_labels: 0")
        self._random = random.Random(self.seed)

    @classmethod
    def from_messages(cls, prompts: Iterable[Sequence[Message]], probability: float,
                      seed: int = 0) -> LabelRenamer:
        """A renamer whose vocabulary is every word of two letters or more of the labels the
        rows' element lists show."""
        vocabulary: dict[str, None] = {}
        for messages in prompts:
            for label in listed_labels(_text(messages)):
                for word in _WORD.findall(label):
                    vocabulary[word.lower()] = None
        return cls(probability, sorted(vocabulary), seed)

    def new_label(self) -> str:
        """One to three words of the vocabulary, each as likely, the first capitalised: no
        label, and no first word, is likelier than another, so only copying predicts it."""
        words = [self._random.choice(self.vocabulary) for _ in range(self._random.randint(1, 3))]
        return " ".join([words[0].capitalize(), *words[1:]])

    def mapping(self, messages: Sequence[Message]) -> dict[str, str]:
        """The renaming of one row: each listed label, with probability ``p``, to a new label
        the row does not show (so two labels never merge)."""
        labels = listed_labels(_text(messages))
        shown = set(labels)
        renamed: dict[str, str] = {}
        for label in labels:
            if self._random.random() >= self.probability:
                continue
            for _ in range(8):
                new = self.new_label()
                if new not in shown:
                    renamed[label] = new
                    shown.add(new)
                    break
        return renamed

    def __call__(self, messages: Sequence[Message], *replies: str) -> tuple[list[Message], list[str]]:
        """The row's messages and replies with one fresh renaming applied to all of them."""
        mapping = self.mapping(messages)
        if not mapping:
            return list(messages), list(replies)
        rename = _substitution(mapping)
        out: list[Message] = [
            {"role": m["role"], "content": [{"type": "text", "text": rename(p["text"])}
                                            if p["type"] == "text" else p for p in m["content"]]}
            for m in messages]
        return out, [rename(r) for r in replies]


def _substitution(mapping: dict[str, str]) -> Callable[[str], str]:
    """One pass over a text replacing every mapped label (longest first, whole words)."""
    table = dict(mapping)
    for old, new in mapping.items():
        if len(old) >= 4 and old.lower() != old:
            table.setdefault(old.lower(), new.lower())
    alternatives = "|".join(re.escape(k) for k in sorted(table, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w])(?:{alternatives})(?![\w])")
    return lambda text: pattern.sub(lambda m: table[m.group(0)], text)


def _text(messages: Sequence[Message]) -> str:
    return "\n".join(p["text"] for m in messages for p in m["content"] if p["type"] == "text")


class Augment(Protocol):
    """A row augmentation: the row's messages and replies, changed as one."""

    def __call__(self, messages: Sequence[Message], *replies: str) -> tuple[list[Message], list[str]]: ...


_MARK = re.compile(r"^\[(\d+)\] ")


@dataclass
class ListShuffler:
    """Shuffles a row's element list with probability ``probability`` (see the module
    docstring): the last ``Elements:`` block of its messages, its numbers and the replies'
    ``[k]`` following their lines; a previous action names a label and stays as it is."""

    probability: float
    seed: int = 0
    _random: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.probability <= 1.0:
            raise TrainingDataError(f"expected a shuffling probability in [0, 1], got {self.probability}")
        self._random = random.Random(self.seed)

    def __call__(self, messages: Sequence[Message], *replies: str) -> tuple[list[Message], list[str]]:
        if self._random.random() >= self.probability:
            return list(messages), list(replies)
        where = [(i, j) for i, m in enumerate(messages) for j, p in enumerate(m["content"])
                 if p["type"] == "text" and _LIST.search(p["text"] or "")]
        if not where:
            return list(messages), list(replies)
        i, j = where[-1]
        text = messages[i]["content"][j]["text"]
        block = list(_LIST.finditer(text))[-1]
        lines = block.group(1).rstrip("\n").split("\n")
        order = list(range(len(lines)))
        self._random.shuffle(order)
        numbered = all(_MARK.match(line) for line in lines)
        new_number = {old + 1: new + 1 for new, old in enumerate(order)}
        shuffled = [_MARK.sub(f"[{new + 1}] ", lines[old], count=1) if numbered else lines[old]
                    for new, old in enumerate(order)]
        ending = "\n" if block.group(1).endswith("\n") else ""
        text = text[:block.start(1)] + "\n".join(shuffled) + ending + text[block.end(1):]
        out = [dict(m, content=list(m["content"])) for m in messages]
        out[i]["content"][j] = {**messages[i]["content"][j], "text": text}
        if not numbered:
            return out, list(replies)  # a label names its element wherever its line is

        def renumber(reply: str) -> str:
            return ELEMENT_NUMBER.sub(lambda m: f"[{new_number.get(int(m.group(1)), int(m.group(1)))}]", reply)

        return out, [renumber(r) for r in replies]


def chain(augments: Sequence[Augment]) -> Augment | None:
    """The augmentations applied in order, as one; None where there are none."""
    if not augments:
        return None
    if len(augments) == 1:
        return augments[0]

    def both(messages: Sequence[Message], *replies: str) -> tuple[list[Message], list[str]]:
        out, texts = list(messages), list(replies)
        for augment in augments:
            out, texts = augment(out, *texts)
        return out, texts

    return both
