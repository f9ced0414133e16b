"""Codec contract: registry, exact round trips, coordinate spaces, generated prompts."""

from __future__ import annotations

import ast
import pathlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness.codecs
from harness.actions import (
    ACTION_TYPES,
    Click,
    Done,
    Drag,
    Key,
    Scroll,
    TypeText,
    Wait,
)
from harness.codecs import CODECS, ActionCodec, get_codec
from harness.codecs.prompt import example_actions
from harness.errors import ActionParseError, ConfigError
from tests.harness.test_codecs_strategies import actions

TRICKY_TEXT = "it's \"quoted\"\nline2\\path\t日本語 é 🙂 \x00 \u2028 Action: click() </tool_call> ```"
EDGE_ACTIONS = [
    *example_actions(),
    Scroll(x=0, y=0), Scroll(x=1, y=2, dx=5, dy=-7), Scroll(x=1, y=2, dx=-300),
    Scroll(x=3, y=4, dy=-10_000), Drag(x=0, y=0, to_x=0, to_y=0),
    TypeText(text=TRICKY_TEXT), TypeText(text="'"), TypeText(text="\\"), TypeText(text="\n"),
    Key(keys=("'",)), Key(keys=("+",)), Key(keys=("ctrl", "+")), Key(keys=("meta", "shift", "s")),
    Key(keys=("\\",)), Wait(seconds=0.0), Wait(seconds=0.1), Wait(seconds=60.0),
    Done(), Done(answer=""), Done(answer=TRICKY_TEXT),
]


def test_registry_lists_the_four_codecs_and_builds_each():
    assert CODECS == ("qwen", "uitars", "pyautogui", "json")
    for name in CODECS:
        codec = get_codec(name)
        assert isinstance(codec, ActionCodec)
        assert codec.name == name


def test_unknown_codec_names_the_valid_ones():
    with pytest.raises(ConfigError, match="expected one of qwen, uitars, pyautogui, json, got 'tars'"):
        get_codec("tars")


def test_bad_codec_option_names_the_field():
    with pytest.raises(ConfigError, match="coordinates"):
        get_codec("json", coordinates="relative")
    with pytest.raises(ConfigError, match="scale"):
        get_codec("json", scale=2)


@pytest.mark.parametrize("name", CODECS)
@pytest.mark.parametrize("action", EDGE_ACTIONS, ids=lambda a: a.type)
def test_edge_actions_round_trip_exactly(name, action):
    codec = get_codec(name)
    assert codec.decode(codec.encode(action)) == action


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=150, deadline=None)
@given(action=actions)
def test_any_valid_action_round_trips_exactly(name, action):
    codec = get_codec(name)
    text = codec.encode(action)
    assert codec.decode(text) == action, text


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=60, deadline=None)
@given(action=actions, width=st.integers(1, 4000), height=st.integers(1, 4000))
def test_normalized_round_trip_is_within_one_normalized_step(name, action, width, height):
    codec = get_codec(name, coordinates="normalized")
    # Points outside the image cannot be expressed in 0..1000; clamp them in first.
    clamped = {f: min(getattr(action, f), (width, height)[i % 2] - 1)
               for i, f in enumerate(("x", "y", "to_x", "to_y")) if hasattr(action, f)}
    action = action.model_copy(update=clamped)
    decoded = codec.decode(codec.encode(action, size=(width, height)), size=(width, height))
    assert type(decoded) is type(action)
    for i, field in enumerate(("x", "y", "to_x", "to_y")):
        if hasattr(action, field):
            extent = (width, height)[i % 2]
            assert abs(getattr(decoded, field) - getattr(action, field)) <= extent / 1000 + 1
        elif hasattr(decoded, field):
            pytest.fail(f"decoded gained {field}")


@pytest.mark.parametrize("name", CODECS)
def test_normalized_mode_maps_to_pixels_and_needs_a_size(name):
    codec = get_codec(name, coordinates="normalized")
    text = codec.encode(Click(x=500, y=500), size=(1000, 1000))  # normalized (500, 500)
    assert codec.decode(text, size=(1920, 1080)) == Click(x=960, y=540)
    with pytest.raises(ConfigError, match="size"):
        codec.decode(text)
    with pytest.raises(ConfigError, match="size"):
        codec.encode(Click(x=1, y=1))


@pytest.mark.parametrize("name", CODECS)
def test_normalized_values_beyond_1000_are_rejected(name):
    codec = get_codec(name, coordinates="normalized")
    text = get_codec(name).encode(Click(x=1001, y=5))  # pixel encoder writes 1001 as-is
    with pytest.raises(ActionParseError, match="0..1000"):
        codec.decode(text, size=(800, 600))


@pytest.mark.parametrize("name", CODECS)
def test_pixel_points_outside_the_screenshot_are_agent_errors(name):
    codec = get_codec(name)
    text = codec.encode(Click(x=1280, y=10))
    assert codec.decode(text) == Click(x=1280, y=10)  # no size: no bound to check
    with pytest.raises(ActionParseError, match=r"x in 0\.\.1279 \(screenshot pixels\)"):
        codec.decode(text, size=(1280, 720))
    assert codec.decode(codec.encode(Click(x=1279, y=719)), size=(1280, 720)) == Click(x=1279, y=719)


@pytest.mark.parametrize("name", CODECS)
def test_prompt_is_generated_from_every_action_model(name):
    codec = get_codec(name)
    prompt = codec.prompt()
    for cls in ACTION_TYPES:
        assert cls.__doc__.strip() in prompt
        for field, info in cls.model_fields.items():
            if field != "type":
                assert info.description in prompt
    for action in example_actions():
        assert codec.encode(action).splitlines()[0] in prompt
    assert "normalized" not in prompt
    assert "0-1000" in get_codec(name, coordinates="normalized").prompt()


def test_prompt_examples_cover_every_action_type():
    assert [type(a) for a in example_actions()] == list(ACTION_TYPES)


def test_a_field_without_an_example_value_fails_loudly(monkeypatch):
    from harness.codecs import prompt

    monkeypatch.delitem(prompt.EXAMPLE_VALUES, "answer")
    with pytest.raises(ValueError, match=r"Done\.answer"):
        get_codec("json").prompt()


FORBIDDEN_NAMES = {"eval", "exec", "compile", "__import__", "execfile"}
FORBIDDEN_ATTRIBUTES = {"eval", "exec", "literal_eval", "system", "popen"}


def _forbidden(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name) and func.id in FORBIDDEN_NAMES:
        return func.id
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        if func.attr in FORBIDDEN_ATTRIBUTES or (func.attr == "compile" and owner != "re"):
            return f"{owner}.{func.attr}"
    return None


def test_no_codec_source_calls_eval_exec_or_compile():
    package = pathlib.Path(harness.codecs.__file__).parent
    sources = sorted(package.glob("*.py"))
    assert len(sources) >= 6
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                assert _forbidden(node) is None, f"{path.name}:{node.lineno} calls {_forbidden(node)}"


def test_the_source_scan_would_catch_an_eval():
    tree = ast.parse("eval(text)\nast.literal_eval(text)\nre.compile('x')")
    found = [_forbidden(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert found == ["eval", "ast.literal_eval", None]


def test_docs_show_the_current_encodings_and_prompt():
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "actions.md").read_text()
    assert get_codec("json").prompt() in doc
    for name in CODECS:
        for action in example_actions():
            for line in get_codec(name).encode(action).splitlines():
                if "tool_call>" not in line:
                    assert f"`{line}`".replace("|", "\\|") in doc, f"{name}: {line}"
