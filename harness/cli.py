"""The `cua` command line. Each area registers its own commands from its own module.

Packages that `harness` may not import (``trainers``, or a user's own) add commands through
an entry point in the group ``cua.commands`` whose value is ``module:register``; the
function takes the typer app, as the modules below do.
"""

from __future__ import annotations

import importlib
import sys
from importlib.metadata import PackageNotFoundError, entry_points, version

import typer

from harness.cli_config import cli_errors, one_line

app = typer.Typer(
    name="cua",
    help="Train and evaluate GUI/web computer-use agents with step-level verifiable rewards.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # click's plain help: rich's option tables cut long option names at 80 columns
    rich_markup_mode=None,
)

def _version(shown: bool) -> None:
    if shown:
        try:
            typer.echo(f"cua {version('cua-harness')}")
        except PackageNotFoundError:  # run from a checkout that pip never installed
            typer.echo("cua (cua-harness, not installed: run from a source checkout)")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                       help="Print the version and exit.")) -> None:
    """Train and evaluate GUI/web computer-use agents with step-level verifiable rewards."""


COMMAND_GROUP = "cua.commands"
# Each module exposes `register(app: typer.Typer) -> None`.
COMMAND_MODULES = (
    "harness.evaluation.cli",  # cua eval
    "fsm_sites.cli",  # cua sites ...
    "harness.sites_gallery",  # cua sites gallery (it needs a browser, so it lives in harness)
    "harness.fsm_tasks_cli",  # cua tasks ...
    "harness.store.cli",  # cua store ..., cua view, cua collect
    "harness.demo",  # cua demo
    "harness.server.cli",  # cua env-server
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)
for _entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
    _entry.load()(app)


def main() -> None:
    """Run ``cua``. A user's mistake in any command (a bad option, name, path or store) is
    one line on stderr, ``error: ...``, and a non-zero exit: never a traceback or a box."""
    try:
        with cli_errors():
            code = app(standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        typer.echo("Aborted.", err=True)
        code = 1
    except typer.TyperException as exc:  # click's usage errors, as typer vendors them
        code = exc.exit_code
        if type(exc).__name__ == "NoArgsIsHelpError":  # its message is the help
            typer.echo(exc.format_message())
        else:
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "cua"
            typer.echo(one_line(f"{exc.format_message()}; see {where} --help"), err=True)
    sys.exit(code if isinstance(code, int) else 0)

if __name__ == "__main__":
    main()
