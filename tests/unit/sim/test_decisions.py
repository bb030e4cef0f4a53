"""The decision log: why each job waits, reservations, backfill; read back by `gpufleet explain`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from gpufleet.cli.main import app
from gpufleet.policies.registry import profile
from gpufleet.sim.runner import simulate
from gpufleet.sim.why import story
from gpufleet.testing.builders import fleet, job

runner = CliRunner()


def _backfill_case():
    """3 nodes × 8 GPUs. 'a' (2×8 GPUs) runs 0–3600 s; 'big' (3×8) arrives at 10 s and cannot fit
    until 'a' ends at 3600 s; 'small' (1×8, 1000 s) arrives at 20 s and fits on the third node,
    ending at 1020 s < 3600 s, so EASY backfill starts it without delaying 'big'."""
    f = fleet().leaves(1, nodes=3).build()
    jobs = [job("a").gpus(8).gang(2).runs(3600).build(),
            job("big").gpus(8).gang(3).at(10).runs(600).build(),
            job("small").gpus(8).at(20).runs(1000).build()]
    return simulate(f, jobs, profile("gang-easy"), horizon=4200)


def _events(r):
    return [{"t": t, "event": k, "job": j, "detail": d} for t, k, j, d in r.recorder.log]


def test_a_blocked_gang_gets_a_wait_reason_and_a_protected_reservation_at_the_time_capacity_frees():
    r = _backfill_case()
    big = [e for e in _events(r) if e["job"] == "big"]
    waits = [e for e in big if e["event"] == "wait"]
    assert waits and waits[0]["t"] == 10.0 and waits[0]["detail"].startswith("UNSCHEDULABLE")
    reserves = [e for e in big if e["event"] == "reserve"]
    assert reserves and "protected start t=3600" in reserves[-1]["detail"]
    assert r.starts["big"] == 3600.0


def test_a_backfilled_start_names_the_reserved_job_it_went_past():
    r = _backfill_case()
    backfills = [e for e in _events(r) if e["event"] == "backfill"]
    assert [(e["t"], e["job"]) for e in backfills] == [(20.0, "small")]
    assert "ahead of big" in backfills[0]["detail"]


def test_a_wait_reason_is_logged_on_change_not_every_cycle():
    """'big' sees cycles at 10, 20 (small arrives), 1020 (small ends) and 3600 with the same
    reason (numbers aside): one wait event, not three."""
    r = _backfill_case()
    assert sum(1 for e in _events(r) if e["event"] == "wait" and e["job"] == "big") == 1


def test_the_story_says_how_long_the_job_waited_and_why():
    """Submitted at 10 s, started at 3600 s: 3590 s of waiting, all under one reason."""
    s = story("gang-easy", _events(_backfill_case()), "big")
    assert s is not None and s.waited_s == 3590.0 and not s.never_started
    ((reason, seconds),) = s.by_reason()
    assert seconds == 3590.0 and "needs 3×8 GPUs" in reason


def test_turning_the_decision_log_off_leaves_the_same_history():
    f = fleet().leaves(1, nodes=3).build()
    jobs = [job("a").gpus(8).gang(2).runs(3600).build(), job("big").gpus(8).gang(3).at(10).runs(600).build()]
    on = simulate(f, jobs, profile("gang-easy"))
    off = simulate(f, jobs, profile("gang-easy"), decision_log=False)
    assert [e for e in on.recorder.log if e[1] not in ("wait", "reserve", "backfill")] == off.recorder.log


def test_explain_reads_a_run_directory_in_text_and_json(tmp_path):
    r = _backfill_case()
    r.recorder.write_log(tmp_path / "events-gang-easy.jsonl")
    text = runner.invoke(app, ["explain", "big", "--run", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "after waiting 59.8 min" in text.output  # 3590 s
    out = runner.invoke(app, ["explain", "big", "--run", str(tmp_path), "--output", "json"])
    assert out.exit_code == 0
    (doc,) = json.loads(out.output)
    assert doc["waited_s"] == 3590.0 and doc["first_start"] == 3600.0


def test_explain_answers_an_unknown_job_or_run_in_one_line_with_exit_2(tmp_path):
    r = _backfill_case()
    r.recorder.write_log(tmp_path / "events-gang-easy.jsonl")
    for args in (["explain", "nobody", "--run", str(tmp_path)],
                 ["explain", "big", "--run", str(tmp_path / "missing")],
                 ["explain", "big", "--run", str(tmp_path), "--policy", "nope"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, args
        assert len(res.output.strip().splitlines()) == 1 and "error" in res.output
