"""The root command imports a command's module only when that command runs."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from gpufleet.cli.main import app
try:
    app({argv!r})
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("gpufleet.cli."))))
"""


def _cli_modules_after(argv: list[str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_running_one_command_leaves_the_other_command_modules_unimported() -> None:
    loaded = _cli_modules_after(["schema", "--help"])
    assert "gpufleet.cli.schema" in loaded
    assert not {"gpufleet.cli.simulate", "gpufleet.cli.k8s", "gpufleet.cli.plan"} & set(loaded)


def test_the_root_help_still_lists_every_command() -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.main import COMMAND_MODULES, app

    shown = CliRunner().invoke(app, ["--help"], terminal_width=200).output
    assert all(f" {name} " in shown for name in COMMAND_MODULES)


def test_an_unknown_command_is_one_line_and_exit_2() -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.main import app

    result = CliRunner().invoke(app, ["no-such-command"])
    assert result.exit_code == 2
    assert "No such command" in result.output
