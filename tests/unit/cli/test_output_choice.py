"""Every command that can print JSON spells the choice the same way: ``--output/-o text|json``."""

from __future__ import annotations

import typer

from gpufleet.cli.main import COMMAND_MODULES, app


def _commands(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs is None:
        yield path, cmd
        return
    for name in list(subs):
        yield from _commands(subs[name], (*path, name))


def _every_command():
    root = typer.main.get_command(app)
    ctx = typer.Context(root)
    for name in COMMAND_MODULES:
        cmd = root.get_command(ctx, name)
        if cmd is not None:
            yield from _commands(cmd, (name,))


def test_every_output_option_is_dash_o_with_text_and_json() -> None:
    seen = 0
    for path, cmd in _every_command():
        for param in cmd.params:
            if param.name != "output":
                continue
            seen += 1
            where = " ".join(path)
            spelled, _ = param.get_help_record(typer.Context(cmd))
            assert spelled == "-o, --output [text|json]", where
    assert seen >= 10, "the walk found too few --output options to mean anything"
