"""The `gpufleet` command: one Typer app; each command group lives in its own module."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="gpufleet",
    help="GPU-fleet scheduler: simulate policies, benchmark packing, talk to Slurm.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

@app.callback()
def _main() -> None:
    """GPU-fleet scheduler: simulate policies, benchmark packing, talk to Slurm."""


COMMAND_MODULES = ("simulate", "fragbench", "slurm", "topology", "kueue")


def _register() -> None:
    """Import command modules so they attach to `app`; each module owns one command or group."""
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"gpufleet.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"gpufleet.cli.{name}":
                raise


_register()
