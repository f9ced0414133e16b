"""A missing extra is one MissingExtraError that names the extra to install."""

from __future__ import annotations

import pytest

from sandboxes.errors import ConfigError, MissingExtraError
from sandboxes.extras import EXTRAS, import_extra, require_extra


def test_a_missing_module_names_its_extra(monkeypatch) -> None:
    monkeypatch.setitem(EXTRAS, "desktop", ("mss", "no_such_module_cua"))
    with pytest.raises(MissingExtraError) as caught:
        require_extra("desktop", "the desktop sandbox")
    assert str(caught.value) == ("expected the `desktop` extra for the desktop sandbox, got no "
                                 "'no_such_module_cua' module; pip install 'cua-harness[desktop]'")
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, ImportError)
    with pytest.raises(MissingExtraError, match=r"cua-harness\[export\]"):
        import_extra("no_such_module_cua", "export", "Parquet exports")


def test_an_installed_extra_passes_and_imports() -> None:
    require_extra("desktop", "the desktop sandbox")  # .venv has every extra the tests need
    assert import_extra("json", "export", "anything").dumps(1) == "1"
