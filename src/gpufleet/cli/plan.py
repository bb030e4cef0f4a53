"""`gpufleet plan …`: planners a person runs, each with its arithmetic shown.

The group and what every planner shares live here: ``--inputs FILE`` (prices and hardware figures
merged over econ/defaults.yaml), ``--output text|json`` (the CLI's shared choice) and ``--out DIR``
(DIR/<name>.json and DIR/<name>.html, named in each planner's --help). Each planner is its own
module ``cli/plan_<name>.py`` that decorates a function with ``@plan_app.command("<name>")``;
adding a planner is one new module plus its name in ``PLAN_COMMANDS`` below.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from gpufleet.cli.common import Output, console, fail
from gpufleet.cli.main import app
from gpufleet.econ.inputs import EconInputs, load_inputs

plan_app = typer.Typer(name="plan", no_args_is_help=True,
                       help="Planners: capacity mix, cold starts, sandboxes, the serving floor, spare pools, "
                       "driver-upgrade waves.",
                       add_completion=False)
app.add_typer(plan_app, name="plan")

#: Planner modules, cli/plan_<name>.py; each registers its own `plan <name>` command.
PLAN_COMMANDS = ("capacity", "coldstart", "sandboxes", "serving", "spares", "upgrade")


InputsOpt = Annotated[Path | None, typer.Option(
    "--inputs", help="YAML of prices and figures to override (same shape as econ/defaults.yaml).")]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text (Rich tables, default) or json.")]
def out_dir_opt(name: str) -> Any:
    """The ``--out DIR`` option of planner ``name``, its help naming the two files it writes."""
    return Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", help=f"Write DIR/{name}.json (the figures) and DIR/{name}.html (the "
        "report with its plots); the directory is created if missing.")]


def inputs(path: Path | None) -> EconInputs:
    return load_inputs(path)


def emit(name: str, data: dict[str, Any], output: Output, out: Path | None,
         print_tables: Any, page: Any) -> None:
    """Print the planner's tables (or its JSON), and write plan.json + report.html under ``out``."""
    if output is Output.JSON:
        console.print_json(json.dumps(data, default=float))
    else:
        print_tables()
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{name}.json").write_text(json.dumps(data, indent=2, default=float))
            (out / f"{name}.html").write_text(page())
        except OSError as e:
            raise fail(f"{out}: cannot write ({e.strerror})") from None
        if output is Output.TEXT:
            console.print(f"wrote {out / (name + '.json')}, {out / (name + '.html')}")


def _register() -> None:
    for name in PLAN_COMMANDS:
        try:
            importlib.import_module(f"gpufleet.cli.plan_{name}")
        except ModuleNotFoundError as e:
            if e.name != f"gpufleet.cli.plan_{name}":
                raise


_register()
