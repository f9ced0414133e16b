"""Locating Chromium."""

from __future__ import annotations

import pytest

from sandboxes.browser.chromium import CHROMIUM_ENV_VAR, find_chromium
from sandboxes.errors import SandboxStartError


def test_env_var_overrides(monkeypatch, tmp_path):
    fake = tmp_path / "my-chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv(CHROMIUM_ENV_VAR, str(fake))
    assert find_chromium() == str(fake)


def test_env_var_pointing_nowhere_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv(CHROMIUM_ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(SandboxStartError, match=CHROMIUM_ENV_VAR):
        find_chromium()


def test_nothing_found_says_what_to_install(monkeypatch):
    monkeypatch.delenv(CHROMIUM_ENV_VAR, raising=False)
    monkeypatch.setattr("sandboxes.browser.chromium.CHROMIUM_CANDIDATES", ("definitely-not-a-browser",))
    with pytest.raises(SandboxStartError, match="apt-get install chromium"):
        find_chromium()


def test_finds_system_chromium(monkeypatch):
    monkeypatch.delenv(CHROMIUM_ENV_VAR, raising=False)
    assert "chrom" in find_chromium()
