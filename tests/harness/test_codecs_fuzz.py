"""Arbitrary and adversarial text never crashes a decoder: an action or ActionParseError."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.actions import ACTION_TYPES
from harness.codecs import CODECS, get_codec
from harness.codecs.base import MAX_INPUT_CHARS
from harness.errors import ActionParseError
from tests.harness.test_codecs_strategies import actions

SIZE = (1280, 720)
# Pieces of every codec's syntax plus the classic troublemakers, glued at random.
FRAGMENTS = [
    "<tool_call>", "</tool_call>", "{", "}", "[", "]", "(", ")", ",", ":", '"', "'", "\\",
    "\n", " ", '"name": "computer_use"', '"arguments": ', '"action": ', '"left_click"',
    '"coordinate": ', '"type": ', '"click"', '"scroll"', '"x": ', '"y": ', "Action: ",
    "Thought: ", "click(", "drag(", "scroll(", "type(content=", "hotkey(key=", "start_box=",
    "end_box=", "direction=", "<point>", "</point>", "<|box_start|>", "<|box_end|>",
    "pyautogui.", "click", "moveTo", "dragTo", "hscroll", "write", "press(", "hotkey(",
    "x=", "y=", "WAIT", "DONE", "FAIL", "time.sleep(", "import os", "__import__('os')",
    "os.system('id')", "lambda: 0", "[i for i in ()]", "NaN", "Infinity", "-Infinity",
    "1e999", "-1", "-0", "0.5", "1e308", "9" * 400, "9" * 5000, "1_000", "0x10", "True",
    "None", "```json\n", "```python\n", "```", "\x00", "\u2028", "日本", "🙂", "\t",
    '{"type": "click", "x": 1, "y": 2}', "(1,2)", "'(1,2)'", "[1, 2, 3, 4]",
]
adversarial = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


def _never_crashes(name: str, text: str, coordinates: str = "pixel") -> None:
    codec = get_codec(name, coordinates=coordinates)
    try:
        action = codec.decode(text, size=SIZE)
    except ActionParseError as err:
        assert str(err).startswith(f"{name} codec: expected "), str(err)
        return
    assert isinstance(action, ACTION_TYPES)


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=100, deadline=None)
@given(text=st.text(max_size=300))
def test_random_text_never_crashes(name, text):
    _never_crashes(name, text)


@pytest.mark.parametrize("coordinates", ["pixel", "normalized"])
@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=80, deadline=None)
@given(text=adversarial)
def test_adversarial_text_never_crashes(name, coordinates, text):
    _never_crashes(name, text, coordinates)


@st.composite
def mutated_encodings(draw, name: str):
    """A valid encoding with a few characters inserted, deleted or replaced."""
    text = get_codec(name).encode(draw(actions))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.sampled_from(FRAGMENTS) | st.text(max_size=2))
        if edit == "insert":
            text = text[:at] + piece + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + piece + text[at + len(piece):]
    return text


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_valid_output_never_crashes(name, data):
    _never_crashes(name, data.draw(mutated_encodings(name)))


PATHOLOGICAL = [
    "", " ", "\x00" * 100, "[" * 100_000, "{" * 30_000, "(" * 30_000, "-" * 30_000 + "1",
    "Action: click(start_box='" + "(" * 10_000 + "')", "<tool_call>" * 5_000,
    '{"type": "click", "x": ' + "9" * 5000 + ', "y": 1}',
    "pyautogui.scroll(" + "9" * 5000 + ")", "pyautogui.scroll(1e99999999)",
    "Action: scroll(start_box='(1,1)', direction='down', distance=1e99999999)",
    "Action: click(start_box='1" + " " * 20_000 + "x')",
    '{"type": "key", "keys": [' + '"a",' * 5000 + '"b"]}',
    "x" * (MAX_INPUT_CHARS + 1),
    "pyautogui.click(x=" + "[" * 150 + "]" * 150 + ", y=1)",
    "pyautogui.moveTo(1, 2)\n" * 2000,
]


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=lambda t: repr(t[:24]))
@pytest.mark.parametrize("name", CODECS)
def test_pathological_input_fails_fast_and_cleanly(name, text):
    started = time.perf_counter()
    _never_crashes(name, text)
    assert time.perf_counter() - started < 2.0
