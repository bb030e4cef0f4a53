"""Dashboard sessions live in the store: the cookie is a random id, not the API token."""

from __future__ import annotations

import time

from tests.unit.service.session_upgrade import check_session_upgrade
from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.service.dashboard.session import COOKIE, MAX_AGE_S
from gpufleet.service.store.schema import sessions, tokens

from .test_pages import ORIGIN, token


def signed_in(s, tok: str) -> str:
    s.client.cookies.clear()
    assert s.client.post("/login", data={"token": tok}, headers=ORIGIN,
                         follow_redirects=False).status_code == 303
    return s.client.cookies[COOKIE]


def test_the_cookie_is_not_the_token_and_is_no_bearer_token(served_tenancy) -> None:
    s = served_tenancy
    sid = signed_in(s, token(s.viewer))
    assert token(s.viewer) not in sid
    assert s.client.get("/queues").status_code == 200
    r = s.client.get("/api/v1/summary", headers={"Authorization": f"Bearer {sid}"})
    assert r.status_code == 401
    assert [e["action"] for e in s.svc.store.audit_log(limit=100)].count("session.sign_in") == 1


def test_after_sign_out_the_old_cookie_is_refused(served_tenancy) -> None:
    s = served_tenancy
    sid = signed_in(s, token(s.viewer))
    r = s.client.post("/logout", headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    s.client.cookies.set(COOKIE, sid)
    r = s.client.get("/queues", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    assert "session.sign_out" in [e["action"] for e in s.svc.store.audit_log(limit=100)]


def test_a_get_or_a_cross_site_post_to_logout_signs_no_one_out(served_tenancy) -> None:
    """An old link or bookmark (GET /logout) lands on the sign-in page, which says who is still
    signed in and offers the button; another site's form (no Origin of ours) is refused. The
    session works after both, and no sign-out is audited."""
    s = served_tenancy
    signed_in(s, token(s.viewer))
    r = s.client.get("/logout", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    page = s.client.get("/login").text
    assert "Signed in as viewer" in page and 'action="/logout"' in page
    cross = s.client.post("/logout", headers={"Origin": "https://elsewhere.example"}, follow_redirects=False)
    assert cross.status_code == 403
    assert s.client.get("/queues").status_code == 200
    assert "session.sign_out" not in [e["action"] for e in s.svc.store.audit_log(limit=100)]


def test_every_page_signs_out_with_a_post_form_not_a_link(served_tenancy) -> None:
    s = served_tenancy
    signed_in(s, token(s.viewer))
    page = s.client.get("/queues").text
    assert '<form method="post" action="/logout"' in page and 'href="/logout"' not in page


def test_revoking_the_token_signs_the_session_out(served_tenancy) -> None:
    s = served_tenancy
    tok, rec = s.svc.auth.create("viewer")
    signed_in(s, tok)
    assert s.client.get("/queues").status_code == 200
    s.svc.auth.revoke(rec.id)
    assert s.client.get("/queues", follow_redirects=False).status_code == 303


def test_revoking_with_the_cli_deletes_the_tokens_sessions_and_no_others(served_tenancy) -> None:
    """`gpufleet serve token revoke` (another process in real life: it shares only the store)
    deletes the token's two sessions in the revoking transaction; the viewer's stays."""
    s = served_tenancy
    tok, rec = s.svc.auth.create("viewer")
    signed_in(s, tok)
    sid = signed_in(s, tok)
    signed_in(s, token(s.viewer))
    assert sorted(t for t, _ in _rows(s)) == sorted([rec.id, rec.id, _id(token(s.viewer))])
    r = CliRunner().invoke(app, ["serve", "token", "revoke", rec.id, "--data-dir", str(s.data_dir)])
    assert r.exit_code == 0, r.output
    assert [t for t, _ in _rows(s)] == [_id(token(s.viewer))]
    s.client.cookies.set(COOKIE, sid)
    assert s.client.get("/queues", follow_redirects=False).status_code == 303


def test_a_session_row_left_behind_by_a_revoked_token_is_refused(served_tenancy) -> None:
    """A token revoked by a writer that does not delete sessions (an older replica, a hand-run
    UPDATE): its row remains, and the session is refused by the token's own rule."""
    s = served_tenancy
    tok, rec = s.svc.auth.create("viewer")
    signed_in(s, tok)
    with s.svc.store.writing() as c:
        c.execute(tokens.update().where(tokens.c.id == rec.id).values(revoked_at=time.time()))
    assert [t for t, _ in _rows(s)] == [rec.id]
    assert s.client.get("/queues", follow_redirects=False).status_code == 303


def test_opening_a_session_sweeps_the_expired_ones(served_tenancy) -> None:
    """Three sessions, two made expired by hand: the next sign-in deletes those two, so the table
    holds the live one and the new one (not every sign-in of the last week and before)."""
    s = served_tenancy
    for _ in range(3):
        signed_in(s, token(s.viewer))
    with s.svc.store.engine.connect() as c:
        first = [r.id_hash for r in c.execute(sessions.select().limit(2))]
    with s.svc.store.writing() as c:
        c.execute(sessions.update().where(sessions.c.id_hash.in_(first)).values(expires_at=time.time() - 1))
    signed_in(s, token(s.viewer))
    rows = _rows(s)
    assert len(rows) == 2 and all(e > time.time() for _, e in rows)


def test_a_session_ends_with_its_token_or_max_age_and_is_then_refused(served_tenancy) -> None:
    """A token with 60 s left gives a session that ends within those 60 s (not MAX_AGE_S); a
    session whose expiry has passed is refused though its token is still valid."""
    s = served_tenancy
    tok, rec = s.svc.auth.create("viewer", expires_in_s=60)
    signed_in(s, tok)
    (row,) = [r for r in _rows(s) if r[0] == rec.id]
    assert row[1] <= rec.expires_at < time.time() + MAX_AGE_S
    sid = signed_in(s, token(s.viewer))
    with s.svc.store.writing() as c:
        c.execute(sessions.update().values(expires_at=time.time() - 1))
    s.client.cookies.set(COOKIE, sid)
    assert s.client.get("/queues", follow_redirects=False).status_code == 303


def test_a_store_made_before_sessions_upgrades_and_its_token_signs_in(tmp_path) -> None:
    check_session_upgrade(f"sqlite:///{tmp_path / 'old.db'}", tmp_path / "data")


def _id(tok: str) -> str:
    return tok.removeprefix("gf_").split("_", 1)[0]


def _rows(s) -> list[tuple[str, float]]:
    with s.svc.store.engine.connect() as c:
        return [(r.token_id, r.expires_at) for r in c.execute(sessions.select())]
