"""The type checker over every package (CI fails on a type error, as `make lint` does)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(600)
def test_mypy_is_clean() -> None:
    from mypy import api

    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                "--cache-dir", str(ROOT / ".mypy_cache")])
    assert status == 0, out + err
