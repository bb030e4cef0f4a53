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
    # the Overview's counts and words, and the queues: once each for this snapshot
    assert d.derived.built == {"overview-facts": 1, "overview": 1, "queues": 1}
    assert d.derived.hits == {"overview-facts": 2, "overview": 2, "queues": 2}

    submit(s, "j2", gpus=8, tenant="b")
    s.tick()                                               # a new snapshot: built again, once
    page = text(s.client.get("/queues").text)
    s.client.get("/ui/queues")
    assert d.derived.built["queues"] == 2 and d.derived.hits["queues"] == 3
    assert "b" in page and "1 job" in page


def test_a_snapshot_where_nothing_moved_keeps_the_counts_but_not_the_overviews_words(served_tenancy) -> None:
    """A tick with nothing to do publishes the last picture with a new time (live/loop.py): the
    Overview says how long ago the last cycle was, so its words are built again, from the counts
    over the queue kept from before; the queues are kept too."""
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
    page = text(s.client.get("/").text)
    s.client.get("/queues")
    assert d.derived.built == {"overview-facts": 1, "overview": 2, "queues": 1}
    assert d.derived.hits == {"overview-facts": 1, "queues": 1}
    assert "5 s ago" in page, page
