"""Optional abilities are declared Protocols that the code asks with ``isinstance``: an agent
with a codec, a task that can jump, a suite that checks its own names, a browser that reads
after actions or reports its address (and the isolated browser declares, not just forwards,
what its inner sandbox can)."""

from __future__ import annotations

from harness.agents import AgentContext, AgentStep, Completion, ModelAgent, RandomAgent
from harness.agents.base import CodecAgent, ElementsAgent, wants_elements
from harness.agents.scripted import ScriptedAgent
from harness.codecs.base import ActionCodec
from harness.observation import Observation
from harness.prompts import Prompt, PromptConfig
from harness.tasks.base import JumpableTask
from harness.tasks.fsm import FSMSuite, FSMTask
from harness.tasks.miniwob import MiniWoBSuite, MiniWoBTask
from harness.tasks.registry import CheckingSuite, ExpandingSuite
from sandboxes.base import ReadsAfterActions, ReportsAddress
from sandboxes.browser.sandbox import BrowserSandbox
from sandboxes.desktop.sandbox import DesktopSandbox
from sandboxes.isolated import IsolatedBrowser


class _Echo(ModelAgent):
    """A model agent whose model is a fake (the model seam)."""

    async def generate(self, prompt: Prompt[bytes]) -> Completion | str:
        return "x"


class _Plain:
    name = "plain"

    async def act(self, obs: Observation, ctx: AgentContext) -> AgentStep:
        raise AssertionError("not called")


def test_an_agent_with_a_codec_is_a_codec_agent_and_one_without_is_not() -> None:
    model = _Echo(PromptConfig(codec="qwen", observation="elements"))
    assert isinstance(model, CodecAgent) and isinstance(model.codec, ActionCodec)
    assert not isinstance(RandomAgent(), CodecAgent)
    # a scripted prefix hands over the codec of the agent after it, or none
    handed = ScriptedAgent([], then=model).codec
    assert isinstance(handed, ActionCodec) and handed.name == model.codec.name == "qwen"
    assert ScriptedAgent([], then=_Plain()).codec is None
    assert wants_elements(model) and not wants_elements(_Plain())
    assert isinstance(model, ElementsAgent) and not isinstance(_Plain(), ElementsAgent)


def test_tasks_and_suites_declare_what_they_can() -> None:
    assert isinstance(FSMTask.__new__(FSMTask), JumpableTask)
    assert not isinstance(MiniWoBTask.__new__(MiniWoBTask), JumpableTask)
    assert isinstance(FSMSuite(), CheckingSuite) and isinstance(FSMSuite(), ExpandingSuite)
    assert not isinstance(MiniWoBSuite(), CheckingSuite)
    assert not isinstance(MiniWoBSuite(), ExpandingSuite)


def test_browsers_declare_reads_after_actions_and_reported_addresses() -> None:
    # issubclass looks at the class: the isolated browser must define both itself, not
    # reach them through __getattr__ (which Python 3.12's isinstance no longer follows)
    for cls in (BrowserSandbox, IsolatedBrowser):
        assert issubclass(cls, ReadsAfterActions) and issubclass(cls, ReportsAddress)
    assert not issubclass(DesktopSandbox, ReadsAfterActions)
    assert not issubclass(DesktopSandbox, ReportsAddress)
