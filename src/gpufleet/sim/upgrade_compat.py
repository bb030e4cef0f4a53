"""Which nodes a job's image may run on while a driver rollout is under way.

A job says which CUDA toolkit its image was built with by a label, ``("cuda", "13.0")`` in
``Job.labels`` — the model already carries labels and JSON-lines traces already read them
(``"labels": {"cuda": "13.0"}``), so no new field touches the model, the engine or the trace
format. The rollout (``UpgradeConfig.from_driver``/``to_driver``) knows every node's driver
(``UpgradeState.new_driver``). Before each engine cycle, every pending labelled job whose image the
compatibility matrix (sim/driver_compat.py) rejects on one of the two drivers gets a node filter
(``Job.eligible_nodes``) holding the nodes on the driver it runs on:

- runs on both (native, minor-compat, or forward-compat when allowed): unrestricted (None), so
  the engine decides exactly as without a label;
- ``no`` on the old driver (e.g. CUDA 13.0 on 550.54.14 < 580 floor): upgraded nodes only — none
  before the first wave, so it waits for the rollout;
- ``no`` on the new driver (a rollout to an older driver, e.g. a rollback from 580 to 550):
  old nodes only;
- neither: no node (it waits; ``plan upgrade`` calls it "nowhere").

The filter is intersected with the job's own (its trace's ``eligible_nodes``). Each cycle looks
only at jobs that (re)joined the queue since the last (``SimulatedCluster.entered``), and at the
restricted ones when a node changed driver: not at every pending job. A requeued job (drained by
a wave, failed, preempted) is pending again, so it meets the filter of the nodes' drivers at its
next cycle. A running job is never moved: its node changes driver only after the wave drains it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpufleet.sim.driver_compat import compat

if TYPE_CHECKING:
    from gpufleet.sim.upgrade import UpgradeState

#: The job label naming its image's CUDA toolkit (major.minor).
CUDA_LABEL = "cuda"


def image_cuda(labels: tuple[tuple[str, str], ...]) -> str | None:
    """The CUDA version a job's labels give its image, or None."""
    for k, v in labels:
        if k == CUDA_LABEL:
            return v
    return None


@dataclass
class CompatFilter:
    """Per-run cache: verdicts per CUDA version, the two node-name sets, each job's own filter."""

    #: CUDA version → (runs on the old driver, runs on the new driver).
    verdicts: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    seq: int = -1
    old_names: frozenset[str] = frozenset()
    new_names: frozenset[str] = frozenset()
    #: The filter each touched job had of its own (from its trace), by job id.
    own: dict[str, frozenset[str] | None] = field(default_factory=dict)
    #: Pending jobs whose image does not run on both drivers: the only ones a driver change moves.
    restricted: set[str] = field(default_factory=set)


def runs_on(us: UpgradeState, cuda: str, cache: CompatFilter) -> tuple[bool, bool]:
    v = cache.verdicts.get(cuda)
    if v is None:
        cfg = us.cfg
        assert cfg.from_driver is not None and cfg.to_driver is not None
        old = compat(cuda, cfg.from_driver, forward_compat=cfg.forward_compat)[0] != "no"
        new = compat(cuda, cfg.to_driver, forward_compat=cfg.forward_compat)[0] != "no"
        v = cache.verdicts[cuda] = (old, new)
    return v


def restrict(st) -> None:  # noqa: ANN001 (SimState)
    """Give each pending labelled job the node filter of the drivers its image runs on."""
    fs = st.fail
    us = fs.upgrade if fs is not None else None
    if us is None or us.cfg.from_driver is None or us.cfg.to_driver is None:
        return
    cache: CompatFilter = us.compat
    cluster = st.cluster
    names = cluster.table.names
    # on the first call every job queued so far is new to the filter
    check = list(cluster.pending) if cluster.entered is None else cluster.entered
    cluster.entered = []
    if cache.seq != us.drivers_seq:  # nodes changed driver: every restricted job again
        cache.seq = us.drivers_seq
        cache.new_names = frozenset(names[i] for i in us.new_driver)
        cache.old_names = frozenset(names[i] for i in range(len(names)) if i not in us.new_driver)
        cache.restricted = {j for j in cache.restricted if j in cluster.pending}
        check = [*check, *sorted(cache.restricted)]
    everyone = len(names)
    for jid in check:
        job = cluster.pending.get(jid)
        if job is None:
            continue
        cuda = image_cuda(job.labels)
        if cuda is None:
            continue
        try:
            ok_old, ok_new = runs_on(us, cuda, cache)
        except ValueError as e:
            raise ValueError(f"job {jid}: label {CUDA_LABEL}: {e}") from None
        if ok_old and ok_new:
            allowed = None
        else:
            cache.restricted.add(jid)
            allowed = cache.new_names if ok_new else cache.old_names if ok_old else frozenset()
        if allowed is not None and len(allowed) == everyone:
            allowed = None  # every node runs it now (the rollout is over)
        own = cache.own.setdefault(jid, job.eligible_nodes)
        target = allowed if own is None else (own if allowed is None else own & allowed)
        if job.eligible_nodes is target or job.eligible_nodes == target:
            continue
        cluster.replace_pending(replace(job, eligible_nodes=target))
