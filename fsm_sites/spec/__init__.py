"""The spec language: the YAML/JSON site spec, value types, expressions, conditions,
effects, their type checks, and the typed model of a spec (``build_model``)."""
