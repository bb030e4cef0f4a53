"""Which checks go in the two-minute gate, which in the long diagnostic, and whether either pays.

Gate choice: checks are independent detectors, each catching a share ``c_i`` of bad nodes in
``t_i`` seconds; a set S catches ``1 − Π(1 − c_i)``. Adding check i to a set that already catches Q
adds ``(1 − Q)·c_i``, so the best use of a fixed time budget is, to a good approximation, the checks
in order of ``c_i / t_i`` while they fit (a greedy knapsack; exact when the ratios are well apart).

Payoff per gang start of N nodes with G GPUs each, bad-node rate p, and a failed start costing H
hours of the whole gang (detect, drain, reschedule):
  P(start fails)            = 1 − (1 − p)^N
  with a gate catching q:     p' = p·(1 − q),  P' = 1 − (1 − p')^N
  saving (GPU-h)            = (P − P')·N·G·H
  gate cost (GPU-h)         = N·G·t_gate / 3600      (every node runs the gate before the start)
The gate pays when saving > cost. The long diagnostic is the same arithmetic with its own q and t.
One attempt per start is modelled (the retry after a failure is a new start).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpufleet.model.errors import InputError
from gpufleet.ops.preflight import CATALOG, CheckSpec


@dataclass
class GateOption:
    name: str
    checks: list[str]
    seconds: float
    catch: float
    p_fail_start: float
    saving_gpu_h: float
    cost_gpu_h: float

    @property
    def net_gpu_h(self) -> float:
        return self.saving_gpu_h - self.cost_gpu_h


@dataclass
class Plan:
    bad_node_rate: float
    nodes: int
    gpus_per_node: int
    failed_start_hours: float
    p_fail_no_gate: float
    options: list[GateOption]
    break_even_rate_long: float | None  # rate above which the long diagnostic nets more than the gate

    def to_dict(self) -> dict:
        d = asdict(self)
        for o, src in zip(d["options"], self.options, strict=True):
            o["net_gpu_h"] = src.net_gpu_h
        return d


def catch_of(specs: list[CheckSpec]) -> float:
    miss = 1.0
    for s in specs:
        miss *= 1 - s.catch
    return 1 - miss


def choose_gate(budget_s: float, catalog: dict[str, CheckSpec] = CATALOG) -> list[CheckSpec]:
    chosen: list[CheckSpec] = []
    used = 0.0
    for s in sorted(catalog.values(), key=lambda s: -s.catch / s.seconds):
        if used + s.seconds <= budget_s:
            chosen.append(s)
            used += s.seconds
    return chosen


def _p_fail(rate: float, nodes: int) -> float:
    return 1 - (1 - rate) ** nodes


def _option(name: str, specs: list[CheckSpec], rate: float, n: int, g: int, h: float) -> GateOption:
    q = catch_of(specs)
    secs = sum(s.seconds for s in specs)
    p0, p1 = _p_fail(rate, n), _p_fail(rate * (1 - q), n)
    return GateOption(name, [s.name for s in specs], secs, q, p1, (p0 - p1) * n * g * h, n * g * secs / 3600)


def plan(
    bad_node_rate: float,
    nodes: int,
    gpus_per_node: int,
    failed_start_hours: float,
    gate_seconds: float = 120.0,
    catalog: dict[str, CheckSpec] = CATALOG,
) -> Plan:
    for field, v, ok, what in (
        ("--bad-node-rate", bad_node_rate, 0 <= bad_node_rate < 1, "a fraction in [0, 1)"),
        ("--nodes", nodes, 1 <= nodes <= 100_000, "an integer from 1 to 100000"),
        ("--gpus-per-node", gpus_per_node, 1 <= gpus_per_node <= 72, "an integer from 1 to 72"),
        ("--failed-start-hours", failed_start_hours, 0 <= failed_start_hours <= 1e4, "hours in [0, 10000]"),
        ("--gate-seconds", gate_seconds, 0 < gate_seconds <= 86400, "seconds in (0, 86400]"),
    ):
        if v != v or not ok:
            raise InputError(field, "", f"expected {what} (got {v})")
    gate = choose_gate(gate_seconds, catalog)
    full = list(catalog.values())
    args = (bad_node_rate, nodes, gpus_per_node, failed_start_hours)
    options = [
        _option("none", [], *args),
        _option("two-minute gate", gate, *args),
        _option("long diagnostic", full, *args),
    ]
    return Plan(
        bad_node_rate,
        nodes,
        gpus_per_node,
        failed_start_hours,
        _p_fail(bad_node_rate, nodes),
        options,
        _break_even(gate, full, nodes, gpus_per_node, failed_start_hours),
    )


def _break_even(gate: list[CheckSpec], full: list[CheckSpec], n: int, g: int, h: float) -> float | None:
    """Smallest bad-node rate (scanned on a log grid from 1e-4 to 0.5) at which running the long
    diagnostic before a start nets more than the two-minute gate. The saving is not monotone in the
    rate (at very high rates every gang fails with or without a gate), hence a scan, not a bisection."""
    for i in range(0, 401):
        rate = 1e-4 * (0.5 / 1e-4) ** (i / 400)
        if _option("l", full, rate, n, g, h).net_gpu_h > _option("q", gate, rate, n, g, h).net_gpu_h:
            return rate
    return None
