"""What every command shares: one-line errors with exit code 2, the consoles, output checks.

- ``one_line_errors``: bad input ends a command with one line (file, field, expectation), exit 2.
- ``check_out_dir``: ``--out`` is checked before any work (a file in the way, a read-only folder).
- ``finite``: a callback for float options that rejects NaN and ±Infinity (Python's ``float``
  parses "nan" and "inf", so Click accepts them).
- ``Output`` and ``emit_json``: ``--output json`` prints one strict JSON document on stdout.
- help text names value types as Click does (``PATH``, ``INTEGER``), never ``<str>``/``<bool>``;
  usage errors (unknown flag, out-of-range value) are one line, not a box.
"""

from __future__ import annotations

import contextlib
import functools
import math
import uuid
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from gpufleet.model.errors import InputError
from gpufleet.report.jsonsafe import dumps

console = Console()
err_console = Console(stderr=True)

P = ParamSpec("P")
R = TypeVar("R")


class Output(StrEnum):
    TEXT = "text"
    JSON = "json"


def fail(message: str, code: int = 2) -> typer.Exit:
    """The one error line. ``message`` is text, not Rich markup: an install hint such as
    ``pip install 'gpufleet[ray]'`` or a field path ``groups[0]`` keeps its brackets."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True, markup=True)
    return typer.Exit(code)


def warn(message: str) -> None:
    err_console.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def one_line_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Bad input ends the command with one line (file, field, expectation) and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (InputError, ValueError) as e:
            raise fail(str(e)) from None
        except OSError as e:  # e.g. --out naming a folder, or a read-only place: no traceback
            where = f"{e.filename}: " if e.filename else ""
            raise fail(f"{where}{e.strerror or e}") from None

    return wrapper


def check_out_dir(out: Path, option: str = "--out") -> None:
    """Make ``out`` (and its parents) and prove it writable, before a long run, not after it."""
    if out.exists() and not out.is_dir():
        raise fail(f"{option} {out}: is a file; expected a directory (it is created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".gpufleet-write-test-{uuid.uuid4().hex}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise fail(f"{option} {out}: cannot write there ({e.strerror or e})") from None


def finite(value: float | None) -> float | None:
    """Typer callback: NaN and ±Infinity are not numbers a user means."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"expected a finite number, got {value}")
    return value


def in_range(name: str, v: float, lo: float, hi: float) -> float:
    """``v`` when it is a finite number in [lo, hi]; else the one-line error naming ``name``."""
    if not math.isfinite(v) or not lo <= v <= hi:
        raise fail(f"{name}: expected a finite number in [{lo:g}, {hi:g}], got {v}")
    return v


def finite_positive(value: float | None) -> float | None:
    """Typer callback: a finite number above 0 (a divisor such as MFU)."""
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise typer.BadParameter(f"expected a finite number above 0, got {value}")
    return value


def working(what: str) -> Any:
    """A spinner on stderr naming ``what`` while a computation of several seconds runs (Rich's
    status). Only at a terminal: piped or redirected stderr gets nothing, so logs and ``-o json``
    stay clean."""
    if err_console.is_terminal:
        return err_console.status(f"{what} …")
    return contextlib.nullcontext()


def emit_json(obj: Any) -> None:
    """One strict JSON document (no NaN/Infinity) on stdout."""
    typer.echo(dumps(obj, indent=2))


def wide_console() -> Console:
    """The console tables print on: stdout at the terminal's width, or, when stdout is a pipe or a
    file, at ``$COLUMNS`` (80 when unset), as Rich sizes it. Tables fit that width by folding
    their cells (``Table`` below), so nothing is cut: the earlier 200-column console for pipes
    kept policy names whole but printed lines no 80-column reader or pager could show."""
    return console


class Table(RichTable):
    """A Rich table whose columns fold (wrap, inside words where needed) instead of ending in
    "…" when the console is narrower than the table: at 80 columns a policy name or a number
    goes onto two lines, whole."""

    def add_column(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(*args, **kwargs)


_LABELS = {"Path": "PATH", "int": "INTEGER", "float": "FLOAT", "str": "TEXT", "bool": None}


def _type_label(self: Any, ctx: Any) -> str | None:
    """Click-style type names for help (PATH, INTEGER, TEXT, [a|b]); nothing for on/off flags."""
    if getattr(self, "metavar", None) is not None:
        return self.metavar
    desc = self.type_descriptor
    if desc.is_choice:
        label: str | None = "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices or ()) + "]"
    else:
        ann = desc.annotation
        if desc.is_list:
            args = getattr(ann, "__args__", (str,))
            ann = args[0]
        name = getattr(ann, "__name__", str(ann))
        label = _LABELS.get(name, name.upper())
    if label is None:
        return None
    return label + ("..." if desc.is_list else "")


def _one_line_usage_error(self: Any) -> None:
    """A usage error (unknown flag, bad value) as one line on stderr, like every other bad input."""
    if self.__class__.__name__ == "NoArgsIsHelpError":
        return
    ctx = getattr(self, "ctx", None)
    where = ctx.command_path if ctx is not None else "gpufleet"
    message = " ".join(self.format_message().split())
    where = escape(where)
    err_console.print(f"[bold red]error:[/] {where}: {escape(message)} (see '{where} --help')",
                      highlight=False, soft_wrap=True, markup=True)


def plain_cli_style() -> None:
    """Replace Typer's ``<str>``/``<bool>`` tags in help with Click's names, and its boxed usage
    errors with one line (once, at import; Typer has no setting for either)."""
    from typer import core, rich_utils

    for cls in (core.TyperOption, core.TyperArgument):
        cls.display_type_rich = _type_label  # type: ignore[method-assign]
    rich_utils.rich_format_error = _one_line_usage_error  # type: ignore[assignment]


plain_cli_style()
