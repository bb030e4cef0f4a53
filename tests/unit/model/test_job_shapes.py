"""Shape keys are interned in a bounded table (model/job.py): a long-running service that gives
every job its own node filter must not grow it without bound, and forgetting a key must not
change which jobs are interchangeable."""

from __future__ import annotations

import pytest

from gpufleet.engine.queue import QueueView
from gpufleet.engine.types import PendingJob
from gpufleet.model import job as job_mod
from gpufleet.model.ids import JobId, TenantId
from gpufleet.model.job import Job, PodRequest, PodSet, interned_shapes


@pytest.fixture
def small_table(monkeypatch):
    """A fresh intern table of at most 8 keys (the module's limit is 16,384)."""
    monkeypatch.setattr(job_mod, "_SHAPES", {})
    monkeypatch.setattr(job_mod, "_OLDER", {})
    monkeypatch.setattr(job_mod, "SHAPE_INTERN_LIMIT", 8)


def filtered(name: str, node: int):
    """A 1-GPU job that may use only node ``n<node>``: its own shape key per filter."""
    return Job(JobId(name), TenantId("t1"), (PodSet("worker", 1, PodRequest(1)),), 0.0, 60.0,
               eligible_nodes=frozenset({f"n{node}"}))


def test_a_service_giving_every_job_its_own_node_filter_keeps_at_most_the_limit(small_table):
    """1,000 jobs with 1,000 distinct filters are 1,000 distinct keys; the table holds two
    generations of at most 8 // 2 = 4 keys: never more than 8. After 1,000 keys the young
    generation has just been emptied (1,000 is a multiple of 4) and the old one holds the last 4,
    which are still one object per shape."""
    made = []
    for i in range(1000):
        made.append(filtered(f"j{i}", i))
        assert interned_shapes() <= 8
    assert interned_shapes() == 4
    assert all(filtered(f"again{i}", i).shape_key is made[i].shape_key for i in range(996, 1000))


def test_equal_shapes_share_one_key_object_while_the_shape_is_in_use(small_table):
    """A shape asked for again is the most recently used: 20 other shapes later (more than the 8
    the table holds), a job of the first shape still gets the first job's key object, because
    every other job re-used it in between."""
    first = filtered("a0", 0)
    for i in range(20):
        filtered(f"b{i}", 100 + i)
        assert filtered(f"a{i + 1}", 0).shape_key is first.shape_key


def test_a_forgotten_shape_is_still_one_class_for_the_scheduler(small_table):
    """``old`` is built, then 8 other shapes push its key out of the table, then ``new`` (the same
    shape) gets a key object of its own. The queue's columns (what placement and backfill group
    by) still put both in one class; the other jobs each get their own: 1 + 8 = 9 classes for 10
    jobs."""
    old = filtered("old", 0)
    others = [filtered(f"o{i}", 1 + i) for i in range(8)]
    new = filtered("new", 0)
    assert new.shape_key == old.shape_key and new.shape_key is not old.shape_key
    view = QueueView.of([PendingJob(j) for j in (old, *others, new)])
    cls = view.cls
    assert len(view.classes) == 9
    assert cls[0] == cls[-1] and len(set(cls[1:-1].tolist())) == 8
