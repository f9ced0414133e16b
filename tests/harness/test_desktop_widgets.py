"""The widget kinds in the Tk app on real Xvfb: the oracle solves curated goals that need
them through the screen (a menu and an accordion are toggle buttons, a tooltip a label that
sends hover when the pointer enters it, a combobox an entry over its suggestions; a product
page's tabs, a message's reading-pane list and a month's days are buttons; a data table's
sort and pager are rows of buttons, a row's Flag one of its buttons), with the site's own verdicts."""

from __future__ import annotations

import pytest

from harness.actions import Move
from harness.agents.oracle import OracleAgent
from harness.env_providers import EnvOptions
from harness.rollout import rollout

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest.mark.parametrize("goal, steps", [("shop/account_signout", 2), ("bank/transfer_limit_tip", 2),
                                         ("travel/help_contact", 3), ("crm/newcontact", 7),
                                         ("shop/products_tab_reviews", 3), ("mail/box_pane", 4),
                                         ("calendar/open_tue", 2),
                                         ("bank/activity_top", 4), ("bank/activity_payee", 4),
                                         ("bank/activity_flag", 3)])
async def test_oracle_solves_widget_goals_in_tk(desktop_envs, goal, steps) -> None:
    env = await desktop_envs.open(f"desktop:tk/{goal}", EnvOptions())
    try:
        episode = await rollout(env, OracleAgent(), seed=1)
    finally:
        await desktop_envs.release(env)
    assert episode.success and episode.terminated, [(t.agent_step.action, t.info.message) for t in episode.transitions]
    fired = [t.info.verdict for t in episode.transitions if t.info.verdict and t.info.verdict.transition_fired]
    assert len(fired) == steps and all(v.on_shortest_path for v in fired)
    if goal.endswith("_tip"):
        assert isinstance(episode.transitions[-1].agent_step.action, Move)
