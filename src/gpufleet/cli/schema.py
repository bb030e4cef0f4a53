"""`gpufleet schema NAME`: the JSON Schema of an input format (scenario, fleet, tenancy, trace).

The schema comes from the pydantic models that validate the files (report/formats.py), so an
editor or CI can check a file before gpufleet reads it; docs/formats.md is the same walk as prose.
"""

from __future__ import annotations

from typing import Annotated

import typer

from gpufleet.cli.common import emit_json, fail
from gpufleet.cli.main import app
from gpufleet.report.formats import SCHEMAS, json_schema


@app.command()
def schema(
    name: Annotated[str, typer.Argument(help=f"Format: {', '.join(SCHEMAS)}.")],
) -> None:
    """Print the JSON Schema of an input format (scenario, fleet, tenancy, trace)."""
    if name not in SCHEMAS:
        raise fail(f"schema: unknown format {name!r}; expected one of {', '.join(SCHEMAS)}")
    emit_json(json_schema(name))
