"""Whole-spec validation: the static model, behaviour by search, and goals proved
unreachable by bounds."""
