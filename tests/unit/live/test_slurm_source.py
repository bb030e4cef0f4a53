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
import socket
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gpufleet.adapters.slurm.mapping import SbatchRequest
from gpufleet.adapters.slurm.queue import QueueSnapshot
from gpufleet.adapters.slurm.reader import SlurmCli, SlurmCommandError, job_from_json
from gpufleet.adapters.slurm.rest import (
    JwtToken,
    SlurmCommands,
    SlurmView,
    nodes_from_rest,
    parse_sshare,
    reservations_from_rest,
    rest_job,
)
from gpufleet.live.explain import explain
from gpufleet.live.loop import LiveLoop
from gpufleet.live.slurm import SlurmSource
from gpufleet.model.fleet import Fleet
from gpufleet.service.auth import SYSTEM
from gpufleet.service.config import ServiceConfig
from gpufleet.service.runtime import Service
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
    about = src.about()
    assert about["partitions"] == {"gpu": ["gpu001", "gpu002", "gpu003", "gpu004"]}
    assert about["accounts"] == ["prod", "research"]
    assert [r["name"] for r in about["reservations"]] == ["maint"] and not about["reservations"][0]["active"]
    assert {(f["account"], f["user"]) for f in about["fairshare"]} >= {("research", "root"), ("prod", "root")}


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


def test_a_job_slurm_lists_as_cancelled_is_a_cancel_and_one_that_completed_a_finish():
    """squeue keeps ended jobs for MinJobAge with their final state: job 3 CANCELLED (scancel,
    or our API's cancel) and job 2 COMPLETED between two reads."""
    api = Replay()
    src = SlurmSource(api)
    src.poll(0.0)
    view = recorded_view()
    api.views = [replace(view, queue=replace(view.queue, jobs=tuple(j for j in view.queue.jobs
                                                                    if j.job_id == "1")),
                         ended={"3": "CANCELLED", "2": "COMPLETED"})]
    events = src.poll(1.0)
    assert [(e.kind, e.job, e.detail) for e in events] == [("finish", "2", "COMPLETED"),
                                                           ("cancel", "3", "CANCELLED")]


def test_the_jwt_is_minted_with_scontrol_token_and_renewed_after_80_percent_of_its_life():
    """``scontrol token`` prints ``SLURM_JWT=<token>`` (what tools/slurm-emulated-cluster.sh's
    ``token`` reads); with a 3600 s lifespan the next one is minted after 2880 s."""
    minted: list[list[str]] = []

    def scontrol(argv):  # noqa: ANN001, ANN202 (a Runner: argv in, stdout out)
        minted.append(list(argv))
        return f"SLURM_JWT=token{len(minted)}\n"
    t = [0.0]
    tok = JwtToken(run=scontrol, user="root", lifespan_s=3600, clock=lambda: t[0])
    assert tok() == "token1" and minted == [["scontrol", "token", "username=root", "lifespan=3600"]]
    t[0] = 2880.0
    assert tok() == "token1"
    t[0] = 2880.5
    assert tok() == "token2" and len(minted) == 2
    assert JwtToken(fixed="given")() == "given"


def test_a_restart_over_slurm_sends_nothing_again_and_keeps_what_slurm_runs(tmp_path):
    """The store holds a job submitted through the API (Slurm's id 101); a new service over the
    same store and the same Slurm resubmits nothing and leaves the record as it was."""
    api = Replay()
    cfg = ServiceConfig(fleet=Fleet(()), data_dir=tmp_path, source="slurm", run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg, source=SlurmSource(api))
    rec, created = svc.submit(SYSTEM, {"tenant": "research", "run_time": 600,
                                       "pod_sets": [{"replicas": 2, "gpus": 8}]}, "key-1")
    assert created and rec.id == "101" and len(api.sent) == 1
    svc.store.apply_job_updates([("101", {"state": "running", "start_time": 5.0})])
    svc.store.close()
    again = Service(cfg, source=SlurmSource(api))
    assert len(api.sent) == 1 and again.restored == 1
    assert again.store.job("101").state == "running"
    replay, created = again.submit(SYSTEM, {"tenant": "research", "run_time": 600,
                                            "pod_sets": [{"replicas": 2, "gpus": 8}]}, "key-1")
    assert not created and replay.id == "101" and len(api.sent) == 1
    again.store.close()


def test_an_overdue_estimate_does_not_rerun_the_cycle_until_slurm_is_read_again():
    """Job 1's reservation starts when job 3's limit ends; past that time Slurm has not started it
    yet, but the same input gives the same answer: five ticks without a read run one cycle (the
    loop's idle cycle, every 60 s of source time), not five. The duty gap (a wall-clock pause
    after each cycle, to share the CPU with the API) is off: the ticks here are back to back and
    the question is about source time."""
    t = [recorded_view().queue.taken_at]
    src = SlurmSource(Replay(), poll_s=3.0, wall=lambda: t[0])
    loop = LiveLoop(src, epoch=t[0], clock=lambda: t[0], duty=0.0)
    loop.tick()
    assert loop.cycles == 1 and src.reservations
    t[0] = max(r.start for r in src.reservations) + 1.0     # every reservation overdue
    src._last_poll = t[0]                                     # read just now: nothing new
    for _ in range(5):
        loop.tick()
    assert loop.cycles == 2


def test_without_slurmrestd_a_gone_slurmctld_is_reported_within_seconds(tmp_path):
    """The client commands would wait MessageTimeout × retries; the read checks the controller
    slurm.conf names first (one TCP connection, 2 s at most): a port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]          # free once closed: nothing listens there
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"ClusterName=gone\nSlurmctldHost=ctl(127.0.0.1)\nSlurmctldPort={port}\n")
    src = SlurmSource(SlurmCommands(SlurmCli(str(conf)), slurm_conf=str(conf), check=True))
    t0 = time.monotonic()
    events = src.poll(0.0)
    assert time.monotonic() - t0 < 5
    assert [e.kind for e in events] == ["source-down"]
    err = src.health().last_error
    assert "no slurmctld answers" in err and f"127.0.0.1:{port}" in err
