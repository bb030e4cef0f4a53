"""``gpufleet serve`` and ``gpufleet serve token`` as a new user meets them (issue 24 §3): the help
says that no command starts the service, a wrong flag value names the flag, and a token command
pointed at a folder with no store says so instead of making an empty store there."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gpufleet.cli.main import app


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_serve_help_says_no_command_starts_the_service():
    r = _run("serve", "--help")
    assert r.exit_code == 0
    assert "gpufleet serve [OPTIONS] [COMMAND]" in r.output
    assert "With no command: start it" in " ".join(r.output.split())


@pytest.mark.parametrize("args, line", [
    (["--role", "bogus"], "--role 'bogus': expected viewer, member or admin"),
    (["--role", "member"], "--role member: needs --tenant, the tenant it acts for"),
    (["--role", "admin", "--tenant", "x"],
     "--tenant 'x': only a member token acts for one tenant (an admin token is for every tenant)"),
], ids=["an unknown role", "a member without a tenant", "an admin with a tenant"])
def test_a_wrong_token_create_names_the_flag_in_one_line(tmp_path, args, line):
    r = _run("serve", "token", "create", *args, "--data-dir", str(tmp_path / "d"))
    assert r.exit_code == 2
    assert line in " ".join(r.output.split())
    assert "Traceback" not in r.output


@pytest.mark.parametrize("args", [["list"], ["revoke", "0123456789abcdef"]], ids=["list", "revoke"])
def test_a_token_command_on_a_folder_without_a_store_says_so_and_creates_nothing(tmp_path, args):
    """``gpufleet-data`` is relative: run from another folder, ``token list`` printed nothing and
    made an empty store there (and ``token create`` made a token that server never reads)."""
    d = tmp_path / "elsewhere"
    r = _run("serve", "token", *args, "--data-dir", str(d))
    assert r.exit_code == 2
    assert f"--data-dir {d}: no store there" in " ".join(r.output.split())
    assert not d.exists()


def test_token_create_names_the_store_it_wrote_to(tmp_path):
    d = tmp_path / "d"
    r = _run("serve", "token", "create", "--role", "viewer", "--data-dir", str(d))
    assert r.exit_code == 0
    assert f"in a new store, {d / 'gpufleet.db'}" in " ".join(r.stderr.split())
    r = _run("serve", "token", "create", "--role", "viewer", "--data-dir", str(d))
    assert f"in sqlite:///{d / 'gpufleet.db'}" in " ".join(r.stderr.split())
    assert len(_run("serve", "token", "list", "--data-dir", str(d)).stdout.splitlines()) == 2


def test_token_list_names_its_columns_and_says_when_each_token_expires(tmp_path):
    """A token made with ``--expires-h 24`` expires 24 h after it was made (UTC, to the minute),
    one made without never does; the column names go to stderr, so stdout keeps a token a line
    (scripts read its first column for ``token revoke``)."""
    import time
    d = str(tmp_path / "d")
    _run("serve", "token", "create", "--role", "viewer", "--data-dir", d)
    before = time.time()
    _run("serve", "token", "create", "--role", "admin", "--expires-h", "24", "--data-dir", d)
    r = _run("serve", "token", "list", "--data-dir", d)
    assert r.exit_code == 0
    assert r.stderr.split()[:5] == ["ID", "ROLE", "TENANT", "STATE", "EXPIRES"]
    rows = {line.split()[1]: line for line in r.stdout.splitlines()}
    assert "never" in rows["viewer"].split()
    due = {time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) for t in (before + 86400, time.time() + 86400)}
    assert any(stamp in rows["admin"] for stamp in due)
