"""The columnar view of the fleet the engine decides on: one numpy array per attribute.

Filters over it return boolean masks and scorers return vectors, so a placement question over
thousands of nodes is a handful of vector operations, not a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.engine.free_index import FreeIndex
from gpufleet.engine.gpu_state import GpuColumns, GpuSlot
from gpufleet.model.catalog import CATALOG
from gpufleet.model.fleet import Fleet
from gpufleet.model.job import PodRequest

#: Slots returned where a dimension is not requested: larger than any replica count.
UNBOUNDED = np.int64(1 << 40)


@dataclass(slots=True)
class NodeTable:
    names: tuple[str, ...]
    gpu_models: tuple[str, ...]     # distinct model names; model_idx indexes into it
    model_idx: np.ndarray           # int16 per node
    leaf_idx: np.ndarray            # int32 per node
    spine_idx: np.ndarray
    domain_idx: np.ndarray          # NVLink domain
    gpu_total: np.ndarray           # int64
    cpu_total: np.ndarray           # float64
    mem_total: np.ndarray
    gpu_free: np.ndarray
    cpu_free: np.ndarray
    mem_free: np.ndarray
    schedulable: np.ndarray         # bool
    #: Per-GPU state for MIG instances and soft shares (engine/gpu_state.py); None for tables
    #: built by hand, which then host whole-GPU requests only.
    per_gpu: GpuColumns | None = None
    #: Incremental (model, free GPUs) histogram for fast rejection; kept by take/give on tables
    #: that own their columns, absent on read-only views (``with_free``).
    index: FreeIndex | None = None
    #: At most this many pods of one request per node (Slurm's one task per node); None: no cap.
    pods_per_node: int | None = None
    #: The per-job node filter this view applies (``Job.eligible_nodes``, by name): nodes outside
    #: it read as unschedulable. None on the fleet's own table (``restricted`` makes such views).
    eligible: frozenset[str] | None = None
    #: The first node of each leaf when every leaf's nodes sit together in node order (a fleet
    #: file's groups do): the leaf rule then sums slots per leaf with one ``reduceat`` and reads
    #: a leaf's nodes as a slice (``filters.tightest_leaves``). None: not known to be so.
    leaf_start: np.ndarray | None = None
    #: Answers about this fleet when empty, shared by every copy and view of the fleet's table
    #: (``gang_search.empty_capacity``): they read the static columns only, and their keys hold
    #: the schedulable column and the request. None: not kept (``rows``).
    empty_answers: dict | None = None

    @classmethod
    def from_fleet(cls, fleet: Fleet) -> NodeTable:
        nodes = fleet.nodes
        models = tuple(sorted({n.gpu for n in nodes}))
        m_index = {m: i for i, m in enumerate(models)}

        def index_of(values: list[str]) -> np.ndarray:
            seen: dict[str, int] = {}
            return np.fromiter((seen.setdefault(v, len(seen)) for v in values), np.int32, len(values))

        gpu = np.array([n.gpus for n in nodes], np.int64)
        cpu = np.array([n.cpus for n in nodes], np.float64)
        mem = np.array([n.memory_gb for n in nodes], np.float64)
        table = cls(
            names=tuple(n.id for n in nodes),
            gpu_models=models,
            model_idx=np.array([m_index[n.gpu] for n in nodes], np.int16),
            leaf_idx=index_of([n.leaf for n in nodes]),
            spine_idx=index_of([n.spine for n in nodes]),
            domain_idx=index_of([n.nvlink_domain for n in nodes]),
            gpu_total=gpu, cpu_total=cpu, mem_total=mem,
            gpu_free=gpu.copy(), cpu_free=cpu.copy(), mem_free=mem.copy(),
            schedulable=np.array([n.health.schedulable for n in nodes], bool),
            per_gpu=GpuColumns.empty(gpu, np.array([CATALOG[n.gpu].memory_gb if n.gpu in CATALOG
                                                    else 0.0 for n in nodes], np.float64)),
        )
        table.index = FreeIndex.build(table.model_idx, table.gpu_free, table.schedulable,
                                      len(models), int(gpu.max()) if len(gpu) else 0)
        table.leaf_start = contiguous_starts(table.leaf_idx)
        table.empty_answers = {}
        return table

    def __len__(self) -> int:
        return len(self.names)

    def copy(self) -> NodeTable:
        """A copy whose free columns may be mutated; static columns are shared."""
        return NodeTable(
            self.names, self.gpu_models, self.model_idx, self.leaf_idx, self.spine_idx,
            self.domain_idx, self.gpu_total, self.cpu_total, self.mem_total,
            self.gpu_free.copy(), self.cpu_free.copy(), self.mem_free.copy(), self.schedulable.copy(),
            self.per_gpu.copy() if self.per_gpu is not None else None,
            self.index.copy() if self.index is not None else None,
            self.pods_per_node, self.eligible, self.leaf_start, self.empty_answers,
        )

    def with_free(self, gpu: np.ndarray, cpu: np.ndarray, mem: np.ndarray) -> NodeTable:
        """A read-only view of the same fleet with other free columns: capacity at another time,
        or under a reservation's limit. Search asks it questions (``slots``, ``fit``); nothing
        binds on it, so the per-GPU state is shared, not copied."""
        return NodeTable(
            self.names, self.gpu_models, self.model_idx, self.leaf_idx, self.spine_idx,
            self.domain_idx, self.gpu_total, self.cpu_total, self.mem_total, gpu, cpu, mem,
            self.schedulable, self.per_gpu, None, self.pods_per_node, self.eligible, self.leaf_start,
            self.empty_answers,
        )

    def rows(self, idx: np.ndarray) -> NodeTable:
        """The table of these nodes alone (copies of their columns), for questions about a few
        nodes: whole-GPU ones only (no per-GPU state, no free-capacity index)."""
        return NodeTable(
            names=tuple(self.names[i] for i in idx.tolist()), gpu_models=self.gpu_models,
            model_idx=self.model_idx[idx], leaf_idx=self.leaf_idx[idx], spine_idx=self.spine_idx[idx],
            domain_idx=self.domain_idx[idx], gpu_total=self.gpu_total[idx],
            cpu_total=self.cpu_total[idx], mem_total=self.mem_total[idx], gpu_free=self.gpu_free[idx],
            cpu_free=self.cpu_free[idx], mem_free=self.mem_free[idx],
            schedulable=self.schedulable[idx], per_gpu=None, index=None,
            pods_per_node=self.pods_per_node, eligible=self.eligible)

    def one_pod_per_node(self) -> NodeTable:
        """The same table (columns shared, not copied) in which a node takes at most one pod of a
        request: the node filter of a placer that gives every task a node of its own."""
        return NodeTable(
            self.names, self.gpu_models, self.model_idx, self.leaf_idx, self.spine_idx,
            self.domain_idx, self.gpu_total, self.cpu_total, self.mem_total, self.gpu_free,
            self.cpu_free, self.mem_free, self.schedulable, self.per_gpu, self.index, 1,
            self.eligible, self.leaf_start, self.empty_answers,
        )

    def restricted(self, eligible: frozenset[str], mask: np.ndarray) -> NodeTable:
        """The same table (free columns shared, not copied) in which only the nodes in ``mask``
        (the names in ``eligible``) are schedulable: the per-job node filter. Search asks it
        questions; binds go to the table it was made from, so it keeps no free-capacity index
        (``cannot_fit`` then answers "search to find out", never a wrong "cannot")."""
        both = eligible if self.eligible is None else self.eligible & eligible
        return NodeTable(
            self.names, self.gpu_models, self.model_idx, self.leaf_idx, self.spine_idx,
            self.domain_idx, self.gpu_total, self.cpu_total, self.mem_total, self.gpu_free,
            self.cpu_free, self.mem_free, self.schedulable & mask, self.per_gpu, None,
            self.pods_per_node, both, self.leaf_start, self.empty_answers,
        )

    def free_state(self) -> bytes:
        """The free columns as bytes: equal for two tables exactly when whole-node capacity
        questions (``slots``) get the same answers. A cache of answers about "this table" keys on
        it, because the same cycle asks about the plan (which changes as jobs bind) and about
        views of other times (reservation, backfill)."""
        return b"".join((self.gpu_free.astype(np.int64, copy=False).tobytes(),
                         self.cpu_free.astype(np.float64, copy=False).tobytes(),
                         self.mem_free.astype(np.float64, copy=False).tobytes(),
                         self.schedulable.tobytes(),
                         b"" if self.pods_per_node is None else self.pods_per_node.to_bytes(8, "little")))

    def cannot_fit(self, req: PodRequest, replicas: int) -> bool:
        """True when the free-capacity index proves ``replicas`` pods of ``req`` cannot fit now
        (whole-GPU requests on tables that keep an index); False means "search to find out"."""
        if self.index is None or req.gpus <= 0 or req.is_fractional:
            return False
        models = None
        if req.gpu_models:
            models = [i for i, m in enumerate(self.gpu_models) if m in req.gpu_models]
        return self.index.max_pods(req.gpus, models) < replicas

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_idx.max()) + 1 if len(self) else 0

    def model_mask(self, models: tuple[str, ...]) -> np.ndarray | None:
        """Nodes whose GPU model is allowed; None means every model is."""
        if not models:
            return None
        wanted = [i for i, m in enumerate(self.gpu_models) if m in models]
        return np.isin(self.model_idx, wanted)

    def slots(self, req: PodRequest, *, empty: bool = False, tenant: str | None = None) -> np.ndarray:
        """How many pods of ``req`` each node can take now (or when empty): min over dimensions of
        floor(free / asked), zero on unschedulable nodes and on disallowed models.

        A fractional request (MIG instance, soft share) counts per GPU (``fractional_gpu_slots``);
        with ``tenant``, soft shares count only GPUs that tenant may share (the tenant rule).
        """
        gpu, cpu, mem = (
            (self.gpu_total, self.cpu_total, self.mem_total) if empty
            else (self.gpu_free, self.cpu_free, self.mem_free)
        )
        g = req.gpus
        if req.is_fractional:
            s = self.fractional_gpu_slots(req, empty=empty, tenant=tenant)
        elif g <= 0:
            s = np.full(len(self), UNBOUNDED)
        elif isinstance(g, int) and gpu.dtype == np.int64 and g & (g - 1) == 0:
            # A power of two: the shift is the floor division (negative counts too), and cheaper.
            s = gpu >> (g.bit_length() - 1) if g > 1 else gpu.copy()
        else:
            s = gpu // g
        # The same float arithmetic as (free × (1 / asked) + 1e-9).astype(int64), with one
        # scratch array, and the minimum written into ``s`` (a new array in every branch).
        if req.cpus > 0:
            x = cpu * (1.0 / req.cpus)
            x += 1e-9
            s = np.minimum(s, x.astype(np.int64), out=s if s.dtype == np.int64 else None)
        if req.memory_gb > 0:
            x = mem * (1.0 / req.memory_gb)
            x += 1e-9
            s = np.minimum(s, x.astype(np.int64), out=s if s.dtype == np.int64 else None)
        mm = self.model_mask(req.gpu_models)
        ok = self.schedulable if mm is None else self.schedulable & mm
        s *= ok
        if self.pods_per_node is not None:
            s = np.minimum(s, self.pods_per_node)
        return s

    def fractional_gpu_slots(self, req: PodRequest, *, empty: bool = False,
                             tenant: str | None = None) -> np.ndarray:
        """Pods of a MIG or soft-share request per node, GPU dimension only (vectorised).

        = room on GPUs already in that use (MIG: the capacity table at each GPU's slice mask;
        soft: floor(free milli / asked), same mode and, with ``tenant``, same owner)
        + gpu_free × pods one idle GPU takes. Empty: gpu_total × pods one idle GPU takes.
        """
        pg = self.per_gpu
        if pg is None:
            return np.zeros(len(self), np.int64)
        if req.mig_profile is not None:
            lut = pg.mig_lut(self.gpu_models, req.mig_profile)
            fresh = lut[self.model_idx.astype(np.int64), 0]
            if empty:
                return self.gpu_total * fresh
            return pg.mig_room(lut, self.model_idx).sum(axis=1) + self.gpu_free * fresh
        fresh = pg.soft_per_fresh_gpu(req)
        if empty:
            return self.gpu_total * fresh
        owner = None if tenant is None else pg.tenant_index_if_known(tenant)
        return pg.soft_room(req, owner).sum(axis=1) + self.gpu_free * fresh

    def take(self, node: int, req: PodRequest, count: int = 1, slot: GpuSlot | None = None) -> None:
        """Hold capacity for ``count`` pods of ``req``; a fractional pod also needs its ``slot``
        (a fractional request without one holds CPU and memory only)."""
        gpu_free = self.gpu_free
        before = int(gpu_free[node])
        gpus = req.gpus * count
        if gpus:  # a zero is skipped: x - 0 is x, and each numpy scalar update costs a call
            gpu_free[node] -= gpus
        if req.cpus:
            self.cpu_free[node] -= req.cpus * count
        if req.memory_gb:
            self.mem_free[node] -= req.memory_gb * count
        pg = self.per_gpu
        if pg is not None:
            if slot is not None and req.is_fractional:
                pg.take(node, req, slot, self.gpu_models[self.model_idx[node]], gpu_free)
            elif req.gpus > 0 and pg.idle_configured[node] > gpu_free[node]:
                pg.whole_taken(node, gpu_free)
        # The free-capacity index follows here, not in a shared helper: take and give are the
        # what-if's most frequent calls (bench/README.md), and a helper call per take showed.
        after = int(gpu_free[node])
        if after != before and self.index is not None and self.schedulable[node]:
            self.index.move(int(self.model_idx[node]), before, after)

    def give(self, node: int, req: PodRequest, count: int = 1, slot: GpuSlot | None = None) -> None:
        gpu_free = self.gpu_free
        before = int(gpu_free[node])
        gpus = req.gpus * count
        if gpus:
            gpu_free[node] += gpus
        if req.cpus:
            self.cpu_free[node] += req.cpus * count
        if req.memory_gb:
            self.mem_free[node] += req.memory_gb * count
        if slot is not None and req.is_fractional and self.per_gpu is not None:
            self.per_gpu.give(node, req, slot, self.gpu_models[self.model_idx[node]], self.gpu_free)
        after = int(gpu_free[node])
        if after != before and self.index is not None and self.schedulable[node]:
            self.index.move(int(self.model_idx[node]), before, after)

    @property
    def gpus_allocated(self) -> int:
        # the ufunc's reduce, not ndarray.sum: the simulator's timeline asks at every instant,
        # and .sum's two Python frames were most of the cost at 32 nodes
        return int(np.add.reduce(self.gpu_total) - np.add.reduce(self.gpu_free))


def contiguous_starts(ids: np.ndarray) -> np.ndarray | None:
    """The first position of each id in ``ids`` (ids numbered by first appearance, as
    ``NodeTable.from_fleet`` numbers leaves) when each id's positions form one run, else None."""
    if ids.size == 0:
        return None
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    return starts if np.array_equal(ids[starts], np.arange(starts.size)) else None
