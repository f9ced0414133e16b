"""Per-episode site sessions: their state, their event log, their refusals (no I/O; the
server wraps this).

Each session owns its state: sibling rollouts of one task never share anything
mutable. Every accepted UI event is logged with its ``StepVerdict``, which
``fsm_sites.serving.verdict.judge_step`` computes; a malformed or stale event raises a
``SessionError`` (with an HTTP status) and changes nothing.

    FsmSiteError
    └── SessionError              (status: the HTTP status the server answers with)
        ├── UnknownSession        404: no session with that id
        ├── BadRequest            400: malformed body, unknown site/goal/state/element, wrong event kind
        ├── StaleEvent            409: the event came from a page or element the state no longer shows
        ├── Unauthorized          401: a control call without a token
        └── Forbidden             403: a control call whose token does not grant it

Every session has a capability ``token`` (apart from its id, which the page's URL shows):
it lets its holder read that session over the control API and nothing else.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fsm_sites.engine.machine import Machine, compile_site
from fsm_sites.engine.state import State, UIEvent
from fsm_sites.errors import FsmSiteError, SearchBudgetExceeded, UnknownGoal
from fsm_sites.serving.verdict import StepVerdict, judge_step
from fsm_sites.spec.site import EVENTS_BY_KIND, SiteSpec, table_events


class SessionError(FsmSiteError):
    """A refused request; ``status`` is the HTTP status to answer with."""

    status = 400


class UnknownSession(SessionError):
    status = 404


class BadRequest(SessionError):
    status = 400


class StaleEvent(SessionError):
    status = 409


class Unauthorized(SessionError):
    status = 401


class Forbidden(SessionError):
    status = 403


@dataclass(frozen=True)
class EventRecord:
    """One accepted UI event and the verdict it got."""

    seq: int
    event: UIEvent
    verdict: StepVerdict

    def to_dict(self) -> dict[str, Any]:
        ev = self.event
        return {"seq": self.seq,
                "event": {"page": ev.page, "element": ev.element, "event": ev.event, "value": ev.value},
                "verdict": self.verdict.model_dump()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EventRecord:
        """Inverse of ``to_dict`` (a record read back from the control API)."""
        ev = data["event"]
        return cls(int(data["seq"]), UIEvent(ev["page"], ev["element"], ev["event"], ev.get("value")),
                   StepVerdict.model_validate(data["verdict"]))


@dataclass
class SiteSession:
    """One episode on one site."""

    id: str
    site: str
    machine: Machine
    goal: str  # a goal id or an exact target state key, as given
    goal_fn: Callable[[State], bool]
    start: State
    seed: int
    state: State
    log: list[EventRecord] = field(default_factory=list)
    seq: int = 0  # events accepted so far; never reset, so readers can page with `since`
    # The capability to read this session over the control API; only the creator gets it
    # (never the page: the page's URL carries the id, which is not the token).
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)

    def distance(self, state: State) -> int | None:
        return self.machine.distance(state, self.goal_fn)

    def describe(self) -> dict[str, Any]:
        return {"session_id": self.id, "site": self.site, "goal": self.goal, "seed": self.seed,
                "start_state": self.start.key(), "state": self.state.key(), "page": self.state.page,
                "seq": self.seq, "distance": self.distance(self.state),
                "goal_reached": self.goal_fn(self.state)}


class SessionStore:
    """All sessions of a server, over a set of compiled sites."""

    def __init__(self) -> None:
        self.machines: dict[str, Machine] = {}
        self.sessions: dict[str, SiteSession] = {}

    def add_site(self, spec: SiteSpec) -> None:
        self.machines[spec.name] = compile_site(spec)

    def machine(self, site: str) -> Machine:
        if site not in self.machines:
            raise BadRequest(f"expected a site served here ({sorted(self.machines)}), got {site!r}")
        return self.machines[site]

    def get(self, session_id: str) -> SiteSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise UnknownSession(f"expected a live session id, got {session_id!r}; create one with POST /sessions")
        return session

    def create(self, site: str, *, goal: str, start_state: str | None = None, seed: int = 0) -> SiteSession:
        """A new session; ``start_state`` is a state key or the id of a start state the spec
        names, and ``goal`` a goal id, an ``expr:...`` condition or a state key. Without a
        ``start_state``, a named goal that names its own start begins there."""
        machine = self.machine(site)
        if start_state:
            start = self._reachable(machine, start_state, "start_state")
        else:
            start = machine.goal_start(goal) or machine.initial
        goal_fn = self._goal(machine, goal)
        session = SiteSession(secrets.token_urlsafe(12), site, machine, goal, goal_fn, start, int(seed), start)
        self.sessions[session.id] = session
        return session

    def delete(self, session_id: str) -> None:
        self.get(session_id)
        del self.sessions[session_id]

    def reset(self, session_id: str) -> SiteSession:
        session = self.get(session_id)
        session.state = session.start
        return session

    def jump(self, session_id: str, state_key: str) -> SiteSession:
        session = self.get(session_id)
        session.state = self._reachable(session.machine, state_key, "state")
        return session

    def events(self, session_id: str, since: int = 0) -> list[EventRecord]:
        return [r for r in self.get(session_id).log if r.seq > since]

    def apply(self, session_id: str, event: UIEvent) -> EventRecord:
        """Check ``event`` against the session's page, fire at most one transition, log the
        verdict (computed by ``fsm_sites.serving.verdict.judge_step``)."""
        session = self.get(session_id)
        self._check_event(session, event)
        after, verdict = judge_step(session.machine, session.state, event, session.goal_fn)
        if verdict.transition_fired:
            session.machine.mark_reachable(after)
        session.state = after
        session.seq += 1
        record = EventRecord(session.seq, event, verdict)
        session.log.append(record)
        return record

    def preview(self, session: SiteSession, event: UIEvent) -> State | None:
        """The state ``event`` would put ``session`` in, changing nothing; None when the
        event would be refused or fire no transition (what ``apply`` decides, without the log)."""
        try:
            self._check_event(session, event)
        except SessionError:
            return None
        fired = session.machine.step(session.state, event)
        return fired[1] if fired else None

    @staticmethod
    def _check_event(session: SiteSession, event: UIEvent) -> None:
        machine, state = session.machine, session.state
        if event.page != state.page:
            raise StaleEvent(f"expected an event from page {state.page!r}, got one from {event.page!r}; reload the page")
        page_id = state.page_id
        element = machine.elements.get((page_id, event.element))
        if element is None:
            known = [e.id for e in machine.pages[page_id].elements]
            raise BadRequest(f"expected an element of page {event.page!r} ({known}), got {event.element!r}")
        allowed = EVENTS_BY_KIND[element.kind] + table_events(element)
        if event.event not in allowed:
            raise BadRequest(
                f"expected event in {list(allowed)} for {element.kind} {element.id!r}, got {event.event!r}"
            )
        copy = event.value if element.repeat and event.event not in table_events(element) else None  # not a row
        if not machine.views.element_shown(state, page_id, element.id, copy):
            raise StaleEvent(f"element {element.id!r} is not shown in state {state.key()!r}; reload the page")

    @staticmethod
    def _reachable(machine: Machine, key: str, name: str) -> State:
        if any(s.id == key for s in machine.spec.starts):
            return machine.named_start(key)
        try:
            state = machine.complete(State.from_key(key))
            known = machine.is_reachable(state)
        except (ValueError, KeyError) as exc:
            raise BadRequest(f"expected {name} reachable from the start of {machine.spec.name!r} (a state key like "
                             f"'page{{\"var\":1}}' or a start state of {[s.id for s in machine.spec.starts]}), "
                             f"got {key!r}: {exc}") from exc
        except SearchBudgetExceeded as exc:
            raise BadRequest(f"expected {name} reachable from the start of {machine.spec.name!r}, got {key!r}, "
                             f"which could not be checked: {exc}") from exc
        if not known:
            raise BadRequest(f"expected {name} reachable from the start of {machine.spec.name!r}, got {key!r}")
        return state

    @staticmethod
    def _goal(machine: Machine, goal: str) -> Callable[[State], bool]:
        if any(g.id == goal for g in machine.spec.goals):
            return machine.goal_predicate(goal)
        if goal.startswith("expr:"):
            try:
                return machine.resolve_goal(goal)
            except UnknownGoal as exc:
                raise BadRequest(str(exc)) from exc
        try:
            target = machine.complete(State.from_key(goal))
            reachable = "{" in goal and machine.is_reachable(target)
        except (ValueError, KeyError, SearchBudgetExceeded):
            reachable = False
        if not reachable:
            ids = [g.id for g in machine.spec.goals]
            raise BadRequest(f"expected goal as a goal id of {machine.spec.name!r} ({ids}), an 'expr:...' "
                             f"condition or a reachable state key, got {goal!r}")
        return machine.state_goal(target)


def parse_event(payload: object) -> UIEvent:
    """A UI event from a decoded JSON body, or BadRequest naming the bad field."""
    if not isinstance(payload, dict):
        raise BadRequest(f"expected a JSON object {{page, element, event, value}}, got {type(payload).__name__}")
    extra = sorted(set(payload) - {"page", "element", "event", "value"})
    if extra:
        raise BadRequest(f"expected only fields page, element, event, value, got extra {extra}")
    for name in ("page", "element", "event"):
        if not isinstance(payload.get(name), str):
            raise BadRequest(f"expected field {name!r} to be a string, got {payload.get(name)!r}")
    value = payload.get("value")
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"expected field 'value' to be a string or null, got {value!r}")
    return UIEvent(payload["page"], payload["element"], payload["event"], value)


__all__ = ["BadRequest", "EventRecord", "Forbidden", "SiteSession", "SessionError", "SessionStore",
           "StaleEvent", "Unauthorized", "UnknownGoal", "UnknownSession", "parse_event"]
