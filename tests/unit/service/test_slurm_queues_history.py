"""Queues and History over the ``slurm`` source: Slurm's accounts are the service's queues (API and
Queues page), and History counts every job Slurm's accounting (sacct) lists, sbatch'ed ones too.

Slurm as recorded (tests/data/slurmrestd, tests/unit/live/test_slurm_source.py's ``Replay``):
4 nodes × 8 H100 = 32 GPUs; accounts research and prod under root, Share 1 each, no GPU limit,
and user root directly under root with Share 1; job 3 (prod, 3 nodes × 8 = 24 GPUs) runs, job 1
(research, 2 × 8) and job 2 (prod, 1 × 4) wait. Slurm guarantees no account GPUs: root holds all
32, each account's nominal is 0 and, without GrpTRES, it may borrow without limit; prod uses 24,
all borrowed; research uses none and has nothing to lend. sshare (nothing run yet): effective
usage 0 on NormShares 1/3, so both fair shares are 0.00.

History: sacct (tests/data/slurm/sacct-runs.txt, moved to an hour ago) lists job 1 (prod, 2 GPUs
for 3 s) and job 2 (research, 16 GPUs for 4 s), neither submitted through the service, plus a
PREEMPTED prod job of 8 GPUs that ran 600 s: prod has 2 finished jobs and
(2 × 3 + 8 × 600) / 3600 = 4806 / 3600 GPU-hours, 1 preemption; research 16 × 4 / 3600.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gpufleet.adapters.slurm.accounting import FinishedRun, parse_runs
from gpufleet.adapters.slurm.accounts import associations_from_rest
from gpufleet.live.slurm import SlurmSource
from gpufleet.model.fleet import Fleet
from gpufleet.service.app import create_app
from gpufleet.service.config import ServiceConfig
from gpufleet.service.runtime import Service

from ..live.test_slurm_source import DATA, Replay, recorded_view


def recent_runs(since: float) -> tuple[FinishedRun, ...]:
    """sacct's answer, its times moved so that the last job ended an hour ago."""
    runs = parse_runs((DATA.parent / "slurm" / "sacct-runs.txt").read_text())
    preempted = replace(runs[0], id="7", gpus=8, start_time=runs[0].start_time - 600.0,
                        end_time=runs[0].start_time, state="PREEMPTED")
    shift = time.time() - 3600.0 - max(r.end_time for r in runs)
    return tuple(replace(r, submit_time=r.submit_time + shift, start_time=r.start_time + shift,
                         end_time=r.end_time + shift) for r in (*runs, preempted))


def slurm_service(tmp_path: Path) -> tuple[Service, TestClient, dict[str, str], str]:
    api = Replay()
    api.views = [replace(recorded_view(), associations=associations_from_rest(
        json.loads((DATA / "associations.json").read_text())))]
    cfg = ServiceConfig(fleet=Fleet(()), data_dir=tmp_path, source="slurm", run_loop=False,
                        argon2_time_cost=1, argon2_memory_kib=1024)
    svc = Service(cfg, source=SlurmSource(api, accounting=recent_runs))   # reads Slurm once before serving
    token = svc.auth.create("admin")[0]
    return svc, TestClient(create_app(cfg, svc)), {"Authorization": f"Bearer {token}"}, token


def test_the_api_lists_slurms_accounts_as_queues_with_usage_from_running_jobs(tmp_path: Path):
    svc, client, admin, _ = slurm_service(tmp_path)
    with client:
        qs = {q["name"]: q for q in client.get("/api/v1/queues", headers=admin).json()}
        assert set(qs) == {"prod", "research"}
        prod, research = qs["prod"], qs["research"]
        assert (prod["cohort"], prod["nominal_basis"], prod["share_from"]) == ("root", "shares", "sshare")
        (pf,) = prod["flavors"]
        assert (pf["nominal"], pf["usage"], pf["borrowed"], pf["lendable"]) == (0, 24, 24, 0)
        (rf,) = research["flavors"]
        assert (rf["nominal"], rf["usage"], rf["borrowed"], rf["lendable"]) == (0, 0, 0, 0)
        assert (prod["running_jobs"], prod["running_gpus"], prod["pending_jobs"], prod["pending_gpus"]) == \
            (1, 24, 1, 4)
        assert (research["pending_jobs"], research["pending_gpus"]) == (1, 16)
        assert prod["weighted_share"] == 0.0 and research["weighted_share"] == 0.0


def test_a_quota_edit_over_slurm_is_refused_naming_sacctmgr_and_nothing_is_stored(tmp_path: Path):
    svc, client, admin, _ = slurm_service(tmp_path)
    with client:
        r = client.put("/api/v1/queues/prod/quota/H100-80GB", headers=admin,
                       json={"nominal": 16, "borrowing_limit": 0})
        assert r.status_code == 409, r.text
        assert "sacctmgr modify account NAME set GrpTRES=gres/gpu=N" in r.json()["error"]["message"]
        assert svc.store.quotas() == []
        assert [a for a in svc.store.audit_log() if a["action"] == "quota.set"] == []


def test_a_submission_for_an_account_is_left_to_slurm_to_judge(tmp_path: Path):
    """The service does not refuse an account its last read lacked (the read is up to 30 s old,
    and Slurm says no in its own words when it must): the job goes to Slurm."""
    svc, client, admin, _ = slurm_service(tmp_path)
    with client:
        r = client.post("/api/v1/jobs", headers=admin,
                        json={"tenant": "new-team", "run_time": 60, "pod_sets": [{"replicas": 1, "gpus": 1}]})
        assert r.status_code == 201, r.text
        assert svc.source.api.sent[-1].account == "new-team"


def test_the_queues_page_shows_the_cohort_tree_bars_and_where_each_nominal_comes_from(tmp_path: Path):
    svc, client, _, token = slurm_service(tmp_path)
    with client:
        page = client.get(f"/queues?token={token}").text
        assert "cohort root" in page
        assert 'data-queue="prod"' in page and 'data-queue="research"' in page
        assert 'aria-label="24 in use of 0 nominal, 24 borrowed"' in page
        assert "no GrpTRES: borrows freely" in page and "sshare" in page
        assert "No queues" not in page


def test_history_counts_the_jobs_slurms_accounting_lists_by_account(tmp_path: Path):
    svc, client, admin, token = slurm_service(tmp_path)
    with client:
        by = {h["tenant"]: h for h in client.get("/api/v1/history", headers=admin).json()}
        assert set(by) == {"prod", "research"}
        assert by["prod"]["finished"] == 2 and by["prod"]["preemptions"] == 1
        assert by["prod"]["gpu_hours"] == pytest.approx(4806 / 3600)
        assert by["research"]["finished"] == 1 and by["research"]["gpu_hours"] == pytest.approx(16 * 4 / 3600)
        assert by["research"]["wait_mean_s"] == 0.0
        page = client.get(f"/history?token={token}").text
        assert "3 finished jobs" in page and '"research"' in page and '"prod"' in page


def test_a_quota_what_if_over_slurm_needs_a_policy_that_reads_quotas(tmp_path: Path):
    """Today's policy over Slurm (its priority and backfill, policies/slurm_like.py) admits every
    job: Slurm enforces GrpTRES itself. A quota change alone would answer as if nothing changed,
    so it is refused naming the field; with a policy named, the accounts' quotas are its input."""
    svc, client, admin, _ = slurm_service(tmp_path)
    body = {"job": {"tenant": "research", "run_time": 600, "pod_sets": [{"replicas": 1, "gpus": 8}]},
            "seeds": 1, "horizon_s": 86400,
            "quota": [{"tenant": "research", "flavor": "H100-80GB", "nominal": 0, "borrowing_limit": 0}]}
    with client:
        r = client.post("/api/v1/whatif", headers=admin, json=body)
        assert r.status_code == 422 and r.json()["error"]["field"] == "quota", r.text
        with_policy = client.post("/api/v1/whatif", headers=admin, json={**body, "policy": "gang-easy"})
        assert with_policy.status_code == 200, with_policy.text
