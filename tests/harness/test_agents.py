"""Agents: the random agent's coverage and seeding, and the model-agent interface."""

from __future__ import annotations

from harness.actions import POINTER_ACTIONS, Drag
from harness.agents import Agent, AgentContext, ModelAgent, OracleAgent, RandomAgent
from harness.observation import Observation


def _obs(**kw) -> Observation:
    base = dict(screenshot=b"png", image_format="png", width=160, height=210,
                instruction="Click the button.", url="http://127.0.0.1/", step=0)
    return Observation(**{**base, **kw})


def test_random_agent_covers_the_action_space_inside_the_screenshot() -> None:
    agent = RandomAgent(seed=1)
    actions = [agent.sample(160, 210) for _ in range(2000)]
    kinds = {a.type for a in actions}
    assert kinds == {"click", "double_click", "right_click", "move", "drag", "scroll",
                     "type_text", "key", "wait"}
    for a in actions:
        if isinstance(a, POINTER_ACTIONS):
            assert 0 <= a.x < 160 and 0 <= a.y < 210
        if isinstance(a, Drag):
            assert 0 <= a.to_x < 160 and 0 <= a.to_y < 210


def test_random_agent_is_reproducible_per_seed() -> None:
    agent = RandomAgent()
    agent.reset(42)
    first = [agent.sample(100, 100) for _ in range(20)]
    agent.reset(42)
    assert [agent.sample(100, 100) for _ in range(20)] == first
    agent.reset(43)
    assert [agent.sample(100, 100) for _ in range(20)] != first


class CannedModel(ModelAgent):
    """A fake at the model seam: records what it was asked, answers with fixed text."""

    def __init__(self) -> None:
        super().__init__("json")
        self.calls: list = []

    async def generate(self, messages, images) -> str:
        self.calls.append((messages, images))
        return '{"type": "click", "x": 5, "y": 6}'


async def test_model_agent_builds_messages_and_returns_text() -> None:
    agent = CannedModel()
    obs = _obs(last_action_error="expected a point inside")
    ctx = AgentContext("miniwob:click-test", 0, 1, history=[(_obs(), Drag(x=1, y=2, to_x=3, to_y=4))])
    text = await agent.act(obs, ctx)
    assert agent.codec.decode(text, size=(160, 210)).x == 5
    messages, images = agent.calls[0]
    assert images == [b"png"] and messages[0]["role"] == "system"
    user_text = messages[1]["content"][1]["text"]
    assert "Click the button." in user_text and "expected a point inside" in user_text
    assert "drag" in user_text


def test_agents_satisfy_the_protocol() -> None:
    assert isinstance(RandomAgent(0), Agent) and isinstance(OracleAgent(), Agent)
    assert isinstance(CannedModel(), Agent)
