"""Token administration is audited like every other mutation (issue 24 §4): ``gpufleet serve token
create`` and ``revoke`` each write one row (who: ``cli``; what; before and after, never the
secret nor its hash), ``token list`` none; the rows are in ``GET /api/v1/audit`` as they are."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpufleet.cli.main import app

from .conftest import serve

#: What a token's audit view holds: its row without ``secret_hash``.
VIEW = {"id", "role", "tenant", "name", "created_at", "expires_at", "revoked_at"}


def _cli(*args: str):
    return CliRunner().invoke(app, ["serve", "token", *args])


def test_cli_create_and_revoke_are_audited_without_the_secret_and_list_is_not(tmp_path):
    """Create a member token of tenant a named ci, list, revoke it, revoke it again (refused:
    nothing changes, no row). Then a service on the same store (its own four setup tokens are
    the service's: actor ``system``) shows exactly two ``cli`` rows: the create (before None,
    after the token) and the revoke (before: not revoked; after: revoked at a time)."""
    d = str(tmp_path / "data")
    made = _cli("create", "--role", "member", "--tenant", "a", "--name", "ci", "--data-dir", d)
    assert made.exit_code == 0, made.output
    token = made.stdout.strip().splitlines()[-1]
    tid, secret = token.removeprefix("gf_").split("_", 1)
    assert _cli("list", "--data-dir", d).exit_code == 0
    assert _cli("revoke", tid, "--data-dir", d).exit_code == 0
    again = _cli("revoke", tid, "--data-dir", d)
    assert again.exit_code == 2 and "no such active token" in again.output

    s = serve(tmp_path / "data")
    with s.client:
        page = s.client.get("/api/v1/audit", params={"actor": "cli"}, headers=s.admin).json()
        everyone = s.client.get("/api/v1/audit", headers=s.admin).json()["entries"]
    s.svc.store.close()
    create, revoke = page["entries"]
    assert page["next"] is None
    assert (create["actor"], create["role"], create["action"], create["target"], create["outcome"]) == \
        ("cli", "admin", "token.create", tid, "ok")
    assert create["detail"].startswith("command line")
    assert create["before"] is None
    assert set(create["after"]) == VIEW
    after = create["after"]
    assert (after["role"], after["tenant"], after["name"]) == ("member", "a", "ci")
    assert create["after"]["revoked_at"] is None
    assert (revoke["action"], revoke["target"], revoke["outcome"]) == ("token.revoke", tid, "ok")
    assert revoke["before"] == create["after"]
    assert revoke["after"] == {**create["after"], "revoked_at": revoke["after"]["revoked_at"]}
    assert revoke["after"]["revoked_at"] >= create["after"]["created_at"]
    assert secret not in json.dumps(everyone) and "secret_hash" not in json.dumps(everyone)
    assert set(create) == set(everyone[-1])  # the entry's shape is every entry's
    assert [e["action"] for e in everyone if e["actor"] == "system"] == ["token.create"] * 4
