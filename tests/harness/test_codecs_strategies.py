"""Hypothesis strategies for actions, derived from the pydantic models' own constraints.

Walking ``model_fields`` (annotation + annotated_types metadata) instead of listing
actions by hand means a new action or field is fuzzed without touching this file, and
an annotation we do not know how to generate fails loudly.
"""

from __future__ import annotations

import typing

import annotated_types as at
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.actions import ACTION_TYPES, MODIFIER_KEYS, NAMED_KEYS, canonical_key, parse_action


def _bounds(metadata: list[object]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in metadata:
        if isinstance(item, at.Ge):
            out["min_value"] = item.ge
        elif isinstance(item, at.Le):
            out["max_value"] = item.le
        elif isinstance(item, at.MinLen):
            out["min_size"] = item.min_length
        elif isinstance(item, at.MaxLen):
            out["max_size"] = item.max_length
    return out


def _key_names() -> st.SearchStrategy[str]:
    single = st.characters(codec="utf-8").filter(lambda c: c.isprintable() and c != " ")
    return st.one_of(st.sampled_from(MODIFIER_KEYS + NAMED_KEYS), single).map(canonical_key)


def _for_annotation(annotation: object, bounds: dict[str, float]) -> st.SearchStrategy:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Annotated:  # validators only (e.g. Text)
        return _for_annotation(args[0], bounds)
    if annotation is int:
        return st.integers(**{k: int(v) for k, v in bounds.items() if k.endswith("value")})
    if annotation is float:
        return st.floats(allow_nan=False, allow_infinity=False,
                         **{k: v for k, v in bounds.items() if k.endswith("value")})
    if annotation is str:
        return st.text(min_size=int(bounds.get("min_size", 0)))
    if typing.get_origin(annotation) is tuple and args[-1] is Ellipsis:
        sizes = {k: int(v) for k, v in bounds.items() if k.endswith("size")}
        return st.lists(_key_names(), **sizes).map(tuple)
    if type(None) in args:  # Optional[X]
        inner = next(a for a in args if a is not type(None))
        return st.none() | _for_annotation(inner, bounds)
    raise NotImplementedError(f"no strategy for annotation {annotation!r}; extend codec_strategies")


def action_strategy(cls: type) -> st.SearchStrategy:
    fields = {
        name: _for_annotation(info.annotation, _bounds(info.metadata))
        for name, info in cls.model_fields.items()
        if name != "type"
    }
    return st.builds(cls, **fields)


actions = st.one_of([action_strategy(cls) for cls in ACTION_TYPES])


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_the_strategy_reaches_every_action_type_and_builds_valid_actions(data):
    for cls in ACTION_TYPES:
        action = data.draw(action_strategy(cls))
        assert type(action) is cls
        assert parse_action(action.model_dump()) == action  # valid under the model's own rules


def test_an_unknown_annotation_fails_loudly():
    with pytest.raises(NotImplementedError, match="no strategy"):
        _for_annotation(bytes, {})
