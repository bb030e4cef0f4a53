"""The Overview's and the Queues' figures are built once per published snapshot
(service/dashboard/cache.py): two browsers loading the same page, or a page and its live
fragment, share one computation; the next snapshot the loop publishes gets a fresh one.

The service tests' fleet and tenancy (tests/unit/service/conftest.py): tenants a and b in org.
"""

from __future__ import annotations

from .test_pages import sign_in, submit, text


def test_pages_and_fragments_of_one_snapshot_share_one_computation(served_tenancy) -> None:
    s = served_tenancy
    submit(s, "j1", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    d = s.client.app.state.dashboard
    for path in ("/", "/ui/overview", "/queues", "/ui/queues", "/", "/queues"):
        assert s.client.get(path).status_code == 200, path
    assert (d.derived.built, d.derived.hits) == (2, 4)     # overview and queues, once each

    submit(s, "j2", gpus=8, tenant="b")
    s.tick()                                               # a new snapshot: built again, once
    page = text(s.client.get("/queues").text)
    s.client.get("/ui/queues")
    assert d.derived.built == 3 and d.derived.hits == 5
    assert "b" in page and "1 job" in page


def test_a_snapshot_where_nothing_moved_keeps_the_queues_but_not_the_overview(served_tenancy) -> None:
    """A tick with nothing to do publishes the last picture with a new time (live/loop.py): the
    Overview says how long ago the last cycle was, so it is built again; the queues are not."""
    s = served_tenancy
    submit(s, "j1", gpus=8, replicas=2)
    s.tick()
    sign_in(s, s.viewer)
    d = s.client.app.state.dashboard
    s.client.get("/")
    s.client.get("/queues")
    before = s.svc.snapshot()
    s.tick(5.0)
    after = s.svc.snapshot()
    assert after is not before and after.pending is before.pending and after.now == before.now + 5.0
    s.client.get("/")
    s.client.get("/queues")
    assert (d.derived.built, d.derived.hits) == (3, 1)
