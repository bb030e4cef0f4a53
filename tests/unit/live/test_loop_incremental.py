"""The live loop tells the engine what changed: arrivals and the runs that ended, so the engine's
incremental cycle (engine/incremental.py) continues the last one instead of running it again;
anything else still asks for the full cycle. Verify mode runs the full cycle beside each reused
one and raises on any difference, so these tests fail on a wrong carry as well as on none."""

from gpufleet.engine.incremental import CARRIED
from gpufleet.live.loop import LiveLoop
from gpufleet.live.source import LiveEvent, Source
from gpufleet.live.virtual import VirtualSource
from gpufleet.model.job import Job
from gpufleet.policies.registry import profile
from gpufleet.testing.builders import fleet, job

FLEET = fleet().leaves(2, nodes=4).build()   # 8 nodes × 8 GPUs


def submit(j: Job):
    def cmd(src: Source, now: float) -> list[LiveEvent]:
        src.submit(j, now)
        return [LiveEvent(now, "submit", j.id)]
    return cmd


def waiting_for_one_long_run() -> tuple[LiveLoop, list[float]]:
    """64 GPUs. At t = 0: "long" (4 nodes × 8 GPUs, 1 h) and 32 one-GPU jobs of 100, 125, …,
    875 s fill the fleet; then "big" (all 64 GPUs) waits for "long" (its reservation: t = 3,600)
    and 50 one-GPU jobs of 5,000 s wait behind it (each would delay "big": no backfill). Every
    short job's end frees a GPU nobody waiting may take: the cycle that follows decides
    nothing new, the case the EASY carry (policies/backfill_carry.py) is for."""
    clock = [0.0]
    src = VirtualSource(FLEET, profile("gang-easy", FLEET.fabric))
    loop = LiveLoop(src, clock=lambda: clock[0], duty=0.0, idle_cycle_s=1e9, verify=True)
    jobs = [job("long").gpus(8).gang(4).runs(3600).at(0).build()]
    jobs += [job(f"s{i:02d}").gpus(1).runs(100 + 25 * i).at(0).build() for i in range(32)]
    jobs += [job("big").gpus(8).gang(8).runs(3600).at(1).build()]
    jobs += [job(f"w{i:02d}").gpus(1).runs(5000).at(2).build() for i in range(50)]
    for j in jobs:
        loop.post(submit(j), j)
    return loop, clock


def test_cycles_after_runs_end_are_carried_on_and_decide_what_the_full_cycle_decides():
    """Ticks every 10 s up to t = 3,990 s: the 32 short jobs end one per 25 s (a cycle each),
    then "long" at 3,600 s ("big" starts: a reservation due, a full cycle). With the ends told
    to the engine, the cycles after the short jobs' ends are carried on (verify mode checks each
    against the full cycle); when the loop called every end "something else", none was."""
    loop, clock = waiting_for_one_long_run()
    carried = cycles = 0
    for step in range(1, 400):
        clock[0] = 10.0 * step
        before = loop.cycles
        loop.tick()
        if loop.cycles > before:
            cycles += 1
            carried += loop.last.reused == CARRIED
    assert cycles >= 33 and carried >= 30
    assert set(loop.source.running()) == {"big"}


def test_a_command_other_than_a_submission_still_asks_for_the_full_cycle():
    """A cancel is news the loop does not describe to the engine: the next cycle runs in full
    even where the same tick's only other news is a run's end; the end after it is carried."""
    loop, clock = waiting_for_one_long_run()
    clock[0] = 10.0    # the first cycle: everything that fits starts now, so s00 ends at 110 s
    loop.tick()

    def cancel(s: Source, now: float) -> list[LiveEvent]:
        s.withdraw("w49", now)
        return [LiveEvent(now, "cancel", "w49")]

    loop.post(cancel)
    clock[0] = 110.0
    loop.tick()
    assert loop.last.reused == ""
    clock[0] = 140.0   # s01 ends at 135 s, and nothing else: carried on
    loop.tick()
    assert loop.last.reused == CARRIED
