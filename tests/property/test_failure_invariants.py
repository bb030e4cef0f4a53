"""With failures on, the engine never places on a node outside healthy service."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.policies.registry import profile
from gpufleet.sim.fleet_events.failures import FailureConfig, SpotConfig
from gpufleet.sim.runner import simulate
from gpufleet.testing.builders import fleet, job

DAY = 86400.0


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), policy=st.sampled_from(["gang-bestfit", "gang-easy", "per-pod"]),
       spares=st.integers(0, 3), spot=st.booleans())
def test_no_job_starts_on_a_failed_reclaimed_or_spare_node(seed, policy, spares, spot):
    f = fleet().leaves(2, nodes=6).build()
    jobs = [job(f"j{i}").gpus(8).gang(1 + (i * 5) % 4).at(900.0 * i).runs(3 * 3600).checkpoints(1800, 10, 60)
            .build() for i in range(40)]
    cfg = FailureConfig(scale=300.0, seed=seed, spares=spares,
                        spot=SpotConfig(nodes=4, reclaims_per_node_day=2.0) if spot else None)
    r = simulate(f, jobs, profile(policy), failures=cfg, failures_until=2 * DAY)
    names = [n.id for n in f.nodes]
    in_service = {n: True for n in names}
    for n in names[len(names) - spares:] if spares else []:
        in_service[n] = False
    for _, kind, who, detail in r.recorder.log:
        if kind in ("node-fault", "spot-notice"):
            in_service[who] = False
        elif kind == "node-healthy":
            in_service[who] = detail.startswith("in service")
        elif kind in ("spare-in", "spot-back"):
            in_service[who] = True
        elif kind == "start":
            assert all(in_service[n] for n in detail.split(",")), (who, detail)
        elif kind == "bind":
            assert in_service[detail.rsplit("@", 1)[1]], (who, detail)
