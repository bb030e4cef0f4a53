"""Serverless cold start of a 7B model: the chain, what deleting each link buys, the warm pool.

The chain is serial: image pull → container start → weight load → CUDA/engine init → first token.

* image pull   = image GB ÷ registry GB/s (lazy loading: × the lazy factor; the rest of the
                 download moves into run time, which this chain does not count)
* container    = the runtime's start time (runc)
* weight load  = params × bytes/param ÷ source GB/s (7 × 10⁹ × 2 B = 14 GB)
* engine init  = Python imports, CUDA context, profiling, KV-cache allocation, graph capture
* first token  = the first request after a cold boot (JIT, caches cold)

Removals: lazy image loading shrinks the pull; a local weight cache swaps the source bandwidth
for NVMe/page-cache bandwidth; a process snapshot with its GPU memory replaces weight load +
engine init + cold first token by one restore (snapshot GB ÷ restore GB/s) and a warm first
token; a warm pool removes everything but the warm first token, for the requests that find a
warm instance free — the fraction Erlang B says miss it still pay the cold path.
"""

from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import norm

from gpufleet.econ.queueing import (
    burst_spare,
    erlang_b,
    erlang_c,
    pool_for_loss,
    pool_for_wait,
    simulate_loss,
)
from gpufleet.studies.estimate import Estimate, t_interval


@dataclass(frozen=True)
class Link:
    name: str
    seconds: float
    arithmetic: str


@dataclass(frozen=True)
class Variant:
    name: str
    links: tuple[Link, ...]

    @property
    def total_s(self) -> float:
        return sum(link.seconds for link in self.links)


def weights_gb(c: dict) -> float:
    return c["model_params_b"] * c["bytes_per_param"]


def cold_chain(c: dict, lazy: bool = False, local_cache: bool = False) -> tuple[Link, ...]:
    pull = c["image_gb"] / c["image_pull_gb_per_s"]
    pull_txt = f"{c['image_gb']:g} GB ÷ {c['image_pull_gb_per_s']:g} GB/s"
    if lazy:
        pull *= c["lazy_pull_speedup"]
        pull_txt += f" × {c['lazy_pull_speedup']:g} (lazy)"
    bw = c["local_cache_gb_per_s"] if local_cache else c["weight_source_gb_per_s"]
    w = weights_gb(c)
    return (
        Link("image pull", pull, pull_txt),
        Link("container start", c["container_start_s"], "runc"),
        Link("weight load", w / bw, f"{c['model_params_b']:g}e9 × {c['bytes_per_param']:g} B = {w:g} GB "
             f"÷ {bw:g} GB/s" + (" (local cache)" if local_cache else "")),
        Link("CUDA/engine init", c["engine_init_s"], "measured (vLLM logs)"),
        Link("first token", c["first_token_cold_s"], "first request after a cold boot"),
    )


def snapshot_chain(c: dict) -> tuple[Link, ...]:
    pull = c["image_gb"] / c["image_pull_gb_per_s"] * c["lazy_pull_speedup"]
    restore = c["snapshot_gb"] / c["snapshot_restore_gb_per_s"]
    return (
        Link("image pull", pull, "lazy"),
        Link("container start", c["container_start_s"], "runc"),
        Link("snapshot restore", restore,
             f"{c['snapshot_gb']:g} GB ÷ {c['snapshot_restore_gb_per_s']:g} GB/s "
             "(weights + initialised engine)"),
        Link("first token", c["first_token_warm_s"], "warm process"),
    )


def variants(c: dict) -> list[Variant]:
    return [
        Variant("cold (every link)", cold_chain(c)),
        Variant("lazy image loading", cold_chain(c, lazy=True)),
        Variant("local weight cache", cold_chain(c, local_cache=True)),
        Variant("lazy image + local cache", cold_chain(c, lazy=True, local_cache=True)),
        Variant("process + GPU snapshot", snapshot_chain(c)),
        Variant("warm pool hit", (Link("first token", c["first_token_warm_s"], "warm instance"),)),
    ]


@dataclass(frozen=True)
class WarmPool:
    offered_erlangs: float
    size_loss: int
    p_cold: float
    p_cold_one_fewer: float
    size_wait: int
    p_wait: float
    z: float
    sqrt_staffing: float
    burst_spare_cold: int
    burst_spare_snapshot: int
    cost_per_hr: float
    utilisation: float
    simulated_p_cold: dict
    simulated_p_cold_one_fewer: dict
    simulated_size: int | None
    simulated_agrees: bool
    expected_latency_s: float


def sqrt_staffing_z(target: float) -> float:
    """z of square-root staffing N ≈ A + z√A for a target P(cold) ε: the normal quantile Φ⁻¹(1 − ε)
    (Halfin & Whitt 1981: the number busy in a big pool is about Normal(A, A)), so
    ε = 0.01 gives 2.326 and ε = 0.001 gives 3.090."""
    return float(norm.ppf(1.0 - target))


def simulated_loss(n: int, lam: float, hold: float, arrivals: int, seeds: range) -> Estimate:
    """Simulated P(cold) with ``n`` warm instances: the mean over ``seeds`` independent runs of
    ``arrivals`` each, with its 95% t-interval (studies/estimate.py)."""
    return t_interval(simulate_loss(n, lam, hold, arrivals, seed) for seed in seeds)


def warm_pool(c: dict, cold_s: float, snapshot_s: float, seed: int = 1, arrivals: int = 1_000_000,
              seeds: int = 8) -> WarmPool:
    """Pool sizes for the target, and the simulated check that can fail: the Erlang size N and
    N − 1 are both simulated over ``seeds`` seeds. The simulation sizes the pool at N only when the
    interval at N lies wholly under the target and the one at N − 1 wholly over it; it agrees with
    Erlang B when B(N) and B(N − 1) each lie inside their interval.

    Resolution: at A = 60, B(74) = 1.05% against a 1% target is a 5% difference; one run of 10⁶
    arrivals has a relative spread of about 4% at P ≈ 1% (blocked arrivals come in bursts, so
    about 2× the binomial 1/√(10⁶ × 0.01) = 1%), and 8 seeds bring the half-width to
    2.365 × 4% / √8 ≈ 3.4%: enough to tell 74 from 75."""
    lam, hold, eps = c["arrival_rate_per_s"], c["hold_s"], c["target_cold_probability"]
    a = lam * hold
    n = pool_for_loss(a, eps)
    nw = pool_for_wait(a, eps)
    runs = range(seed, seed + seeds)
    at_n = simulated_loss(n, lam, hold, arrivals, runs)
    below = simulated_loss(n - 1, lam, hold, arrivals, runs) if n > 1 else None
    b, b_below = erlang_b(n, a), (erlang_b(n - 1, a) if n > 1 else 1.0)
    resolved = at_n.n >= 2 and at_n.high < eps and (below is None or below.low > eps)
    agrees = at_n.contains(b) and (below is None or below.contains(b_below))
    z = sqrt_staffing_z(eps)
    warm = c["first_token_warm_s"]
    return WarmPool(
        offered_erlangs=a, size_loss=n, p_cold=b, p_cold_one_fewer=b_below, size_wait=nw,
        p_wait=erlang_c(nw, a), z=z, sqrt_staffing=a + z * a ** 0.5,
        burst_spare_cold=burst_spare(lam, cold_s), burst_spare_snapshot=burst_spare(lam, snapshot_s),
        cost_per_hr=n * c["gpu_price_per_hr"], utilisation=a * (1 - b) / n,
        simulated_p_cold=at_n.as_dict(),
        simulated_p_cold_one_fewer=below.as_dict() if below is not None else {},
        simulated_size=n if resolved else None, simulated_agrees=agrees,
        expected_latency_s=(1 - b) * warm + b * cold_s)


def plan_coldstart(c: dict, seed: int = 1, arrivals: int = 1_000_000, seeds: int = 8) -> dict:
    vs = variants(c)
    base = vs[0].total_s
    pool = warm_pool(c, base, vs[4].total_s, seed, arrivals, seeds)
    return {
        "weights_gb": weights_gb(c),
        "variants": [{"name": v.name, "total_s": v.total_s, "saves_s": base - v.total_s,
                      "saves_pct": 100 * (base - v.total_s) / base,
                      "links": [vars(link) for link in v.links]} for v in vs],
        "warm_pool": vars(pool),
    }
