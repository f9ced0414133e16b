"""Label renaming (``data.rename_labels``): a renamed prompt is the prompt the one prompt
builder writes for the same page with its elements renamed, the target still names a listed
element, and the collator trains on the renamed target. List shuffling
(``data.shuffle_elements``): a shuffled prompt is the prompt of the same page with its
elements in another order, and the target still names its element."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from harness.prompts import PromptBuilder, PromptConfig, named_element
from sandboxes.base import UIElement
from trainers.errors import TrainingDataError
from trainers.training.augment import LabelRenamer, ListShuffler, chain, listed_labels
from trainers.training.config import DataConfig
from trainers.training.data import SFTCollator

BUILDER = PromptBuilder(PromptConfig(codec="json", observation="elements", system_prompt=False))


def element(i: int, role: str, label: str, **more: object) -> UIElement:
    return UIElement(id=f"e{i}", role=role, label=label, x=0, y=20 * i, width=50, height=10, **more)


PAGE = [element(0, "link", "Inbox", section="navigation"), element(1, "tab", "Inbox"),
        element(2, "button", "Archive", row="Lunch on Friday?"),
        element(3, "button", "Archive", row="Quarterly report"),
        element(4, "button", "+", row="Quarterly report"), element(5, "textbox", "Search", value="Inbox"),
        element(6, "link", "Mailbox"), element(7, "link", "Mailbox")]
INSTRUCTION = "Archive 'Quarterly report' from the inbox, then search."
TARGET = {"type": "click_element", "element": 'Archive in row "Quarterly report"'}


def prompt_text(page: list[UIElement], instruction: str, history: list[str]) -> str:
    past = [({"type": "click_element", "element": name}, (640, 400), None) for name in history]
    built = BUILDER.build(instruction=instruction, history=past, images=[], image_steps=[],
                          error=None, elements=page)
    return "".join(p["text"] for m in built.messages for p in m["content"] if p["type"] == "text")


def test_listed_labels_are_the_lists_labels_and_rows_without_values_signs_or_numbers() -> None:
    text = prompt_text(PAGE, INSTRUCTION, [])
    assert "Mailbox #2" in text  # the last-resort number the list gives the second copy
    assert listed_labels(text) == ["Inbox", "Archive", "Lunch on Friday?", "Quarterly report",
                                   "Search", "Mailbox"]  # no "+", no value


def test_a_numbered_list_gives_the_same_labels() -> None:
    numbered = PromptBuilder(PromptConfig(codec="json", observation="elements", system_prompt=False,
                                          element_refs="index"))
    built = numbered.build(instruction=INSTRUCTION, history=[], images=[], image_steps=[], error=None,
                           elements=PAGE)
    text = "".join(p["text"] for m in built.messages for p in m["content"] if p["type"] == "text")
    assert '[3] button "Archive" in row "Lunch on Friday?"' in text
    assert listed_labels(text) == listed_labels(prompt_text(PAGE, INSTRUCTION, []))


def test_a_renamed_prompt_is_the_prompt_of_the_renamed_page() -> None:
    """Renaming every label of the text equals building the prompt from renamed elements:
    the list, the instruction (in its own case), the history and the target agree."""
    messages = BUILDER.build(instruction=INSTRUCTION, history=[({"type": "click_element",
                             "element": "Inbox in navigation"}, (640, 400), None)], images=[],
                             image_steps=[], error=None, elements=PAGE).messages
    vocabulary = ["Drafts", "Spam folder", "Team offsite agenda", "Compose", "Settings", "Labels"]
    renamer = LabelRenamer(1.0, vocabulary, seed=3)
    mapping = LabelRenamer(1.0, vocabulary, seed=3).mapping(messages)
    assert set(mapping) == {"Inbox", "Archive", "Lunch on Friday?", "Quarterly report", "Search",
                            "Mailbox"}
    assert len(set(mapping.values())) == len(mapping)  # two labels never merge
    renamed, (target,) = renamer(messages, json.dumps(TARGET))

    def new(label: str | None) -> str | None:
        return None if label is None else mapping.get(label, label)

    page = [e.model_copy(update={"label": new(e.label), "row": new(e.row), "value": new(e.value)})
            for e in PAGE]
    instruction = (f"{mapping['Archive']} '{mapping['Quarterly report']}' from the "
                   f"{mapping['Inbox'].lower()}, then {mapping['Search'].lower()}.")
    expected = prompt_text(page, instruction, [f"{mapping['Inbox']} in navigation"])
    got = "".join(p["text"] for m in renamed for p in m["content"] if p["type"] == "text")
    assert got == expected
    assert f'= "{mapping["Inbox"]}"' in got  # a value that reads as a renamed label follows it
    found, error = named_element(json.loads(target)["element"], page)
    assert error is None and found == page[3]


def test_renaming_is_seeded_partial_and_leaves_an_untouched_row_alone() -> None:
    messages = BUILDER.build(instruction=INSTRUCTION, history=[], images=[], image_steps=[],
                             error=None, elements=PAGE).messages
    vocabulary = [f"Label {i}" for i in range(50)]
    first = LabelRenamer(0.5, vocabulary, seed=7)(messages, "x")
    assert first == LabelRenamer(0.5, vocabulary, seed=7)(messages, "x") and first[0] != messages
    sizes = {len(LabelRenamer(0.5, vocabulary, seed=s).mapping(messages)) for s in range(20)}
    assert min(sizes) < 6 and max(sizes) > 0  # some labels, not all, on most draws
    assert LabelRenamer(0.0, vocabulary)(messages, "x") == (list(messages), ["x"])


def test_new_labels_are_words_of_the_labels_none_likelier_than_another() -> None:
    """Ten cart rows' "Remove ..." buttons make "remove" one word of the vocabulary, not the
    likeliest start of a renamed target (whole-label draws taught the tiny model "Remove")."""
    page = [element(i, "button", f"Remove item{chr(97 + i)}") for i in range(10)]
    page += [element(10 + i, "link", name) for i, name in enumerate(["Home", "Cart", "Search 2"])]
    messages = BUILDER.build(instruction="Empty the cart.", history=[], images=[], image_steps=[],
                             error=None, elements=page).messages
    renamer = LabelRenamer.from_messages([messages], 0.5, seed=1)
    assert renamer.vocabulary == sorted({"remove", "home", "cart", "search"}
                                        | {f"item{chr(97 + i)}" for i in range(10)})
    starts = Counter(renamer.new_label().split()[0] for _ in range(2800))
    assert set(starts) == {w.capitalize() for w in renamer.vocabulary}
    assert max(starts.values()) < 2 * 2800 / len(renamer.vocabulary)


def test_renaming_needs_element_lists_to_rename_with() -> None:
    with pytest.raises(TrainingDataError, match="expected element labels to rename with"):
        LabelRenamer.from_messages([[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]], 0.5)
    with pytest.raises(ValueError, match="expected data.rename_labels only with observation: elements"):
        DataConfig(store="s", rename_labels=0.5,
                   prompt=PromptConfig(observation="screenshot+elements"))


def test_the_collator_trains_on_the_renamed_target(tiny_policy) -> None:
    built = BUILDER.build(instruction=INSTRUCTION, history=[], images=[], image_steps=[],
                          error=None, elements=PAGE)
    feature = {"images": [], "prompt": json.dumps(built.messages), "target": json.dumps(TARGET)}
    renamer = LabelRenamer(1.0, ["Drafts", "Spam folder", "Compose", "Settings", "Labels", "Sent"])
    batch = SFTCollator(tiny_policy, renamer)([feature])
    labels = batch["labels"][0]
    trained = tiny_policy.processor.tokenizer.decode(labels[labels != -100])
    assert "Quarterly report" not in trained and "Archive" not in trained
    prompt = tiny_policy.processor.tokenizer.decode(batch["input_ids"][0][labels == -100])
    renamed = json.loads(trained.split("<|im_end|>")[0])["element"]
    assert renamed.split(" in row ")[0] in prompt and "Quarterly report" not in prompt


NUMBERED = PromptBuilder(PromptConfig(codec="json", observation="elements", system_prompt=False,
                                      element_refs="index"))


def _built(builder: PromptBuilder, page: list[UIElement]) -> list:
    history = [({"type": "click_element", "element": "Inbox in navigation"}, (640, 400), page)]
    return builder.build(instruction=INSTRUCTION, history=history, images=[], image_steps=[], error=None,
                         elements=page).messages


def _text_of(messages: list) -> str:
    return "".join(p["text"] for m in messages for p in m["content"] if p["type"] == "text")


@pytest.mark.parametrize("builder", [NUMBERED, BUILDER], ids=["numbers", "labels"])
def test_a_shuffled_prompt_is_the_prompt_of_the_page_in_another_order(builder) -> None:
    """The shuffled row equals the builder's prompt for the same elements in the drawn order
    (numbers follow), and its target names, in the new prompt, the element it named before.
    (Without the second "Mailbox": a last-resort "#2" stays on its line, where the builder
    would give it to whichever copy comes second.)"""
    start = PAGE[:7]
    messages = _built(builder, start)
    for k, element in enumerate(start):
        target = builder.action_text({"type": "click", "x": 5, "y": element.y + 5}, (640, 400), start)
        shuffler = ListShuffler(1.0, seed=k)
        shuffled, (new_target,) = shuffler(messages, target)
        order = _order(start, _text_of(shuffled))
        assert sorted(order) == list(range(len(start))) and order != list(range(len(start)))
        page = [start[i] for i in order]
        assert _text_of(shuffled) == _text_of(_built(builder, page))
        found, error = named_element(json.loads(new_target)["element"], page)
        assert error is None and found is element, (k, new_target)
    assert ListShuffler(0.0)(messages, "x") == (messages, ["x"])
    assert ListShuffler(1.0, seed=3)(messages, "x") == ListShuffler(1.0, seed=3)(messages, "x")


def _order(page: list[UIElement], text: str) -> list[int]:
    """The page's elements in the order the shuffled list shows them (matched by id-free line:
    each line of PAGE is distinct once its number is taken off)."""
    plain = [line.split(" ", 1)[1] for line in _text_of(_built(BUILDER, page)).split("Elements:\n")[1]
             .split("\nPrevious actions:")[0].split("\n")]
    shown = [line.split(" ", 1)[1] for line in text.split("Elements:\n")[1].split("\nPrevious actions:")[0]
             .split("\n")]
    return [plain.index(line) for line in shown]


def test_renaming_then_shuffling_chain_and_shuffling_needs_a_list(tiny_policy) -> None:
    messages = _built(NUMBERED, PAGE)
    target = NUMBERED.action_text({"type": "click", "x": 5, "y": PAGE[3].y + 5}, (640, 400), PAGE)
    both = chain([LabelRenamer(1.0, ["Drafts", "Compose", "Settings", "Labels"], seed=1), ListShuffler(1.0, seed=1)])
    shuffled, (new_target,) = both(messages, target)
    assert "Quarterly report" not in _text_of(shuffled) and new_target != target
    number = int(json.loads(new_target)["element"].strip("[]"))
    line = _text_of(shuffled).split(f"\n[{number}] ")[1].split("\n")[0]
    assert line.startswith('button "') and " in row " in line  # still the row's Archive button
    feature = {"images": [], "prompt": json.dumps(messages), "target": target}
    batch = SFTCollator(tiny_policy, ListShuffler(1.0, seed=0))([feature])
    labels = batch["labels"][0]
    assert tiny_policy.processor.tokenizer.decode(labels[labels != -100]).startswith('{"type": "click_element"')
    assert chain([]) is None
    with pytest.raises(ValueError, match="shuffle_elements only with an element list"):
        DataConfig(store="s", shuffle_elements=0.5, prompt=PromptConfig(observation="screenshot"))
