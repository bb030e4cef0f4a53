"""The usage tracker credits a run to its Kueue LocalQueue too (admission fair sharing's history)."""

from dataclasses import replace

import pytest

from gpufleet.sim.usage import UsageTracker
from gpufleet.testing.builders import job


def test_a_run_is_credited_to_its_tenant_and_to_its_local_queue_decaying_with_the_half_life():
    """Half-life 3,600 s. A 4-GPU run of tenant shared, LocalQueue lq-a, held 1,800 s, ends at
    t = 1,800: both shared and lq:lq-a get 4 × 1,800 = 7,200 GPU-s. One half-life later each is
    worth 3,600; a job without the label credits its tenant only."""
    tr = UsageTracker(3600.0)
    j = replace(job("x").tenant("shared").gpus(4).build(), labels=(("kueue.x-k8s.io/queue-name", "lq-a"),))
    tr.add_job(j, 4 * 1800.0, 1800.0)
    tr.add_job(job("y").tenant("other").gpus(1).build(), 100.0, 1800.0)
    snap = tr.snapshot(1800.0 + 3600.0)
    assert snap["shared"] == pytest.approx(3600.0)
    assert snap["lq:lq-a"] == pytest.approx(3600.0)
    assert "lq:other" not in snap and snap["other"] == pytest.approx(50.0)
