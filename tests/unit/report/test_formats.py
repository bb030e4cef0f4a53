"""The format reference is generated from the models, complete, and up to date."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.report.formats import SCHEMAS, markdown

DOC = Path(__file__).resolve().parents[3] / "docs" / "formats.md"
runner = CliRunner()


def test_docs_formats_md_is_what_the_generator_writes_today():
    assert DOC.read_text() == markdown(), "docs/formats.md is stale: run `python tools/gen_formats.py`"


def test_every_field_of_every_format_has_a_meaning_in_the_reference():
    rows = [line for line in markdown().splitlines() if line.startswith("| `")]
    assert len(rows) > 100
    undescribed = [r.split("|")[1].strip() for r in rows if r.rstrip(" |").endswith("—")]
    assert undescribed == []


def _properties(node, defs):
    if isinstance(node, dict):
        if "$ref" in node:
            yield from _properties(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
            return
        for name, prop in node.get("properties", {}).items():
            yield name, prop
            yield from _properties(prop, defs)
        for key in ("items", "additionalProperties"):
            yield from _properties(node.get(key), defs)
        for o in node.get("anyOf", []):
            yield from _properties(o, defs)


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_schema_prints_a_json_schema_with_a_description_on_every_property(name):
    res = runner.invoke(app, ["schema", name])
    assert res.exit_code == 0, res.output
    schema = json.loads(res.stdout)
    props = list(_properties(schema, schema.get("$defs", {})))
    assert props
    assert [n for n, p in props if "description" not in p] == []


def test_schema_of_an_unknown_format_is_one_line():
    res = runner.invoke(app, ["schema", "nope"])
    assert res.exit_code == 2 and "scenario, fleet, tenancy, trace" in res.output


def test_version_prints_the_package_version():
    from importlib.metadata import version
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0 and res.stdout.strip() == f"gpufleet {version('gpufleet')}"


@pytest.mark.parametrize("command", [["simulate", "--help"], ["fragbench", "--help"], ["schema", "--help"],
                                     ["topology", "explain", "--help"], ["--help"]])
def test_help_has_no_type_tags(command):
    res = runner.invoke(app, command)
    assert res.exit_code == 0
    assert "<bool>" not in res.output and "<str>" not in res.output and "<path>" not in res.output


def test_durations_in_one_row_share_the_hour_or_day_unit():
    """Largest 108,000 s = 30 h < 10 d, so hours: 84,600 s = 23.5 h, 108,000 s = 30.0 h; 186 s stays
    3.1 min; None is n/a. Largest 12 d ≥ 10 d, so days: 432,000 s = 5.0 d."""
    from gpufleet.report.fmt import durations
    assert durations([84600.0, 108000.0, 186.0, None]) == ["23.5 h", "30.0 h", "3.1 min", "n/a"]
    assert durations([432000.0, 12 * 86400.0]) == ["5.0 d", "12.0 d"]
