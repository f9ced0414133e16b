"""A model's output is the agent's mistake, whatever it holds: fuzzed through every codec
and the env into real Chromium, nothing a model writes raises out of ``env.step``.

One sandbox serves every example (a page of inputs, links, popups, dialogs, a drag
source, an iframe and scrollers; see tests/sandboxes/pages/fuzz.html). Each example is
decoded at the screenshot's size, stepped, and the page must still answer afterwards.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harness.actions import (
    MAX_SCROLL,
    MODIFIER_KEYS,
    NAMED_KEYS,
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
from harness.codecs import CODECS, get_codec
from harness.env import AsyncEnv
from harness.errors import ActionParseError
from harness.tasks.base import Task, TaskSetup, Validation, require_browser
from sandboxes.base import SandboxRequest
from sandboxes.origins import origin_of
from tests.harness.test_codecs_fuzz import adversarial, mutated_encodings

VIEWPORT = (1024, 768)
#: Longer waits and texts take real time; tests below cover them on their own.
FAST_WAIT_S, FAST_TEXT_CHARS = 0.05, 24


class FuzzPageTask(Task):
    """The fuzz page, never finished: every step is judged by asking the page a question."""

    id = "test:fuzz-page"
    sandbox_request = SandboxRequest(kind="browser", viewport=VIEWPORT)

    def __init__(self, url: str) -> None:
        self.url = url

    async def setup(self, sandbox, *, seed, resources) -> TaskSetup:
        browser = require_browser(sandbox, self.id)
        await browser.reset(self.url, keep_page=True)
        return TaskSetup(instruction="anything", start_url=self.url,
                         allowed_origins=(origin_of(self.url),))

    async def validate(self, sandbox, action) -> Validation:
        events = await require_browser(sandbox, self.id).evaluate("window.events ?? -1")
        return Validation(reward=0.0, raw_reward=0.0, done=False, message=f"events: {events}")


@pytest.fixture(scope="module")
async def fuzz_env(provider, static_server):
    task = FuzzPageTask(static_server.url("fuzz.html"))
    sandbox = await provider.new_sandbox(task.sandbox_request)
    env = AsyncEnv(task, sandbox, max_steps=100_000)
    await env.reset(seed=0)
    yield env
    await env.close()
    await sandbox.close()


def _coordinate(limit: int) -> st.SearchStrategy[int]:
    return st.sampled_from([0, 1, limit - 2, limit - 1]) | st.integers(0, limit - 1)


_x, _y = _coordinate(VIEWPORT[0]), _coordinate(VIEWPORT[1])
_amount = st.sampled_from([-MAX_SCROLL, MAX_SCROLL, 0, 1, -1]) | st.integers(-MAX_SCROLL, MAX_SCROLL)
_key = st.sampled_from(MODIFIER_KEYS + NAMED_KEYS) | st.characters(codec="utf-8").filter(
    lambda c: c.isprintable() and c != " ")
_text = st.text(st.characters(codec="utf-8"), min_size=1, max_size=FAST_TEXT_CHARS)
#: Valid actions on the screen, edges and extremes preferred: what a codec may hand the env.
screen_actions = st.one_of(
    st.builds(Click, x=_x, y=_y), st.builds(DoubleClick, x=_x, y=_y),
    st.builds(RightClick, x=_x, y=_y), st.builds(Move, x=_x, y=_y),
    st.builds(Drag, x=_x, y=_y, to_x=_x, to_y=_y),
    st.builds(Scroll, x=_x, y=_y, dx=_amount, dy=_amount),
    st.builds(TypeText, text=_text), st.builds(Key, keys=st.lists(_key, min_size=1, max_size=4)),
    st.builds(Wait, seconds=st.floats(0, FAST_WAIT_S)), st.builds(Done, answer=st.none() | _text),
)


def model_texts(name: str) -> st.SearchStrategy[str]:
    """Arbitrary text, syntax fragments glued at random, near misses of valid output, and
    valid output of actions at the screen's edges."""
    codec = get_codec(name)
    return st.one_of(
        st.text(max_size=200), adversarial, mutated_encodings(name),
        screen_actions.map(lambda action: codec.encode(action, size=VIEWPORT)),
    )


def _is_fast(name: str, text: str) -> bool:
    try:
        action = get_codec(name).decode(text, size=VIEWPORT)
    except ActionParseError:
        return True
    if isinstance(action, Wait):
        return action.seconds <= FAST_WAIT_S
    return not isinstance(action, TypeText) or len(action.text) <= FAST_TEXT_CHARS


HUGE = "f" * 5000
#: Per codec: a lone surrogate to type, a combination with a key no US keyboard has, an
#: absurd scroll, a lone such key. Each is the agent's error, never the browser's.
HOSTILE = {
    "json": ['{"type": "type_text", "text": "a\\ud800"}', '{"type": "key", "keys": ["ctrl", "\u00e9"]}',
             '{"type": "scroll", "x": 0, "y": 0, "dy": 1e300}', '{"type": "key", "keys": ["\u65e5"]}'],
    "qwen": ['<tool_call>{"name": "computer_use", "arguments": {"action": "type", "text": "\\ud800"}}</tool_call>',
             '<tool_call>{"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "\u00e9"]}}</tool_call>',
             '<tool_call>{"name": "computer_use", "arguments": {"action": "scroll", "pixels": -1e300}}</tool_call>',
             '<tool_call>{"name": "computer_use", "arguments": {"action": "key", "keys": ["\u65e5"]}}</tool_call>'],
    "uitars": ["Action: type(content='\\ud800')", "Action: hotkey(key='ctrl \u00e9')",
               f"Action: scroll(start_box='(0,0)', direction='down', distance=0x{HUGE})",
               "Action: hotkey(key='\u65e5')"],
    "pyautogui": ["pyautogui.write('\\ud800')", "pyautogui.hotkey('ctrl', '\u00e9')",
                  f"pyautogui.scroll(-0x{HUGE}, x=0, y=0)", "pyautogui.press('\u65e5')"],
}


@pytest.mark.parametrize("name", CODECS)
async def test_hostile_outputs_come_back_as_agent_errors(fuzz_env, name):
    for text in HOSTILE[name]:
        obs, _, terminated, _, info = await fuzz_env.step(text, codec=name)
        assert obs.last_action_error, f"{text!r:.80} was no agent error"
        assert info.action_text == text and not terminated
        assert await fuzz_env.sandbox.health()


async def test_an_action_dict_with_an_unprintable_number_is_an_agent_error(fuzz_env):
    """Python will not print an int of more than 4300 digits; the error message must."""
    huge = int("f" * 5000, 16)
    obs, *_ = await fuzz_env.step({"type": "scroll", "x": 1, "y": 1, "dy": huge})
    assert "an integer of 20000 bits" in obs.last_action_error


@pytest.mark.parametrize("name", CODECS)
async def test_raw_lone_surrogates_in_model_text_are_replaced(fuzz_env, name):
    """UTF-8 cannot carry a lone surrogate, so no sink could store or print one: the env
    replaces them with U+FFFD before anything else sees the text."""
    text = get_codec(name).encode(TypeText(text="a\ufffdb"), size=VIEWPORT).replace("\ufffd", "\ud800")
    obs, *_, info = await fuzz_env.step(text, codec=name)
    assert "\ud800" not in info.action_text and "\ufffd" in info.action_text
    assert obs.last_action_error is None and info.action == {"type": "type_text", "text": "a\ufffdb"}
    info.model_dump_json()


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_no_model_output_raises_out_of_the_env(fuzz_env, name, data):
    text = data.draw(model_texts(name), label="text")
    assume(_is_fast(name, text))
    obs, _, terminated, truncated, info = await fuzz_env.step(text, codec=name)
    assert obs.screenshot and info.action_text == text
    info.model_dump_json()  # what every sink does with it
    assert await fuzz_env.sandbox.health(), f"the page stopped answering after {text!r:.200}"
    if terminated or truncated:
        await fuzz_env.reset(seed=0)


async def test_a_wait_or_a_long_text_is_no_step_timeout(provider, static_server):
    """The env's step limit grows by the time an action takes by design (duration_s): a
    valid wait longer than the limit, or a long text, is the agent's choice, not a timeout."""
    task = FuzzPageTask(static_server.url("fuzz.html"))
    sandbox = await provider.new_sandbox(task.sandbox_request)
    env = AsyncEnv(task, sandbox, step_timeout_s=0.5, max_steps=10)
    try:
        await env.reset(seed=0)
        obs, *_ = await env.step(Wait(seconds=0.8))
        assert obs.last_action_error is None
        await env.step(Click(x=10, y=10))
        obs, *_ = await env.step(TypeText(text="0123456789" * 12))
        assert obs.last_action_error is None
        assert len(await sandbox.evaluate("document.getElementById('field').value")) == 120
    finally:
        await env.close()
        await sandbox.close()
