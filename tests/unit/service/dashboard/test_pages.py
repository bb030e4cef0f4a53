"""The dashboard's pages over a real service (real SQLite store, the loop ticked by hand).

The fleet is the service tests' (tests/unit/service/conftest.py): 2 leaves × 4 nodes × 8 H100s =
64 GPUs; tenants ``a`` (nominal 32) and ``b`` (16) in cohort ``org``.
"""

from __future__ import annotations

import html as html_lib
import re

import pytest

ORIGIN = {"Origin": "http://testserver"}


def token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def sign_in(s, headers: dict[str, str]) -> None:
    s.client.cookies.clear()
    r = s.client.get(f"/?token={token(headers)}", follow_redirects=False)
    assert r.status_code == 303


def submit(s, jid: str, gpus: int = 8, replicas: int = 1, tenant: str = "a") -> None:
    body = {"id": jid, "tenant": tenant, "run_time": 3600.0,
            "pod_sets": [{"replicas": replicas, "gpus": gpus}]}
    assert s.post_job(body).status_code == 201


def text(html: str) -> str:
    return html_lib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


def test_a_page_without_a_session_sends_the_browser_to_sign_in(served_tenancy) -> None:
    r = served_tenancy.client.get("/jobs?state=pending", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=%2Fjobs%3Fstate%3Dpending"


def test_a_token_link_sets_an_http_only_same_site_cookie_and_drops_the_token(served_tenancy) -> None:
    s = served_tenancy
    r = s.client.get(f"/queues?token={token(s.viewer)}&x=1", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/queues?x=1"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie
    assert s.client.get("/queues").status_code == 200


def test_a_refused_token_is_told_so_and_audited(served_tenancy) -> None:
    s = served_tenancy
    r = s.client.get("/?token=gf_nosuch_secret", follow_redirects=False)
    assert r.status_code == 401 and "That token was refused" in r.text
    refusals = [e for e in s.svc.store.audit_log(limit=50) if e["outcome"] == "refused"]
    assert any("(dashboard)" in e["target"] for e in refusals)


def test_the_login_form_signs_in_and_never_redirects_off_the_site(served_tenancy) -> None:
    s = served_tenancy
    r = s.client.post("/login", data={"token": token(s.viewer), "next": "//evil.example/x"},
                      headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"


def test_the_overview_puts_a_blocked_gang_on_the_first_screen(served_tenancy) -> None:
    """Tenant a (nominal 32 of a 64-GPU cohort) submits six 16-GPU gangs: the cohort's 48 GPUs
    it may use take three of them (48 = 3 × 16), the other three are refused by quota."""
    s = served_tenancy
    for i in range(6):
        submit(s, f"g{i}", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    page = text(s.client.get("/").text)
    assert "3 jobs blocked" in page
    assert "Biggest waiting gang" in page and "(16 GPUs, 2 pods, tenant a)" in page
    assert 'data-tone="ok"' not in s.client.get("/").text


def test_an_idle_fleet_says_nothing_is_waiting(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    sign_in(s, s.viewer)
    html = s.client.get("/").text
    assert 'data-tone="ok"' in html and "No job is waiting" in text(html)


def test_the_jobs_table_filters_sorts_and_pages_on_the_server(served_tenancy) -> None:
    """60 one-GPU jobs of tenant b and one 8-GPU job of tenant a: 61 jobs, 50 a page → 2 pages."""
    s = served_tenancy
    for i in range(60):
        submit(s, f"b{i:02d}", gpus=1, tenant="b")
    submit(s, "big", gpus=8, tenant="a")
    s.tick()
    sign_in(s, s.viewer)
    assert "61 jobs match; page 1 of 2" in text(s.client.get("/jobs").text)
    first = s.client.get("/jobs?sort=gpus&dir=desc").text
    rows = re.findall(r'<td><a href="/jobs/([^"]+)">', first)
    assert rows[0] == "big" and len(rows) == 50
    assert "1 job match" in text(s.client.get("/jobs?tenant=a").text)
    assert "10 jobs match" in text(s.client.get("/jobs?q=B0").text), "b00…b09, case-insensitive"
    assert "page 2 of 2" in text(s.client.get("/jobs?page=99").text)


def test_a_job_page_gives_the_engines_reason_chain_and_ranked_fixes(served_tenancy) -> None:
    s = served_tenancy
    for i in range(4):
        submit(s, f"g{i}", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    page = text(s.client.get("/jobs/g3").text)
    assert "Why it waits" in page and "nominal" in page
    assert "What would let it start sooner" in page and "raise tenant 'a'" in page
    assert s.client.get("/jobs/nope").status_code == 404


def test_a_viewer_sees_no_admin_controls_and_a_forged_drain_is_refused_and_audited(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    node = s.svc.snapshot().table.names[0]
    sign_in(s, s.viewer)
    assert "btn-drain" not in s.client.get(f"/nodes/{node}").text
    r = s.client.post(f"/nodes/{node}/drain", headers={**ORIGIN, "HX-Request": "true"})
    assert r.status_code == 403
    assert s.svc.store.node_states().get(node) is None
    audit = s.svc.store.audit_log(limit=50)
    assert any(e["action"] == "node.drain" and e["outcome"] == "refused" for e in audit)


def test_an_admin_drains_a_node_from_its_page(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    node = s.svc.snapshot().table.names[0]
    sign_in(s, s.admin)
    assert "btn-drain" in s.client.get(f"/nodes/{node}").text
    r = s.client.post(f"/nodes/{node}/drain", headers={**ORIGIN, "HX-Request": "true"})
    assert r.status_code == 200 and "drain done" in r.text
    assert s.svc.store.node_states()[node] == "drain"


def test_a_post_from_another_site_is_refused_even_with_the_cookie(served_tenancy) -> None:
    s = served_tenancy
    s.tick()
    node = s.svc.snapshot().table.names[0]
    sign_in(s, s.admin)
    r = s.client.post(f"/nodes/{node}/drain", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and node not in s.svc.store.node_states()


@pytest.mark.parametrize("path", ["/", "/queues", "/jobs", "/nodes", "/history", "/studies", "/ui/overview",
                                  "/ui/jobs", "/ui/nodes", "/ui/queues"])
def test_every_page_renders_for_a_member_with_its_team_first(served_tenancy, path: str) -> None:
    s = served_tenancy
    submit(s, "x", tenant="b")
    s.tick()
    sign_in(s, s.member_b)
    r = s.client.get(path)
    assert r.status_code == 200
    if path == "/queues":
        assert text(r.text).index("b your team") < text(r.text).index(" a ")


def test_a_what_if_puts_the_changed_answer_beside_todays(served_tenancy) -> None:
    """Four 16-GPU gangs of tenant a: three run (48 GPUs, what cohort org's nominals 32 + 16 allow),
    g3 is refused by quota. Today it starts when the first gang ends: its stated run is 3,600 s
    (seed 0), or 3,600 × U(0.5, 1) s on the jittered seeds, so its wait lies in [1,800, 3,600] s.
    With a's nominal at 64 the cohort holds 80 ≥ 64 GPUs, and the 16 free GPUs take g3 now: 0 s."""
    s = served_tenancy
    for i in range(4):
        submit(s, f"g{i}", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    assert 'id="whatif-form"' in s.client.get("/jobs/g3").text
    from gpufleet.service.dashboard.whatif_form import compare
    cmp = compare(s.svc, s.svc.snapshot(), "g3", {"nominal": "64"})
    assert cmp.changed.wait_median_s == 0
    assert cmp.today.started_in == 3 and 1800 <= cmp.today.wait_min_s <= cmp.today.wait_max_s <= 3600
    r = s.client.post("/jobs/g3/whatif", data={"nominal": "64"}, headers=ORIGIN)
    assert r.status_code == 200 and "waits 0 s" in text(r.text)


@pytest.mark.parametrize(("form", "starts"), [
    pytest.param({"pods": "nan"}, "pods: expected a whole number", id="NaN pods"),
    pytest.param({"gpus": "1e30"}, "gpus: expected a whole number", id="a huge GPU count"),
    pytest.param({"pods": "0"}, "pods: at least 1", id="zero pods"),
    pytest.param({"policy": "nope"}, "policy: expected one of", id="an unknown policy"),
    pytest.param({}, "change something", id="no change at all"),
])
def test_a_bad_what_if_gets_one_line_naming_the_field(served_tenancy, form: dict, starts: str) -> None:
    s = served_tenancy
    for i in range(4):
        submit(s, f"g{i}", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    r = s.client.post("/jobs/g3/whatif", data=form, headers=ORIGIN)
    assert r.status_code == 422
    assert f'id="whatif-error">{starts}' in r.text


def test_a_member_holds_its_own_job_but_gets_no_buttons_on_another_tenants(served_tenancy) -> None:
    s = served_tenancy
    for i in range(4):
        submit(s, f"g{i}", gpus=8, replicas=2)
    submit(s, "theirs", tenant="b")
    s.tick()
    sign_in(s, s.member_a)
    assert "btn-hold" in s.client.get("/jobs/g3").text
    assert "job-actions" not in s.client.get("/jobs/theirs").text
    r = s.client.post("/jobs/g3/hold", headers=ORIGIN, follow_redirects=False)
    assert r.status_code == 303 and s.svc.store.job("g3").state == "held"
    assert s.client.post("/jobs/theirs/cancel", headers=ORIGIN).status_code == 403
    assert s.svc.store.job("theirs").state != "cancelled"


def test_the_jobs_columns_are_built_again_only_when_the_world_changed(served_tenancy) -> None:
    """The loop publishes a snapshot every tick; the Jobs table's columns are rebuilt for a tick
    that changed something (here a submission, which makes a cycle), not for an idle one."""
    from gpufleet.service.dashboard.jobs_table import ColumnCache
    s = served_tenancy
    submit(s, "a1")
    submit(s, "big", replicas=16)       # 128 GPUs on a 64-GPU fleet: pending for good
    s.tick()
    cache = ColumnCache()
    first = cache.get(s.svc.snapshot())
    s.tick(1.0)                          # nothing happened: a new snapshot, the same world
    assert s.svc.snapshot() is not None and cache.get(s.svc.snapshot()) is first
    submit(s, "a2")
    s.tick(1.0)
    again = cache.get(s.svc.snapshot())
    assert again is not first and sorted(again.ids) == ["a1", "a2", "big"]


def test_the_text_search_finds_ids_and_tenants_once_per_row_and_never_across_them(served_tenancy) -> None:
    """Jobs a-1, a-2 (tenant a) and b-1 (tenant b): "a" is in a-1, a-2 (id and tenant: one row
    each); "b" is in b-1 only; "1" in a-1 and b-1; "1 a" or "1\\ta" spans id and tenant: nothing."""
    from gpufleet.service.dashboard.jobs_table import columns
    s = served_tenancy
    for jid, tenant in (("a-1", "a"), ("a-2", "a"), ("b-1", "b")):
        submit(s, jid, tenant=tenant)
    s.tick()
    cols = columns(s.svc.snapshot())

    def found(needle: str) -> list[str]:
        return sorted(str(cols.ids[i]) for i in cols.search(needle))
    assert found("A") == ["a-1", "a-2"]
    assert found("b") == ["b-1"]
    assert found("1") == ["a-1", "b-1"]
    assert found("1\ta") == found("1 a") == []
