"""Arbitrary and adversarial text never crashes a decoder: an action or ActionParseError."""

from __future__ import annotations

import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.actions import ACTION_TYPES, MAX_SCROLL, Scroll, outside, parse_action
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
    "9" * 4300, "0x" + "f" * 5000, "-0b" + "1" * 9000, "0o" + "7" * 3000, "1e400", "99999",
    "None", "```json\n", "```python\n", "```", "\x00", "\u2028", "日本", "🙂", "\t",
    '{"type": "click", "x": 1, "y": 2}', "(1,2)", "'(1,2)'", "[1, 2, 3, 4]",
]
adversarial = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)


def _never_crashes(name: str, text: str, coordinates: str = "pixel") -> None:
    codec = get_codec(name, coordinates=coordinates)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        try:
            action = codec.decode(text, size=SIZE)
        except ActionParseError as err:
            action = err
    assert [str(w.message) for w in warned] == []  # a model's text prints no warnings
    if isinstance(action, ActionParseError):
        assert str(action).startswith(f"{name} codec: expected "), str(action)
        return
    assert isinstance(action, ACTION_TYPES)
    # Every field within its bounds, every point on the screenshot: safe to hand a sandbox.
    assert parse_action(action.model_dump()) == action and outside(action, *SIZE) is None


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
    # Integer literals Python will not print (more than 4300 digits), as hex and decimal.
    "pyautogui.click(x=0x" + "f" * 5000 + ", y=1)", "time.sleep(0x" + "f" * 5000 + ")",
    "pyautogui.click(x=1, y=1, clicks=0x" + "f" * 5000 + ")", "pyautogui.scroll(-0b" + "1" * 20_000 + ")",
    "Action: scroll(start_box='(1,1)', direction='down', distance=0x" + "f" * 5000 + ")",
    "Action: wait(seconds=0x" + "f" * 5000 + ")", "Action: scroll(start_box='(1,1)', dy=-0x" + "f" * 5000 + ")",
    '<tool_call>{"name": "computer_use", "arguments": {"action": "scroll", "pixels": ' + "9" * 4300 + "}}</tool_call>",
    '{"type": "scroll", "x": 1, "y": 1, "dy": -' + "9" * 4300 + "}",
    # Absurd but printable amounts: refused by the action's bounds, not by the sandbox.
    "pyautogui.scroll(1e300)", "Action: scroll(start_box='(1,1)', direction='down', distance=10001)",
    '{"type": "scroll", "x": 1, "y": 1, "dy": 1e300}', '{"type": "wait", "seconds": 61}',
    '<tool_call>{"name": "computer_use", "arguments": {"action": "wait", "time": 1e9}}</tool_call>',
]


@pytest.mark.parametrize("text", PATHOLOGICAL, ids=lambda t: repr(t[:24]))
@pytest.mark.parametrize("name", CODECS)
def test_pathological_input_fails_fast_and_cleanly(name, text):
    started = time.perf_counter()
    _never_crashes(name, text)
    assert time.perf_counter() - started < 2.0


HUGE = "f" * 5000  # a hex literal Python parses but will not print in decimal


@pytest.mark.parametrize(("name", "text"), [
    ("pyautogui", f"pyautogui.click(x=1, y=1, clicks=0x{HUGE})"),
    ("pyautogui", f"time.sleep(0x{HUGE})"),
    ("uitars", f"Action: wait(seconds=0x{HUGE})"),
    ("uitars", f"Action: scroll(start_box='(1,1)', direction='down', distance=0x{HUGE})"),
])
def test_huge_integer_literals_are_a_short_parse_error(name, text):
    """These crashed with Python's ValueError (integer string conversion) while the error
    message was being built; now the literal itself is refused, and the message stays short."""
    with pytest.raises(ActionParseError, match=f"^{name} codec: expected ") as caught:
        get_codec(name).decode(text, size=SIZE)
    assert len(str(caught.value)) < 600


@pytest.mark.parametrize("name", CODECS)
def test_every_decoded_scroll_is_within_max_scroll(name):
    """An absurd scroll amount is the agent's mistake at decode time, never a Chromium error."""
    codec = get_codec(name)
    ok = codec.encode(Scroll(x=5, y=5, dy=MAX_SCROLL), size=SIZE)
    assert codec.decode(ok, size=SIZE) == Scroll(x=5, y=5, dy=MAX_SCROLL)
    too_far = ok.replace(str(MAX_SCROLL // 100) if name == "pyautogui" else str(MAX_SCROLL),
                         str(MAX_SCROLL // 100 + 1) if name == "pyautogui" else str(MAX_SCROLL + 1))
    with pytest.raises(ActionParseError, match=str(MAX_SCROLL)):
        codec.decode(too_far, size=SIZE)
