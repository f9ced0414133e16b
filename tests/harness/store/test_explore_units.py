"""The pure parts of exploration: node scores, action labels, hindsight instructions."""

from __future__ import annotations

import math

from harness.actions import describe_action
from harness.store import NodeStatus, TrajectoryStore
from harness.store.explore import ExploreWeights, node_score
from harness.store.hindsight import hindsight_tasks, path_instruction
from harness.store.models import Node
from tests.harness.store.helpers import click, step, trajectory, verdict


def _node(visits: int, depth: int, verdict_: dict | None = None) -> Node:
    return Node(id=1, tree_id=1, parent_id=None, depth=depth, state_key="fsm:x", action=None,
                action_text="", obs_blob=None, url="", verdict=verdict_, step_reward=0.0,
                visits=visits, status=NodeStatus.UNEXPLORED, success=False, flags=(), width=0,
                height=0, created=0.0)


def test_node_score_matches_the_documented_formula():
    w = ExploreWeights()
    on_path = verdict("a", "b", True, 2, 1)
    score = node_score(_node(visits=3, depth=2, verdict_=on_path), children=1, success_below=True,
                       max_depth=8, weights=w)
    assert math.isclose(score, 1.0 / 2 + 0.5 / 2 + 0.3 * 2 / 8 + 0.3 + 0.5)
    fresh = node_score(_node(0, 1), 0, False, 8, w)
    worn = node_score(_node(9, 1), 3, False, 8, w)
    assert fresh > worn  # novelty and breadth both favour the unvisited node


def test_describe_action_labels():
    assert describe_action(click(12, 40)) == "click(12, 40)"
    assert describe_action({"type": "type_text", "text": "hi"}) == "type_text('hi')"
    assert describe_action({"type": "key", "keys": ["Control", "a"]}) == "key(ctrl+a)"
    assert describe_action({"type": "drag", "x": 1, "y": 2, "to_x": 3, "to_y": 4}) == "drag(1, 2, to=(3, 4))"


def test_hindsight_tasks_use_transition_phrases_and_skip_wasted_steps(tmp_path):
    store = TrajectoryStore(tmp_path)
    fired = dict(verdict("home", "cart", True, 2, 1), transition_id="open_cart")
    wasted = verdict("cart", "cart", False, 1, 1)
    checkout = dict(verdict("cart", "checkout", True, 1, 0), transition_id="checkout")
    t = trajectory([])
    steps = (step("cart", click(1, 1), verdict_=fired), step("cart", click(5, 5), verdict_=wasted),
             step("checkout", click(2, 2), verdict_=checkout))
    store.insert_trajectory(t.__class__(env=t.env, root=t.root, steps=steps))
    phrases = {"open_cart": "open the cart", "checkout": "go to checkout"}
    tasks = hindsight_tasks(store, 1, describe=phrases.get)
    assert [(x.goal_state, x.instruction) for x in tasks] == [
        ("cart", "Open the cart."), ("checkout", "Open the cart, then go to checkout.")]
    assert path_instruction(store.path_to(1)) == "Stay on the start page."


def test_hindsight_task_takes_the_instruction_of_a_shorter_path_found_later(tmp_path):
    store = TrajectoryStore(tmp_path)
    t = trajectory([])

    def fired(before: str, after: str, x: int, transition: str):
        return step(after, click(x, x), verdict_=dict(verdict(before, after, True, 2, 1),
                                                      transition_id=transition))

    store.insert_trajectory(t.__class__(env=t.env, root=t.root, steps=(
        fired("home", "a", 1, "go_a"), fired("a", "goal", 2, "a_to_goal"))))
    goal = {x.goal_state: x for x in hindsight_tasks(store, 1)}["goal"]
    assert goal.instruction == "Do go_a, then do a_to_goal."
    store.insert_trajectory(t.__class__(env=t.env, root=t.root, steps=(fired("home", "goal", 3, "direct"),)))
    assert {x.goal_state: x.instruction for x in hindsight_tasks(store, 1)}["goal"] == "Do direct."
    assert store.task(goal.id).instruction == "Do direct."


def test_wrong_element_steps_name_another_element_or_one_the_list_lacks_never_twice():
    import random

    from harness.codecs import get_codec
    from harness.env import resolve_element_action
    from harness.observation import Observation
    from harness.store.off_path import wrong_element_step
    from sandboxes.base import UIElement

    def element(i: int, label: str) -> UIElement:
        return UIElement(id=f"e{i}", role="button", label=label, x=10, y=40 * i, width=100, height=30)

    obs = Observation(screenshot=b"", image_format="png", width=400, height=300, instruction="",
                      step=0, elements=(element(0, "Add to cart"), element(1, "Home"), element(2, "Next")))
    codec, rng = get_codec("json", action_space="elements"), random.Random(0)
    taken: list[dict] = [click(20, 45)]  # an explored child clicked "Home" already
    names = []
    for _ in range(6):
        drawn = wrong_element_step(obs, rng, taken, codec)
        assert drawn is not None
        step_, action = drawn
        assert codec.decode(step_.text, size=(400, 300)) == action
        taken.append(action.model_dump())
        names.append(action.element)
    assert len(set(names)) == len(names) and "Home" not in names
    refused = [n for n in names if n not in ("Add to cart", "Next")]
    assert refused and all(resolve_element_action(type(action)(element=n), obs)[1] for n in refused)
    assert wrong_element_step(obs.model_copy(update={"elements": ()}), rng, taken, codec) is None
