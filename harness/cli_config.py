"""Commands whose options come from a pydantic config model, and one-line CLI errors.

``config_command(Model, run)`` makes a typer command with one option per field of
``Model`` (``--field-name``, its description as help, its type as metavar), plus
``--config FILE.yaml`` (the same fields as YAML or JSON) and ``--set path.to.field=value``
for anything else (nested fields, lists, dicts). The file is read first, then ``--set``,
then the options given on the command line; the merged values are validated once, so a
bad value is reported with its field, what was expected and what arrived, every bad field
at once. Options reach pydantic as the text typed (pydantic converts them), which is what
lets the one validation report them all.

``cli_errors()`` turns a user's mistake (a ``ConfigError``, an unknown suite, task, site
or agent, a damaged store, a bad path) into one line on stderr and exit status 2; a
command checks its inputs before it writes anything, so a mistake leaves nothing behind.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import (
    Annotated,
    Literal,
    ParamSpec,
    Protocol,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
)

import typer
import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from fsm_sites.errors import FsmSiteError
from harness.errors import ConfigError, HarnessError

M = TypeVar("M", bound=BaseModel)


# ---- one-line errors -------------------------------------------------------------------------

def one_line(message: str) -> str:
    """``error: message`` on one line (newlines and runs of spaces become one space)."""
    return f"error: {' '.join(str(message).split())}"


def fail(message: str, code: int = 2) -> None:
    """Print ``error: message`` as one line on stderr and exit with ``code``."""
    typer.echo(one_line(message), err=True)
    raise typer.Exit(code=code)


@contextmanager
def cli_errors() -> Iterator[None]:
    """Report a user's mistake as one line (exit 2) instead of a traceback: a bad config
    value or name, a damaged store, an FSM site that does not exist or validate, a path
    that cannot be used (a file where a folder belongs, a place that cannot be written)."""
    try:
        yield
    except (ConfigError, HarnessError, FsmSiteError) as exc:
        fail(str(exc).splitlines()[0] if isinstance(exc, FsmSiteError) and len(str(exc)) > 300
             else str(exc))
    except OSError as exc:
        if exc.filename is None:  # e.g. a port in use
            fail(f"expected the system to allow this, got: {exc.strerror or exc}")
        fail(f"expected a usable path, got {exc.filename!r}: {exc.strerror or exc}")


P = ParamSpec("P")
R = TypeVar("R")


def guarded(command: Callable[P, R]) -> Callable[P, R]:
    """Run a CLI command under ``cli_errors``."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with cli_errors():
            return command(*args, **kwargs)

    return wrapper


def check_output_dir(path: Path, option: str) -> None:
    """Refuse an output folder that is a file, lies under a file, or cannot be written,
    before anything is written (nothing is left behind here)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{option}: expected a folder, got {path}, which is a file; pick another path")
    _check_writable_place(path, option)


def check_output_file(path: Path, option: str) -> None:
    """Refuse an output file that is a folder, lies under a file, or cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{option}: expected a file, got {path}, which is a folder; "
                          "pick a file name")
    _check_writable_place(path.parent, option, target=path)


def _check_writable_place(folder: Path, option: str, target: Path | None = None) -> None:
    target = target or folder
    probe = folder
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{option}: expected a folder there, got {target}, under the file "
                          f"{probe}; pick another path")
    # os.access is no test: root passes it everywhere, /proc and read-only mounts included.
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".cua-probe-", dir=probe))
    except OSError as exc:
        raise ConfigError(f"{option}: expected a writable place, got {target} ({probe}: "
                          f"{exc.strerror or exc}); pick another path") from None


@contextmanager
def removed_on_failure(*paths: Path) -> Iterator[None]:
    """Remove what a failing command created at ``paths`` (those that did not exist before
    it), so that a mistake found half-way (a store damaged deep inside) leaves nothing."""
    new = [_first_missing(Path(p)) for p in paths if not Path(p).exists()]
    try:
        yield
    except BaseException as exc:
        if not (isinstance(exc, typer.Exit) and exc.exit_code == 0):
            for path in new:
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                elif path.exists():
                    path.unlink()
        raise


def _first_missing(path: Path) -> Path:
    """The outermost folder of ``path`` that does not exist yet (what creating it makes)."""
    while not path.parent.exists() and path.parent != path:
        path = path.parent
    return path


# ---- configs from files, --set and options ----------------------------------------------------

def describe_errors(err: ValidationError, where: str = "", positional: tuple[str, ...] = ()) -> str:
    """Every error of a validation, each with its field (as a CLI option, or the argument
    it is given as), what was expected and what arrived."""
    parts = []
    for item in err.errors(include_url=False):
        loc = ".".join(str(p) for p in item["loc"])
        option = (f"the {loc.upper()} argument" if loc in positional
                  else f"--{loc.replace('_', '-')}" if loc and "." not in loc else f"--set {loc}")
        got = item.get("input")
        if item["type"] == "value_error":  # our own validators' messages say what arrived
            message = str(item.get("ctx", {}).get("error", item["msg"]))
            parts.append(f"{option} ({loc or 'config'}): {message}")
            continue
        got_text = "nothing" if item["type"] == "missing" else f"{got!r:.60}"
        parts.append(f"{option} ({loc or 'config'}): {item['msg'].lower()}, got {got_text}")
    prefix = f"{where}: " if where else ""
    return f"{prefix}{len(parts)} bad field(s): " + "; ".join(parts)


def read_config_file(path: Path) -> dict[str, object]:
    """A config file's fields (YAML or JSON); a clear error when it is not a mapping."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--config: expected a YAML or JSON file, got {path}, which does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--config: expected YAML or JSON in {path}, got: "
                          f"{' '.join(str(exc).split())}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config: expected a mapping of fields in {path}, got {type(data).__name__}")
    return data


def parse_sets(items: list[str] | None) -> dict[str, object]:
    """``["a.b=1", "c=x"]`` -> ``{"a": {"b": 1}, "c": "x"}`` (values read as YAML scalars)."""
    out: dict[str, object] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set: expected path.to.field=value, got {item!r}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError:
            value = raw
        node = out
        parts = key.strip().split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set: expected {part!r} to be a section, got a value in {item!r}")
            node = child
        node[parts[-1]] = value
    return out


def _merge(base: dict[str, object], extra: dict[str, object]) -> dict[str, object]:
    out = dict(base)
    for key, value in extra.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = _merge(current, value)
        else:
            out[key] = value
    return out


def load_config(model: type[M], *, file: Path | None = None, sets: list[str] | None = None,
                options: dict[str, object] | None = None, where: str = "",
                positional: tuple[str, ...] = ()) -> M:
    """The config from a file, ``--set`` values and CLI options (later ones win);
    ``positional`` fields are named in errors as the arguments they are on the command line."""
    data = read_config_file(file) if file is not None else {}
    data = _merge(data, parse_sets(sets))
    data = _merge(data, {k: v for k, v in (options or {}).items() if v is not None})
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_errors(exc, where or model.__name__, positional)) from None


def _cli_shape(annotation: object) -> tuple[str, list[str] | None] | None:
    """(metavar, choices) of a field a CLI option can carry, or None for one only a
    config file or --set can (lists, dicts, nested models)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        kinds = [a for a in get_args(annotation) if a is not type(None)]
        return _cli_shape(kinds[0]) if len(kinds) == 1 else None
    if origin is Literal:
        choices = [str(a) for a in get_args(annotation)]
        return "|".join(choices), choices
    if annotation in (int, float, str, bool) or annotation is Path:
        return {int: "INTEGER", float: "NUMBER", str: "TEXT", bool: "BOOL"}.get(annotation, "PATH"), None
    return None


def _is_bool(annotation: object) -> bool:
    args = [a for a in get_args(annotation) if a is not type(None)]
    return annotation is bool or args == [bool]


def _help_marker(field_name: str, info: FieldInfo) -> str:
    """Click's own markers, so config-derived and hand-written commands read alike:
    ``[required]``, ``[default: X]`` (none for a None default), ``[default: no-flag]``."""
    if info.is_required():
        return "  [required]"
    default = info.get_default(call_default_factory=True)
    if default is None:
        return ""
    if isinstance(default, bool):
        return f"  [default: {'' if default else 'no-'}{field_name.replace('_', '-')}]"
    return f"  [default: {default}]"


class ConfigCommand(Protocol):
    """A command function ``config_command`` makes: typer calls it with every option by name."""

    def __call__(self, **values: object) -> None: ...


def config_command(model: type[M], run: Callable[[M], None], *, name: str, doc: str,
                   positional: tuple[str, ...] = (), exclude: frozenset[str] = frozenset()
                   ) -> ConfigCommand:
    """A typer command function for ``model``: one option per field (see the module
    docstring), ``--config`` and ``--set``; it validates and calls ``run(config)``."""
    params: list[inspect.Parameter] = []
    fields: list[str] = []
    own = [f for f in getattr(model, "__annotations__", {}) if f in model.model_fields]
    ordered = own + [f for f in model.model_fields if f not in own]  # the command's own first
    for field_name in ordered:
        info = model.model_fields[field_name]
        if field_name in exclude:
            continue
        shape = _cli_shape(info.annotation)
        if shape is None:
            continue
        metavar, choices = shape
        help_text = (info.description or "") + _help_marker(field_name, info)
        if field_name in positional:
            param_info: object = typer.Argument(help=help_text, metavar=field_name.upper(),
                                             show_default=False)
            annotation: object = str | None
        elif _is_bool(info.annotation):
            flag = field_name.replace("_", "-")
            param_info = typer.Option(f"--{flag}/--no-{flag}", help=help_text, show_default=False)
            annotation = bool | None
        else:
            param_info = typer.Option(f"--{field_name.replace('_', '-')}", help=help_text,
                                      metavar=metavar, show_default=False)
            annotation = str | None
        params.append(inspect.Parameter(field_name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[annotation, param_info]))
        fields.append(field_name)
    params.append(inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Path | None, typer.Option("--config", help="a YAML/JSON file of these fields; "
                                  "options given here override it", show_default=False)]))
    params.append(inspect.Parameter("sets", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        list[str] | None, typer.Option("--set", help="path.to.field=value, for any field "
                                       "(nested ones too); repeatable", show_default=False)]))

    def command(**values: object) -> None:
        with cli_errors():
            # typer parses the two as they are annotated above
            file, sets = cast("Path | None", values.pop("config")), cast("list[str] | None", values.pop("sets"))
            config = load_config(model, file=file, sets=sets,
                                 options={f: values[f] for f in fields}, where=f"cua {name}",
                                 positional=positional)
            run(config)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = doc
    command.__name__ = name.replace(" ", "_")
    return command


def print_json(data: object) -> None:
    """One JSON line on stdout."""
    sys.stdout.write(json.dumps(data) + "\n")
