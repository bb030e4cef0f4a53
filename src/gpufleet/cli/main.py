"""The `gpufleet` command: one Typer app; each command group lives in its own module."""

from __future__ import annotations

import importlib

import typer
from typer.core import TyperCommand, TyperGroup

import gpufleet.cli.common  # noqa: F401  (help text: Click-style type names, see common.py)

COMMAND_MODULES = ("simulate", "fragbench", "slurm", "topology", "node", "preflight", "k8s", "plan",
                   "explain", "sweep", "ray", "schema", "kueue", "serve")


class LazyCommandGroup(TyperGroup):
    """The root group: a command's module is imported when that command is asked for.

    Each top-level command lives in ``gpufleet.cli.<name>`` and attaches itself to `app` on import.
    Importing all of them up front cost about 4 s per call (scipy.stats, matplotlib, the Kubernetes
    analyser), paid by `gpufleet node diagnose` as much as by `gpufleet simulate`; now a command
    pays for its own imports only. `gpufleet --help` still imports every module (it shows each
    command's help line).
    """

    def list_commands(self, ctx: typer.Context) -> list[str]:
        return [name for name in COMMAND_MODULES if self.get_command(ctx, name) is not None]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> TyperCommand | TyperGroup | None:
        wanted = cmd_name not in self.commands and cmd_name in COMMAND_MODULES
        if wanted and _import_command_module(cmd_name):
            built = typer.main.get_command(app)
            if isinstance(built, TyperGroup) and cmd_name in built.commands:
                self.commands[cmd_name] = built.commands[cmd_name]
        return self.commands.get(cmd_name)


def _import_command_module(name: str) -> bool:
    """Import ``gpufleet.cli.<name>``; False when that module is absent (an optional part)."""
    try:
        importlib.import_module(f"gpufleet.cli.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"gpufleet.cli.{name}":
            raise
        return False
    return True


app = typer.Typer(
    name="gpufleet",
    cls=LazyCommandGroup,
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

