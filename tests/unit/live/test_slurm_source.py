"""The ``slurm`` source over slurmrestd's recorded answers (tests/data/slurmrestd, real output of
Slurm 22.05.8's slurmrestd; README there): what one read makes of them, what the engine says of
the pending jobs, and how the source goes away and comes back.

The recorded cluster: 4 nodes × 8 H100; job 3 (3 nodes × 8 GPUs, account prod) runs on
gpu[001-003]; job 1 (2 × 8, research) waits for Resources, job 2 (1 × 4, prod) for Priority;
gpu004 is drained ("fabric-check"); a reservation ``maint`` on gpu003 starts an hour after the
capture. The real-process counterpart (a real slurmctld + slurmrestd) is
tests/integration/test_serve_slurm.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.mapping import SbatchRequest
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.reader import SlurmCommandError, job_from_json
from gpufleet.adapters.slurm.rest import (
    SlurmView,
    nodes_from_rest,
    parse_sshare,
    reservations_from_rest,
    rest_job,
)
from gpufleet.live.explain import explain
from gpufleet.live.loop import LiveLoop
from gpufleet.live.slurm import SlurmSource
from gpufleet.testing.builders import job

DATA = Path(__file__).resolve().parents[2] / "data" / "slurmrestd"


def recorded(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def recorded_view(taken_at: float | None = None) -> SlurmView:
    jobs = tuple(job_from_json(j) for j in recorded("jobs.json")["jobs"])
    t = taken_at if taken_at is not None else max(j.submit for j in jobs) + 5
    return SlurmView(QueueSnapshot(t, jobs, nodes_from_rest(recorded("nodes.json"))),
                     reservations_from_rest(recorded("reservations.json")), ("prod", "research"),
                     parse_sshare((DATA / "sshare.txt").read_text()))


class Replay:
    """Slurm as recorded: ``view`` returns the captured answers, or raises what slurmrestd's
    client raises when it is stopped (``down``); submissions are numbered from 100."""

    name = "slurmrestd"

    def __init__(self) -> None:
        self.views = [recorded_view()]
        self.down = False
        self.sent: list[SbatchRequest] = []

    def view(self) -> SlurmView:
        if self.down:
            raise SlurmCommandError("slurmrestd http://127.0.0.1:6820: cannot connect ([Errno 111] "
                                    "Connection refused)")
        return self.views[0]

    def submit(self, request: SbatchRequest, command: str) -> str:
        self.sent.append(request)
        return str(100 + len(self.sent))

    def cancel(self, job_id: str) -> None: ...

    def control(self, argv: list[str]) -> None: ...


def test_nodes_are_read_with_gpus_in_use_and_drain_flags():
    nodes = {n.name: n for n in nodes_from_rest(recorded("nodes.json"))}
    assert [nodes[f"gpu00{i}"].gpus_alloc for i in range(1, 5)] == [8, 8, 8, 0]
    assert all(n.gpus == 8 for n in nodes.values())
    assert nodes["gpu004"].state == "IDLE+DRAIN" and not nodes["gpu004"].schedulable
    assert nodes["gpu004"].reason == "fabric-check" and nodes["gpu001"].partitions == ("gpu",)


def test_reservations_and_fair_share_are_read():
    (maint,) = reservations_from_rest(recorded("reservations.json"))
    assert maint.name == "maint" and maint.nodes == ("gpu003",)
    assert maint.end - maint.start == 3600  # Duration=60 minutes
    shares = {(f.account, f.user): f for f in parse_sshare((DATA / "sshare.txt").read_text())}
    assert shares[("research", "root")].fairshare == 0.0
    assert shares[("prod", "")].norm_shares == pytest.approx(1 / 3)


def test_a_submission_body_names_the_same_request_as_sbatch():
    """The REST body slurmrestd accepted in the capture (capture.sh's ``sub``): nodes, one task per
    node, GPUs per node as a string, minutes, account."""
    req = SbatchRequest("j-1", nodes=2, time_minutes=10, gpus_per_node=8, account="research")
    body = rest_job(req, "sleep 300")
    assert body["script"] == "#!/bin/sh\nsleep 300\n"
    job = body["job"]
    assert (job["nodes"], job["tasks_per_node"], job["gpus_per_node"], job["time_limit"], job["account"]) == \
        (2, 1, "8", 10, "research")


def test_one_read_gives_the_engine_every_pending_job_and_the_running_one_on_its_nodes():
    src = SlurmSource(Replay())
    events = src.poll(0.0)
    assert [e.kind for e in events] == ["source-up", "submit", "submit", "start"]
    assert sorted(src.pending()) == ["1", "2"] and list(src.running()) == ["3"]
    rj = src.running()["3"]
    assert sorted(src.table.names[b.node] for b in rj.bindings) == ["gpu001", "gpu002", "gpu003"]
    # 32 GPUs; job 3 holds 24; gpu004's 8 are free but drained
    assert int(src.table.gpu_total.sum()) == 32 and int(src.table.gpu_free.sum()) == 8
    assert src.out_of_service == {"gpu004": "drain"}
    assert src.health().ok and "2 pending, 1 running" in src.health().detail


def test_the_engine_explains_a_pending_slurm_job_with_its_reservation_behind_the_running_one():
    """Job 1 needs 2 whole nodes; only gpu004 is idle and it is drained: it waits for job 3
    (limit 10 min) to end, so its reservation is on job 3's nodes and job 3 is its blocker."""
    src = SlurmSource(Replay())
    loop = LiveLoop(src, epoch=src.wall())
    loop.tick()
    snap = loop.snapshot()
    e = explain(snap, "1")
    assert e is not None and e.state == "pending" and e.reason == "capacity"
    assert e.blockers == ["3"] and set(e.planned_nodes) <= {"gpu001", "gpu002", "gpu003"}
    q3 = src.view.queue.job("3")
    assert e.estimated_start == pytest.approx(q3.start + q3.time_limit_s, abs=60)  # bf_resolution 60 s
    # the drained gpu004 alone cannot hold 2 nodes' worth: the fix is moving job 3's work
    assert [f.what for f in e.fixes] == ["preempt 1 running job(s) (3)"]


def test_slurm_going_away_keeps_the_last_world_and_says_since_when_then_catches_up():
    api = Replay()
    t = [1000.0]
    src = SlurmSource(api, poll_s=3.0, wall=lambda: t[0])
    src.advance(0.0)
    api.down = True
    t[0] += 3
    down = src.advance(3.0)
    assert [e.kind for e in down] == ["source-down"]
    h = src.health()
    assert not h.ok and h.since == 1003.0 and "Connection refused" in h.last_error
    assert sorted(src.pending()) == ["1", "2"]          # the last world read stays
    t[0] += 3
    assert src.advance(6.0) == [] and src.health().since == 1003.0   # one event, not one per try
    # meanwhile job 3 ended and job 1 started: one read tells both
    view = recorded_view()
    jobs = tuple(j for j in view.queue.jobs if j.job_id != "3")
    jobs = tuple(replace(j, state="RUNNING", node_list=("gpu001", "gpu002"), start=view.queue.taken_at)
                 if j.job_id == "1" else j for j in jobs)
    api.views = [replace(view, queue=replace(view.queue, jobs=jobs))]
    api.down = False
    t[0] += 3
    back = src.advance(9.0)
    assert [(e.kind, e.job) for e in back] == [("source-up", None), ("start", "1"), ("finish", "3")]
    h = src.health()
    assert h.ok and h.since == 1009.0 and "Connection refused" in h.last_error


def test_a_submission_goes_to_slurm_with_the_tenant_as_account():
    api = Replay()
    src = SlurmSource(api)
    src.poll(0.0)
    j = job("x").gpus(8).gang(2).tenant("research").runs(600).build()
    assert src.send(j) == "101"
    (req,) = api.sent
    assert (req.nodes, req.gpus_per_node, req.account, req.time_minutes) == (2, 8, "research", 10)


def test_a_job_slurm_holds_back_is_explained_in_slurms_words_not_planned():
    """Job 2 held (``scontrol hold`` sets Reason=JobHeldAdmin): no capacity would start it, so
    the engine does not plan it and the explanation says what Slurm says."""
    api = Replay()
    view = recorded_view()
    jobs = tuple(replace(j, reason="JobHeldAdmin") if j.job_id == "2" else j for j in view.queue.jobs)
    api.views = [replace(view, queue=replace(view.queue, jobs=jobs))]
    src = SlurmSource(api)
    loop = LiveLoop(src, epoch=src.wall())
    loop.tick()
    assert list(src.pending()) == ["1"]
    e = explain(loop.snapshot(), "2")
    assert e is not None and e.state == "pending" and e.reason == "held"
    assert e.summary == ("waiting in slurm (JobHeldAdmin): it is held (by its user or an administrator) "
                         "until released")
