"""The change log and the leader's side of it: what another replica stores reaches the world,
a restart adopts running jobs where they run, evictions are counted with the work they lost."""

from __future__ import annotations

import time

from tests.unit.service.conftest import FLEET, ManualClock, job_body, serve

from gpufleet.service.auth import SYSTEM
from gpufleet.service.config import ServiceConfig
from gpufleet.service.jobs import parse_submission, stored_body
from gpufleet.service.runtime import Service
from gpufleet.service.store import Store
from gpufleet.service.store.db import JobRecord, body_hash

NODE0 = "g0-n0000"


def test_a_job_another_replica_stored_reaches_the_leaders_world_at_the_next_tick(served):
    """A follower only writes the store (its own Store on the same database); the leader's pull
    reads the change log and submits the job."""
    other = Store(served.svc.store.url)
    try:
        body = job_body("from-b", gpus=8)
        now = time.time()
        stored = stored_body(parse_submission(body), "from-b", 0.0)
        rec = JobRecord("from-b", "default", "pending", 0, 8, stored, 0.0, None, None, None, body_hash(body),
                        "follower", now, now)
        other.add_job(rec)
    finally:
        other.close()
    assert "from-b" not in served.svc.snapshot().pending
    served.tick()
    assert "from-b" in served.svc.snapshot().running
    assert served.svc.store.job("from-b").starts == 1


def test_a_restart_adopts_a_running_job_where_it_runs_and_does_not_start_it_again(tmp_path):
    first = serve(tmp_path / "d")
    with first.client:
        first.post_job(job_body("runs", gpus=8, replicas=2))
        first.tick()
        before = first.svc.store.job("runs")
        names = first.svc.source.table.names
        nodes = sorted({names[b.node] for b in first.svc.snapshot().running["runs"].bindings})
    first.svc.store.close()
    assert before.state == "running" and before.starts == 1 and len(before.placement) == 2
    again = serve(tmp_path / "d")
    with again.client:
        again.tick()
        rj = again.svc.snapshot().running["runs"]
        assert sorted({again.svc.source.table.names[b.node] for b in rj.bindings}) == nodes
        assert rj.start_time == before.start_time
        assert again.svc.store.job("runs").starts == 1
    again.svc.store.close()


def test_history_counts_a_node_failure_and_the_work_it_lost(served):
    """j1 (8 GPUs, no checkpoints) runs on the one node left in service from t=0; the node fails
    at t=600: 600 s × 8 GPUs = 4,800 GPU-s = 4/3 GPU-hours lost, one requeue, no preemption."""
    for n in served.svc.source.table.names[1:]:
        served.client.post(f"/api/v1/nodes/{n}/cordon", headers=served.admin)
    served.post_job(job_body("j1", gpus=8, tenant="t"))
    served.tick()
    assert served.svc.store.job("j1").state == "running"
    served.tick(600)
    served.client.post(f"/api/v1/nodes/{NODE0}/fail", headers=served.admin)
    served.tick()
    h = {r["tenant"]: r for r in served.client.get("/api/v1/history", headers=served.viewer).json()}
    assert h["t"]["finished"] == 0 and h["t"]["wait_mean_s"] is None
    assert (h["t"]["preemptions"], h["t"]["requeues"]) == (0, 1)
    assert abs(h["t"]["lost_gpu_hours"] - 4 / 3) < 1e-6


def test_under_strict_fifo_an_arrival_behind_the_blocked_head_is_answered_from_the_memo(tmp_path):
    """gang-fifo on 64 GPUs: "a" takes 56, "head" (16) cannot fit the 8 left and stops the pass.
    "later" (1 GPU) arrives behind it: the engine's behind-stop rule answers without a cycle over
    the queue; "later" waits although it would fit (strict FIFO), and "head" keeps its reason."""
    cfg = ServiceConfig(fleet=FLEET, data_dir=tmp_path / "d", policy="gang-fifo", run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg)
    svc.loop.clock = ManualClock()
    svc.loop.duty = 0.0  # ticks back to back (under load the duty gap skipped the second cycle)
    try:
        svc.submit(SYSTEM, job_body("a", gpus=8, replicas=7), None)
        svc.submit(SYSTEM, job_body("head", gpus=8, replicas=2), None)
        svc.tick()
        assert svc.loop.last.reused == ""
        svc.submit(SYSTEM, job_body("later", gpus=1), None)
        svc.tick()
        snap = svc.snapshot()
        assert svc.loop.last.reused == "behind-stop"
        assert set(snap.running) == {"a"} and {"head", "later"} <= set(snap.pending)
        assert snap.statuses["head"].code == "UNSCHEDULABLE"
        assert "later" in snap.statuses
    finally:
        svc.stop()
        svc.store.close()


def test_the_live_loop_gets_the_cycle_cut_and_publishes_every_waiting_jobs_status(tmp_path):
    """gang-bestfit on 64 GPUs: "a" takes 56; twelve 1-GPU jobs then queue at once. F = 8 free:
    the engine's cut hands the cycle ⌊8/1⌋ + 1 = 9 of them (not 12); 8 start, and the four still
    waiting (one the cycle saw, three it left out) all show the same UNSCHEDULABLE status."""
    cfg = ServiceConfig(fleet=FLEET, data_dir=tmp_path / "d", policy="gang-bestfit", run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg)
    svc.loop.clock = ManualClock()
    svc.loop.duty = 0.0
    try:
        svc.submit(SYSTEM, job_body("a", gpus=8, replicas=7), None)
        svc.tick()
        for i in range(12):
            svc.submit(SYSTEM, job_body(f"w{i:02d}", gpus=1), None)
        svc.tick()
        snap = svc.snapshot()
        assert svc.loop.last.pending == 9
        waiting = sorted(set(snap.pending))
        assert len(snap.running) == 9 and len(waiting) == 4
        assert {snap.statuses[j].code for j in waiting} == {"UNSCHEDULABLE"}
        assert len({snap.statuses[j].reasons for j in waiting}) == 1
    finally:
        svc.stop()
        svc.store.close()


def test_under_easy_backfill_the_live_loop_carries_the_last_scan_on(tmp_path):
    """gang-easy on 64 GPUs: "a" takes 56 for 10 h; eight 16-GPU jobs wait (EASY's depth: eight
    reservations, the first protected). "x-late" (16 GPUs) arrives behind them: the engine carries
    the last cycle's backfill scan on (rule 4, no pass over the queue); "x-late" cannot start (16
    GPUs do not fit the 8 free) and the eight reservations stand. The same loop as every driver's:
    it tells the engine what arrived, nothing else."""
    cfg = ServiceConfig(fleet=FLEET, data_dir=tmp_path / "d", policy="gang-easy", run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg)
    svc.loop.clock = ManualClock()
    svc.loop.duty = 0.0  # ticks back to back: the question is what the cycle reuses
    try:
        svc.submit(SYSTEM, job_body("a", gpus=8, replicas=7, run_time=36_000.0), None)
        for i in range(8):
            svc.submit(SYSTEM, job_body(f"w{i}", gpus=8, replicas=2), None)
        svc.tick()
        assert svc.loop.last.reused == ""
        svc.submit(SYSTEM, job_body("x-late", gpus=8, replicas=2), None)
        svc.tick()
        snap = svc.snapshot()
        assert svc.loop.last.reused == "carried"
        assert set(snap.running) == {"a"} and "x-late" in snap.pending
        assert snap.statuses["x-late"].code == "UNSCHEDULABLE"
        assert snap.statuses["w0"].code == "UNSCHEDULABLE"  # the head keeps the verdict it had
    finally:
        svc.stop()
        svc.store.close()


def test_the_leader_counts_a_submission_another_process_stored_once(served):
    """Under ``gpufleet serve`` the front stores the submissions and the leader answers /metrics:
    the counter is the leader's, one per job its pull applied (the one submitted here through
    the API and the one another Store wrote: 2)."""
    served.post_job(job_body("here", gpus=8))
    other = Store(served.svc.store.url)
    try:
        body = job_body("there", gpus=8)
        now = time.time()
        other.add_job(JobRecord("there", "default", "pending", 0, 8,
                                stored_body(parse_submission(body), "there", 0.0), 0.0, None, None, None,
                                body_hash(body), "front", now, now))
    finally:
        other.close()
    served.tick()
    served.tick()
    text = served.client.get("/metrics", headers=served.admin).text
    assert 'gpufleet_submitted_jobs_total{queue="default"} 2.0' in text
