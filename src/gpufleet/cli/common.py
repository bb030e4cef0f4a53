"""What every command shares: one-line errors with exit code 2, the consoles."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console

from gpufleet.model.errors import InputError

console = Console()
err_console = Console(stderr=True)

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str, code: int = 2) -> typer.Exit:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


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
