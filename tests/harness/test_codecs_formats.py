"""Each codec reads the output shapes real models emit, and explains what it refuses."""

from __future__ import annotations

import pytest

from harness.actions import (
    Click,
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
from harness.codecs import get_codec
from harness.errors import ActionParseError

SIZE = (1280, 720)


def _call(args: str) -> str:
    return f'<tool_call>\n{{"name": "computer_use", "arguments": {args}}}\n</tool_call>'


CASES = {
    "qwen": [
        ("I will click it.\n" + _call('{"action": "left_click", "coordinate": [10, 20]}'), Click(x=10, y=20)),
        (_call('"{\\"action\\": \\"double_click\\", \\"coordinate\\": [1, 2]}"'), DoubleClick(x=1, y=2)),
        (_call('{"action": "mouse_move", "coordinate": [5, 6]}') + "\n"
         + _call('{"action": "left_click_drag", "coordinate": [50, 60]}'), Drag(x=5, y=6, to_x=50, to_y=60)),
        (_call('{"action": "scroll", "pixels": -200}'), Scroll(x=640, y=360, dy=200)),
        (_call('{"action": "key", "keys": "ctrl+c"}'), Key(keys=("ctrl", "c"))),
        (_call('{"action": "key", "keys": ["Return"]}'), Key(keys=("enter",))),
        (_call('{"action": "wait", "time": 2}'), Wait(seconds=2.0)),
        (_call('{"action": "terminate", "status": "success"}'), Done()),
        (_call('{"action": "answer", "text": "Paris"}'), Done(answer="Paris")),
        ('{"name": "computer_use", "arguments": {"action": "right_click", "coordinate": [3.6, 4.4]}}',
         RightClick(x=4, y=4)),
    ],
    "uitars": [
        ("Thought: the OK button.\nAction: click(start_box='<|box_start|>(100,200)<|box_end|>')", Click(x=100, y=200)),
        ("Action: click(point='<point>200 300</point>')", Click(x=200, y=300)),
        ("Action: left_double(start_box='[10, 20, 30, 40]')", DoubleClick(x=20, y=30)),
        ("Action: right_single(start_box='(7,8)')", RightClick(x=7, y=8)),
        ("Action: mouse_move(start_box='(7,8)')", Move(x=7, y=8)),
        ("Action: drag(start_point='<point>1 2</point>', end_point='<point>3 4</point>')",
         Drag(x=1, y=2, to_x=3, to_y=4)),
        ("Action: hotkey(key='ctrl c')", Key(keys=("ctrl", "c"))),
        ("Action: hotkey(key='Ctrl+Shift+T')", Key(keys=("ctrl", "shift", "t"))),
        ("Action: type(content='it's done\\n')", TypeText(text="it's done\n")),
        ("Action: scroll(start_box='(5,5)', direction='up')", Scroll(x=5, y=5, dy=-300)),
        ("Action: wait()", Wait()),
        ("Action: finished(content='42')", Done(answer="42")),
        ("Action: finished()", Done()),
        ("Thought: my plan. Action: is next.\nAction: click(start_box='(1,1)')", Click(x=1, y=1)),
        ("Action: click(start_box='(1,1)')\nI clicked the button.", Click(x=1, y=1)),
    ],
    "pyautogui": [
        ("```python\nimport pyautogui\npyautogui.click(x=10, y=20)\n```", Click(x=10, y=20)),
        ("pyautogui.click(10, 20, button='right')", RightClick(x=10, y=20)),
        ("pyautogui.click(x=10, y=20, clicks=2)", DoubleClick(x=10, y=20)),
        ("pyautogui.moveTo(10, 20)\npyautogui.click()", Click(x=10, y=20)),
        ("pyautogui.moveTo((10, 20))", Move(x=10, y=20)),
        ("pyautogui.moveTo(1, 2)\npyautogui.dragTo(30, 40, duration=0.5)", Drag(x=1, y=2, to_x=30, to_y=40)),
        ("pyautogui.scroll(-5)", Scroll(x=640, y=360, dy=500)),
        ("pyautogui.hscroll(2, x=1, y=1)", Scroll(x=1, y=1, dx=200)),
        ("pyautogui.typewrite('hello')", TypeText(text="hello")),
        ("pyautogui.press('Return')", Key(keys=("enter",))),
        ("pyautogui.hotkey('command', 'v')", Key(keys=("meta", "v"))),
        ("Let me wait.\nWAIT", Wait()),
        ("time.sleep(2.5)", Wait(seconds=2.5)),
        ("DONE", Done()),
        ("FAIL", Done()),
    ],
    "json": [
        ('{"type": "click", "x": 1, "y": 2}', Click(x=1, y=2)),
        ('Sure:\n```json\n{"type": "key", "keys": ["ctrl", "a"]}\n```\nDone.', Key(keys=("ctrl", "a"))),
        ('{"action": {"type": "done", "answer": "yes"}}', Done(answer="yes")),
        ('{"type": "scroll", "x": 1.4, "y": 2, "dy": 100}', Scroll(x=1, y=2, dy=100)),
    ],
}


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [(name, text, expected) for name, cases in CASES.items() for text, expected in cases],
)
def test_model_output_shapes_decode(name, text, expected):
    assert get_codec(name).decode(text, size=SIZE) == expected


REFUSALS = {
    "qwen": [
        (_call('{"action": "left_click_drag", "coordinate": [5, 5]}'), "start_coordinate"),
        (_call('{"action": "middle_click", "coordinate": [5, 5]}'), "an action among"),
        (_call('{"action": "left_click", "coordinate": [NaN, 5]}'), "finite number for x"),
        (_call('{"action": "left_click", "coordinate": [-3, 5]}'), "x in 0..1279"),
        # Numbers are numbers: lax coercion would read true as 1 and "7" as 7.
        (_call('{"action": "scroll", "coordinate": [5, 5], "pixels": 3, "pixels_x": true}'),
         "a number for pixels_x"),
        (_call('{"action": "scroll", "coordinate": [5, 5], "pixels": "7"}'), "a number for pixels"),
        (_call('{"action": "wait", "time": "2"}'), "seconds: Value error, expected a number, got str"),
        ("click at 5, 5", "<tool_call>"),
    ],
    "uitars": [
        ("Action: call_user()", "expected one of click"),
        ("Action: click(start_box=__import__('os').getcwd())", "literal argument"),
        ("Action: click(start_box='(1,2'", "'Action: ' and one call"),
        ("Action: scroll(start_box='(1,2)', direction='sideways')", "direction="),
        ("Action: type(content='a') + open('/tmp/x', 'w')", "'Action: ' and one call"),
        ("Action: scroll(start_box='(1,2)', dx='7', dy=3)", "dx: Value error, expected a number"),
        ("Action: scroll(start_box='(1,2)', dx=True, dy=3)", "string or number literal"),
        ("Action: wait(seconds='2')", "seconds: Value error, expected a number"),
    ],
    "pyautogui": [
        ("import os\nos.system('touch /tmp/pwned')", "got os.system()"),
        ("pyautogui.click(x=len('abc'), y=1)", "literal argument"),
        ("pyautogui.dragTo(3, 4)", "moveTo(start) before dragTo"),
        ("pyautogui.click(x=1, y=2, button='middle')", "button="),
        ("pyautogui.press(['a', 'b'])", "use hotkey"),
        ("x = 1", "call expression"),
        ("time.sleep('2')", "seconds: Value error, expected a number, got str"),
    ],
    "json": [
        ('{"type": "teleport", "x": 1}', "a type among click, double_click"),
        ('{"x": 1, "y": 2}', "whose type is one of: click, double_click"),
        ('{"type": "click", "x": NaN, "y": 2}', "JSON object"),
        ('{"type": "wait", "seconds": 99}', "seconds"),
        ('{"type": "scroll", "x": 1, "y": 2, "dy": true}', "dy: Value error, expected a number, got bool"),
        ('{"type": "wait", "seconds": "2"}', "seconds: Value error, expected a number, got str"),
        ('{"type": "click", "x": "7", "y": 2}', "a number for x"),
    ],
}


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [(name, text, needle) for name, cases in REFUSALS.items() for text, needle in cases],
)
def test_refusals_say_what_was_expected_and_quote_the_input(name, text, needle):
    with pytest.raises(ActionParseError) as info:
        get_codec(name).decode(text, size=SIZE)
    message = str(info.value)
    assert message.startswith(f"{name} codec: expected ")
    assert needle in message
    assert repr(text[:20])[1:-1] in message  # an excerpt of what arrived


def test_a_refused_call_is_never_run(tmp_path):
    target = tmp_path / "pwned"
    attempts = {
        "pyautogui": f"import pathlib\npathlib.Path({str(target)!r}).touch()",
        "uitars": f"Action: click(start_box=open({str(target)!r}, 'w'))",
    }
    for name, text in attempts.items():
        with pytest.raises(ActionParseError):
            get_codec(name).decode(text)
    assert not target.exists()


def test_long_input_is_quoted_as_a_truncated_excerpt():
    text = "Action: " + "x" * 5000
    with pytest.raises(ActionParseError) as info:
        get_codec("uitars").decode(text)
    assert "(5008 chars)" in str(info.value)
    assert len(str(info.value)) < 600


def test_decode_refuses_non_string_input():
    with pytest.raises(ActionParseError, match="expected model output as str, got bytes"):
        get_codec("json").decode(b'{"type": "wait"}')  # type: ignore[arg-type]
