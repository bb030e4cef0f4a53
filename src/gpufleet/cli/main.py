"""The `gpufleet` command: one Typer app; each command group lives in its own module."""

from __future__ import annotations

import importlib

import typer

import gpufleet.cli.common  # noqa: F401  (help text: Click-style type names, see common.py)

app = typer.Typer(
    name="gpufleet",
    help="GPU-fleet scheduler: simulate policies, benchmark packing, talk to Slurm.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"gpufleet {version('gpufleet')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """GPU-fleet scheduler: simulate policies, benchmark packing, talk to Slurm."""


COMMAND_MODULES = ("simulate", "fragbench", "slurm", "topology", "node", "preflight", "k8s", "plan",
                   "explain", "sweep", "ray", "schema", "kueue")


def _register() -> None:
    """Import command modules so they attach to `app`; each module owns one command or group."""
    for name in COMMAND_MODULES:
        try:
            importlib.import_module(f"gpufleet.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"gpufleet.cli.{name}":
                raise


_register()
