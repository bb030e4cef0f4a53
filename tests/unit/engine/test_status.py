"""A job's Status is the chain of what held it back this cycle, merged by one rule (engine/status.py)."""

from gpufleet.engine.cycle import run_cycle
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.status import Status, StatusBoard, StatusCode, merge
from gpufleet.engine.types import CycleInput, PendingJob
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job


def easy_cycle(jobs, policy="gang-easy"):
    f = fleet().leaves(1, nodes=1).build()
    return run_cycle(CycleInput(now=0.0, nodes=NodeTable.from_fleet(f),
                                pending=[PendingJob(j) for j in jobs], profile=profile(policy)))


def test_a_later_phase_appends_to_the_chain_and_keeps_the_start_estimate():
    placed = Status(StatusCode.UNSCHEDULABLE, ("no room",), "gang", estimated_start=None)
    reserved = Status(StatusCode.UNSCHEDULABLE, ("reserved at t=100s",), "gang", estimated_start=100.0)
    backfill = Status(StatusCode.WAIT, ("would delay the head",), "easy")
    out = merge(merge(placed, reserved), backfill)
    assert out.reasons == ("no room", "reserved at t=100s", "would delay the head")
    assert out.code is StatusCode.WAIT and out.policy == "easy"
    assert out.estimated_start == 100.0


def test_a_repeated_reason_is_not_chained_twice():
    a = Status(StatusCode.WAIT, ("x", "y"), "p")
    assert merge(a, Status(StatusCode.WAIT, ("y", "z"), "q")).reasons == ("x", "y", "z")


def test_no_later_phase_turns_an_unresolvable_job_into_a_waiting_one():
    out = merge(Status(StatusCode.UNRESOLVABLE, ("bigger than the fleet",), "gang"),
                Status(StatusCode.WAIT, ("not examined",), "backfill"))
    assert out.code is StatusCode.UNRESOLVABLE and out.policy == "gang"


def test_the_board_merges_bulk_writes_with_earlier_verdicts():
    board = StatusBoard()
    board.record("a", Status(StatusCode.UNSCHEDULABLE, ("first",), "p", 50.0))
    board.record_many(["a", "b"], [Status(StatusCode.WAIT, ("second",), "q")] * 2)
    assert board["a"].reasons == ("first", "second") and board["a"].estimated_start == 50.0
    assert board["b"].reasons == ("second",)
    board.note("b", "third", "r", estimated_start=7.0)
    assert board["b"].code is StatusCode.WAIT and board["b"].estimated_start == 7.0
    board.discard("a")
    assert "a" not in board and len(board) == 1


def test_a_protected_reserved_job_carries_its_reservation_once():
    """One 8-GPU node: ``a`` (8 GPUs, 100 s) starts now, ``big`` (8 GPUs) is blocked and reserved
    at t = 0 + 100 = 100 s when ``a`` ends. Its chain says so exactly once."""
    r = easy_cycle([job("a").gpus(8).runs(100).build(), job("big").gpus(8).at(1).runs(50).build()])
    st = r.statuses["big"]
    assert st.estimated_start == 100.0
    assert sum("reserved to start at t=100s" in why for why in st.reasons) == 1


def test_an_estimated_job_that_backfill_holds_back_keeps_its_estimate():
    """``a`` (8 GPUs, 100 s) runs; ``big`` is reserved at 100 s (protected), ``next`` (8 GPUs, 50 s)
    gets the unprotected estimate 100 + 50 = 150 s. Backfill then judges ``next`` (no room now);
    the verdict is appended, the estimate kept."""
    r = easy_cycle([job("a").gpus(8).runs(100).build(), job("big").gpus(8).at(1).runs(50).build(),
                    job("next").gpus(8).at(2).runs(50).build()])
    st = r.statuses["next"]
    assert st.estimated_start == 150.0
    assert any("reserved to start at t=150s" in why for why in st.reasons)
    assert len(st.reasons) >= 2
