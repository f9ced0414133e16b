"""`cua`'s help and listings as a user meets them in an 80-column terminal: every option
of every command named whole with one style of default and required markers, `cua --version`,
`cua tasks list`, the `sites` group."""

from __future__ import annotations

import re

import click
import typer
from typer.testing import CliRunner

from harness.cli import app


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


def test_every_option_is_named_whole_in_help_at_80_columns() -> None:
    runner = CliRunner()
    for path, command in _commands(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        assert max(len(line) for line in result.output.splitlines()) <= 80, path
        shown = set(re.findall(r"^ {2}(--[a-z0-9-]+)", result.output, flags=re.MULTILINE))
        options = {o for p in command.params if isinstance(p, click.Option) for o in p.opts if o.startswith("--")}
        assert options <= shown, (path, options - shown)
        # one style of markers, click's, in every command (config-derived ones included)
        flat = " ".join(result.output.split())
        assert "(default:" not in flat and "(required)" not in flat and "default: None" not in flat, path


def test_version_tasks_list_and_the_sites_group() -> None:
    runner = CliRunner()
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and re.fullmatch(r"cua \d+\.\d+\.\d+\S*\n", version.output)
    listed = runner.invoke(app, ["tasks", "list", "miniwob:click-test,click-button+fsm:shop/open_mug"])
    assert listed.exit_code == 0
    assert listed.output.splitlines() == ["miniwob:click-test", "miniwob:click-button", "fsm:shop/open_mug"]
    sites = runner.invoke(app, ["sites", "--help"], env={"COLUMNS": "80"})
    assert "gallery" in sites.output.split("Commands:")[0]  # in the group's line, not only below
    assert re.search(r"^ {2}gallery ", sites.output, flags=re.MULTILINE)
