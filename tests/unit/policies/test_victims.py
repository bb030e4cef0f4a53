"""The one victim search that preemption and defragmentation share (policies/victims.py).

One node of 8 GPUs, full: running jobs a (4 GPUs), b (2) and c (2). The beneficiary needs 4
free GPUs on that node.
"""

from gpufleet.engine.plan import Plan, PodBinding
from gpufleet.engine.snapshot import NodeTable
from gpufleet.engine.types import RunningJob
from gpufleet.model.job import Job, PodRequest, PodSet
from gpufleet.policies.victims import VictimSearch
from gpufleet.testing.builders import fleet


def setup():
    plan = Plan(NodeTable.from_fleet(fleet().leaves(1, nodes=1).build()))
    running = {}
    for name, gpus in (("a", 4), ("b", 2), ("c", 2)):
        j = Job(name, "t", (PodSet("w", 1, PodRequest(gpus)),), 0.0, 100.0)
        b = PodBinding(name, "w", 0, 0, PodRequest(gpus))
        plan.bind(b)
        running[name] = RunningJob(j, 0.0, (b,))
    return plan, running


def four_free(plan):
    return lambda: True if int(plan.table.gpu_free[0]) >= 4 else None


def test_grow_stops_at_the_first_prefix_that_frees_enough():
    """c then b free 2 + 2 = 4 GPUs: enough, so a is never touched."""
    plan, r = setup()
    found = VictimSearch(plan, four_free(plan)).grow([[r["c"]], [r["b"]], [r["a"]]])
    assert found is not None and [v.job.id for v in found[0]] == ["c", "b"]
    assert int(plan.table.gpu_free[0]) == 4


def test_reprieve_keeps_a_victim_the_beneficiary_does_not_need():
    """One group releases b and a (6 GPUs free). Without a only 2 are free (a stays a victim);
    without b, 4 are (b is reprieved): the victims are {a}, and settling leaves 4 GPUs free."""
    plan, r = setup()
    search = VictimSearch(plan, four_free(plan))
    found = search.grow([[r["b"], r["a"]]])
    assert found is not None and int(plan.table.gpu_free[0]) == 6
    chosen = search.reprieve(found[0], [r["a"], r["b"]])
    assert [v.job.id for v in chosen] == ["a"]
    assert search.settle(chosen) is True and int(plan.table.gpu_free[0]) == 4


def test_a_search_whose_every_set_is_disallowed_finds_nothing_and_leaves_the_plan_as_it_was():
    """If a may not go (say, quota), no set without a frees 4 GPUs before a is added: none."""
    plan, r = setup()
    search = VictimSearch(plan, four_free(plan), allowed=lambda vs: all(v.job.id != "a" for v in vs))
    assert search.grow([[r["a"]], [r["b"]]]) is None
    assert int(plan.table.gpu_free[0]) == 0


def test_ready_skips_the_fit_until_the_bound_allows_it():
    """With a bound that needs 3 victims, the fit is asked once, for {c, b, a}."""
    plan, r = setup()
    asked = []

    def fits():
        asked.append(int(plan.table.gpu_free[0]))
        return True

    found = VictimSearch(plan, fits).grow([[r["c"]], [r["b"]], [r["a"]]],
                                          ready=lambda chosen: len(chosen) >= 3)
    assert found is not None and asked == [8]


def test_fill_back_tries_from_the_second_to_last_victim_back_to_the_first():
    """Kueue's fill-back, for a beneficiary that needs 6 free GPUs. Walk b, c, a: b frees 2, b + c
    4, b + c + a 8 (fits). Fill back tries c (without it b + a free 6: spared), then b (a alone
    frees 4 < 6: kept); a, the last, is never tried. Victims: b and a."""
    plan, r = setup()
    search = VictimSearch(plan, lambda: True if int(plan.table.gpu_free[0]) >= 6 else None)
    found = search.grow([[r["b"]], [r["c"]], [r["a"]]])
    assert found is not None and [v.job.id for v in found[0]] == ["b", "c", "a"]
    assert [v.job.id for v in search.fill_back(found[0])] == ["b", "a"]


def test_without_a_plan_the_search_is_on_quota_alone():
    """Kueue's oracle: no plan, ``allowed`` is the quota test (here: at least 4 GPUs of victims),
    ``fits`` always true. c then b reach 4; the plan-less search touches no table."""
    plan, r = setup()
    search = VictimSearch(None, lambda: True,
                          allowed=lambda vs: sum(v.job.total_gpus for v in vs) >= 4)
    found = search.grow([[r["c"]], [r["b"]], [r["a"]]])
    assert found is not None and [v.job.id for v in found[0]] == ["c", "b"]
    assert int(plan.table.gpu_free[0]) == 0
