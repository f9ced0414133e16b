"""Observation modes with elements, in real Chromium: the element list of FSM and MiniWoB
pages, the element action resolved to a pixel click, and the prompt in each mode."""

from __future__ import annotations

import pytest

from fsm_sites.serving.client import LocalSiteClient
from fsm_sites.serving.server import SiteServer
from fsm_sites.serving.verdict import StepVerdict
from harness.actions import Click, ClickElement, Done, TypeText
from harness.codecs import get_codec
from harness.env import AsyncEnv, resolve_element_action
from harness.observation import Observation
from harness.prompts import PromptBuilder, PromptConfig, as_element_action
from harness.tasks.fsm import FSMTask, goal_tasks
from harness.tasks.registry import make_task
from sandboxes.base import UIElement
from tests.fsm_sites.widgets_spec import tiny_shop, widgets_spec


@pytest.fixture(scope="module")
async def site_server():
    async with SiteServer([tiny_shop(), widgets_spec()]) as server:
        yield server


async def test_an_fsm_page_lists_its_live_elements_by_label(provider, site_server) -> None:
    task = goal_tasks(widgets_spec())[0]
    sandbox = await provider.new_browser()
    env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server)), sandbox, elements=True)
    try:
        obs, _ = await env.reset(seed=0)
        listed = {(e.role, e.label) for e in obs.elements}
        assert {("tab", "General"), ("tab", "Items"), ("checkbox", "Send me the newsletter"),
                ("textbox", "City"), ("combobox", "Size"), ("radio", "Light"), ("radio", "Dark"),
                ("link", "Help")} <= listed
        assert not any(e.role == "option" for e in obs.elements)  # the dropdown is closed
        obs, *_ = await env.step(ClickElement(element="size"))  # by id: opens the dropdown
        assert {e.label for e in obs.elements if e.role == "option"} == {"Small", "Medium", "Large"}
        obs, _, _, _, info = await env.step(ClickElement(element="large"))  # case ignored
        assert info.action["type"] == "click"
        assert info.requested == {"type": "click_element", "element": "large"}
        assert next(e for e in obs.elements if e.label == "Size").value == "Large"
        for e in obs.elements:
            assert 0 <= e.x < obs.width and 0 <= e.y < obs.height and e.width > 0
    finally:
        await env.close()
        await sandbox.close()


@pytest.mark.parametrize("task_id, expected", [
    ("miniwob:enter-text", {("textbox", ""), ("button", "Submit")}),
    # a text box named by the <label> just before it, not tied to it by for=
    ("miniwob:login-user", {("textbox", "Username"), ("textbox", "Password"), ("button", "Login")}),
    ("miniwob:click-link", None),
    ("miniwob:click-checkboxes", None),
])
async def test_miniwob_pages_list_elements_by_html_semantics(provider, task_id, expected) -> None:
    task = make_task(task_id)
    sandbox = await provider.new_sandbox(task.sandbox_request)
    env = AsyncEnv(task, sandbox, elements=True)
    try:
        obs, _ = await env.reset(seed=3)
        roles = {e.role for e in obs.elements}
        if expected is not None:
            assert expected <= {(e.role, e.label) for e in obs.elements}
        elif task_id.endswith("click-link"):  # spans a script made clickable (cursor: pointer)
            wanted = obs.instruction.split('"')[1]
            assert wanted in {e.label.rstrip(".,") for e in obs.elements}
        else:
            boxes = [e for e in obs.elements if e.role == "checkbox"]
            assert boxes and all(e.label for e in boxes) and "button" in roles
    finally:
        await env.close()
        await sandbox.close()


async def test_element_actions_solve_an_fsm_task_and_record_pixel_clicks(provider, site_server) -> None:
    """The oracle's clicks, named by element instead of point, reach the goal on the
    shortest path; the env records each as the click it executed."""
    task = next(t for t in goal_tasks(tiny_shop()) if t.goal == "lamp_in_cart")
    sandbox = await provider.new_browser()
    env = AsyncEnv(FSMTask(task, LocalSiteClient(site_server)), sandbox, elements=True)
    try:
        obs, _ = await env.reset(seed=2)
        bad = await env.step(ClickElement(element="Desk lampp"))
        assert "did you mean 'Desk lamp'" in bad[0].last_action_error and bad[4].action is None
        obs = bad[0]
        for _ in range(10):
            oracle = await env.oracle_action()
            if isinstance(oracle, Done):
                break
            action = as_element_action(oracle, obs.elements)
            assert isinstance(action, ClickElement | TypeText)
            obs, _, terminated, _, info = await env.step(action)
            assert info.verdict.on_shortest_path or not info.verdict.transition_fired
            if isinstance(action, ClickElement):
                assert info.action["type"] == "click" and info.requested["element"] == action.element
            if terminated:
                break
        assert info.success
    finally:
        await env.close()
        await sandbox.close()


def _element(label: str, x: int, role: str = "button", id_: str | None = None) -> UIElement:
    return UIElement(id=id_ or label.lower(), role=role, label=label, x=x, y=10, width=40, height=20)


def test_prompts_in_each_observation_mode() -> None:
    elements = (_element("Cart", 0), _element("Cart", 50, role="link", id_="nav_cart"),
                UIElement(id="q", role="textbox", label="Search", value="lamp", x=100, y=10,
                          width=60, height=20, enabled=False))
    history = [({"type": "click", "x": 60, "y": 15}, (200, 100), elements)]
    for mode, images in (("screenshot", 1), ("screenshot+elements", 1), ("elements", 0)):
        builder = PromptBuilder(PromptConfig(codec="json", observation=mode))
        prompt = builder.build(instruction="Open the cart.", history=history, images=[b"a", b"b"],
                               image_steps=[0, 1], error=None, elements=elements)
        content = prompt.messages[-1]["content"]
        assert [p["type"] for p in content] == ["image"] * images + ["text"]
        text = content[-1]["text"]
        if mode == "screenshot":
            assert "Elements:" not in text and '1. {"type": "click", "x": 60, "y": 15}' in text
        else:
            assert ('Elements:\n- button "Cart"\n- link "Cart #2"\n'
                    '- textbox "Search" = "lamp" (disabled)\n') in text
            # the click hit the second "Cart": named as the list shows it, so it resolves to that one
            assert '1. {"type": "click_element", "element": "Cart #2"}' in text
        system = prompt.messages[0]["content"][0]["text"]
        assert ("ClickElement" in system) == (mode != "screenshot")
        assert ("- Click: " in system) == (mode != "elements")


def test_the_transcript_opens_with_builds_prompt_and_feeds_back_each_step() -> None:
    elements = (_element("Cart", 0),)
    first = Observation(screenshot=b"png", image_format="png", width=200, height=100,
                        instruction="Open the cart.", step=0, elements=elements)
    after = first.model_copy(update={"step": 1, "last_action_error": "no element named 'Kart'"})
    verdict = StepVerdict(state_before="a", state_after="a", transition_fired=False,
                          on_shortest_path=False, distance_before=1, distance_after=1, goal_reached=False)
    for mode, images in (("screenshot", 1), ("screenshot+elements", 1), ("elements", 0)):
        builder = PromptBuilder(PromptConfig(codec="json", observation=mode))
        opening = builder.opening(first)
        assert opening == builder.build(instruction="Open the cart.", history=[], images=[first],
                                        image_steps=[0], error=None, elements=elements)
        [turn] = builder.feedback(after, verdict).messages
        assert turn["role"] == "user" and [p["type"] for p in turn["content"]] == ["image"] * images + ["text"]
        listed = '\nElements:\n- button "Cart"' if mode != "screenshot" else ""
        assert turn["content"][-1]["text"] == ("Last action error: no element named 'Kart'\n"
                                               f"Step verdict: nothing changed{listed}\nNext action:")
    [turn] = builder.feedback(first.model_copy(update={"step": 2}), over="goal reached").messages
    assert turn["content"] == [{"type": "text", "text": "Episode over: goal reached\nElements:\n"
                                '- button "Cart"'}]


def test_clicks_become_element_actions_only_on_an_element() -> None:
    elements = [_element("Big", 0), UIElement(id="s", role="button", label="Small", x=5, y=12,
                                               width=10, height=5)]
    assert as_element_action(Click(x=7, y=14), elements) == ClickElement(element="Small")
    assert as_element_action(Click(x=30, y=15), elements) == ClickElement(element="Big")
    assert as_element_action(Click(x=300, y=15), elements) == Click(x=300, y=15)
    assert as_element_action(TypeText(text="x"), elements) == TypeText(text="x")


def test_labels_that_differ_only_in_case_name_their_own_element() -> None:
    """MiniWoB's click-link lists "eget" before the "Eget" it asks for: the name as written
    resolves to its own element (any case only when none matches exactly), and a click on
    either is exported as the name that resolves back to it."""
    elements = (_element("eget", 0, id_="l1"), _element("Eget", 50, id_="l2"),
                _element("Cart", 100, id_="c1"), _element("Cart", 150, id_="c2"))
    obs = Observation(screenshot=b"", image_format="png", width=200, height=40,
                      instruction="Click on the link \"Eget\".", step=0, elements=elements)
    for element in elements:
        center = Click(x=element.x + 20, y=20)
        named = as_element_action(center, elements)
        assert resolve_element_action(named, obs) == (center, None)
    assert as_element_action(Click(x=70, y=20), elements) == ClickElement(element="Eget")
    assert resolve_element_action(ClickElement(element="EGET"), obs) == (Click(x=20, y=20), None)
    assert resolve_element_action(ClickElement(element="cart"), obs) == (Click(x=120, y=20), None)


def test_a_repeated_label_is_numbered_in_the_prompt_and_resolves_back() -> None:
    """A nav link and a card both labelled "Mailbox" that nothing visible tells apart: the
    prompt shows the second as "Mailbox #2", a click on it is exported as that name (never as
    an id the prompt does not show; an unlabelled element by its role), and the env resolves
    the name (any case) to the second element."""
    from harness.prompts import element_lines

    elements = (_element("Mailbox", 0, id_="nav_box"), _element("Inbox", 50, id_="go_inbox"),
                _element("Mailbox", 100, id_="go_box"), _element("", 150, id_="blank"))
    obs = Observation(screenshot=b"", image_format="png", width=200, height=40,
                      instruction="Open Mailbox.", step=0, elements=elements)
    assert '"Mailbox"' in element_lines(elements) and '"Mailbox #2"' in element_lines(elements)
    assert as_element_action(Click(x=120, y=20), elements) == ClickElement(element="Mailbox #2")
    assert as_element_action(Click(x=170, y=20), elements) == ClickElement(element="button")  # no label: its role
    assert resolve_element_action(ClickElement(element="blank"), obs) == (Click(x=170, y=20), None)  # ids still resolve
    assert resolve_element_action(ClickElement(element="mailbox #2"), obs) == (Click(x=120, y=20), None)
    assert resolve_element_action(ClickElement(element="Mailbox"), obs) == (Click(x=20, y=20), None)
    assert resolve_element_action(ClickElement(element="Mailbox #3"), obs)[1].startswith("expected an element")


def test_a_rows_action_names_its_row_and_a_repeated_label_its_place() -> None:
    """A mail list: each row's Archive names its row, the nav link "Inbox" beside the tab
    "Inbox" says it is in the navigation, and no name is numbered. Each name resolves back as
    written, without its quotes, or in any case; the label alone resolves where one element
    has it and is refused, with the names to choose from, where several do."""
    from harness.prompts import element_lines

    elements = (
        UIElement(id="nav_inbox", role="link", label="Inbox", section="navigation", x=0, y=0, width=40, height=20),
        _element("Inbox", 50, role="tab", id_="tab_inbox"),
        UIElement(id="to_archive", role="button", label="Archive", row="Lunch on Friday?", x=0, y=30, width=40,
                  height=20),
        UIElement(id="to_archive", role="button", label="Archive", row="Quarterly report", x=50, y=30, width=40,
                  height=20),
        UIElement(id="to_trash", role="button", label="Delete", row="Quarterly report", x=100, y=30, width=40,
                  height=20))
    assert element_lines(elements) == (
        '- link "Inbox" in navigation\n- tab "Inbox"\n- button "Archive" in row "Lunch on Friday?"\n'
        '- button "Archive" in row "Quarterly report"\n- button "Delete" in row "Quarterly report"')
    assert as_element_action(Click(x=60, y=40), elements) == ClickElement(element='Archive in row "Quarterly report"')
    obs = Observation(screenshot=b"", image_format="png", width=200, height=60,
                      instruction="Archive the quarterly report.", step=0, elements=elements)
    for name, point in (('Archive in row "Quarterly report"', (70, 40)), ('"Archive" in row "Lunch on Friday?"', (20, 40)),
                        ("archive in row quarterly report", (70, 40)), ("Inbox in navigation", (20, 10)),
                        ("Inbox", (70, 20)), ("Delete", (120, 40))):
        assert resolve_element_action(ClickElement(element=name), obs) == (Click(x=point[0], y=point[1]), None), name
    click, error = resolve_element_action(ClickElement(element="Archive"), obs)
    assert click is None and error.startswith("expected one element, got 2 labelled 'Archive'")
    assert 'Archive in row "Lunch on Friday?"' in error


def test_a_numbered_name_never_collides_with_a_literal_label() -> None:
    """Two "Item"s and one literally labelled "Item #2": the literal keeps its name, the
    second "Item" is shown as "Item #3", and each name resolves to its own element."""
    from harness.prompts import element_lines, shown_labels

    elements = (_element("Item", 0, id_="a"), _element("Item #2", 50, id_="lit"), _element("Item", 100, id_="b"),
                _element("Item", 150, id_="c"))
    assert shown_labels(elements) == ["Item", "Item #2", "Item #3", "Item #4"]
    assert '"Item #3"' in element_lines(elements)
    obs = Observation(screenshot=b"", image_format="png", width=200, height=40,
                      instruction="Open the item.", step=0, elements=elements)
    for name, x in (("Item", 20), ("Item #2", 70), ("item #3", 120), ("Item #4", 170)):
        assert resolve_element_action(ClickElement(element=name), obs) == (Click(x=x, y=20), None), name
    assert as_element_action(Click(x=120, y=20), elements) == ClickElement(element="Item #3")


def test_index_refs_number_the_list_name_targets_by_number_and_history_by_label() -> None:
    """``element_refs="index"`` (set-of-marks): the list numbers its lines, a target names
    its element's number, a line of history the label (its list is not shown), a number a
    model writes in either mode resolves to that line's element, and one past the list is
    the agent's error, with the range."""
    elements = (_element("Cart", 0), _element("Cart", 50, role="link", id_="nav_cart"), _element("3", 100))
    obs = Observation(screenshot=b"", image_format="png", width=200, height=40,
                      instruction="Open the cart.", step=0, elements=elements)
    builder = PromptBuilder(PromptConfig(codec="json", observation="elements", element_refs="index"))
    click = {"type": "click", "x": 60, "y": 15}
    prompt = builder.build(instruction="Open the cart.", history=[(click, (200, 40), elements)], images=[],
                           image_steps=[], error=None, elements=elements)
    text = prompt.messages[-1]["content"][-1]["text"]
    assert 'Elements:\n[1] button "Cart"\n[2] link "Cart #2"\n[3] button "3"\n' in text
    assert '1. {"type": "click_element", "element": "Cart #2"}' in text
    assert builder.action_text(click, (200, 40), elements) == '{"type": "click_element", "element": "[2]"}'
    assert builder.action_text(ClickElement(element="[3]"), (200, 40), elements) == (
        '{"type": "click_element", "element": "[3]"}')
    assert builder.action_text(ClickElement(element="Nope"), (200, 40), elements) == (
        '{"type": "click_element", "element": "Nope"}')  # a refused step's name stays as written
    labels = PromptBuilder(PromptConfig(codec="json", observation="elements"))
    assert labels.action_text(ClickElement(element="[2]"), (200, 40), elements) == (
        '{"type": "click_element", "element": "Cart #2"}')
    assert "[1]" not in labels.build(instruction="x", history=[], images=[], image_steps=[], error=None,
                                     elements=elements).messages[-1]["content"][-1]["text"]
    for name, x in (("[2]", 70), ("[1]", 20), ("3", 120), ('"[3]"', 120)):  # "3" is a label
        assert resolve_element_action(ClickElement(element=name), obs) == (Click(x=x, y=20), None), name
    click_at, error = resolve_element_action(ClickElement(element="[4]"), obs)
    assert click_at is None and error == "expected an element number from [1] to [3], got '[4]'"


@pytest.mark.parametrize("codec", ["json", "qwen", "uitars", "pyautogui"])
def test_every_codec_speaks_the_element_action(codec) -> None:
    chosen = get_codec(codec, action_space="pixels+elements")
    action = ClickElement(element='Ann\'s "cart"')
    assert chosen.decode(chosen.encode(action)) == action
    assert "ClickElement" in chosen.prompt() and "Click:" in chosen.prompt()


async def test_labels_are_the_text_as_written_whatever_the_css_case(provider) -> None:
    """A theme's upper-case buttons (Material) keep the label the spec wrote, as an
    accessible name does; the screen shows them in capitals."""
    sandbox = await provider.new_browser()
    try:
        await sandbox.reset("about:blank")
        await sandbox.evaluate(
            "document.body.innerHTML = '<button style=\"text-transform: uppercase\">Add to cart</button>"
            "<a href=\"#x\" style=\"text-transform: capitalize\">help center</a><button>Plain</button>'")
        labels = [(e.role, e.label) for e in await sandbox.elements()]
        shown = await sandbox.evaluate("document.querySelector('button').innerText")
    finally:
        await sandbox.close()
    assert shown == "ADD TO CART"  # the control: the page really shows capitals
    assert labels == [("button", "Add to cart"), ("link", "help center"), ("button", "Plain")]
