"""Per-GPU columns of the node table: what fractional requests (MIG, soft shares) need to know.

Shape (nodes × G), G = the most GPUs any node has; GPU ``g`` of node ``n`` exists when
``g < gpu_total[n]`` (padding GPUs are marked full so they never host anything).

* ``milli_free``: thousandths of the GPU's compute free for soft shares (1000 when untouched).
* ``mem_free``: GB of the GPU's memory free for soft shares.
* ``share_mode``: 0 none, else the soft-share mode using the GPU (1 timeslice, 2 mps, 3 milli).
* ``owner``: tenant index of the soft shares on the GPU (−1 none); see ``GpuColumns.tenants``.
* ``mig_mask``: occupied MIG memory slices (model/mig.py), 0 when no instance is placed.
* ``mig_configured``: the GPU is in MIG mode (stays so when its instances leave, so the next MIG
  pod needs no reconfiguration).
* ``idle_configured`` (per node): GPUs in MIG mode with no instance — idle, counted in gpu_free.

Invariants (checked by tests/property/test_fractional_invariants.py):

* A GPU is *idle* when it has no soft share (milli_free == 1000) and no MIG instance (mask 0).
  ``NodeTable.gpu_free[n]`` = idle GPUs of node n that no whole-GPU pod holds. Whole-GPU pods stay
  anonymous (they hold a count, not indices), so a fractional pod may use a fresh idle index only
  while gpu_free[n] ≥ 1 — the count is what guards it.
* ``idle_configured[n] ≤ gpu_free[n]``: when whole-GPU pods take more GPUs than there are idle
  unconfigured ones, the surplus idle MIG GPUs lose their MIG mode (they are the ones taken).
* milli_free ∈ [0, 1000]; no two soft shares of different tenants or modes on one GPU; no two
  MIG instances overlap (the mask is OR-ed only with free bits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpufleet.model.job import PodRequest, ShareMode
from gpufleet.model.mig import FULL_MASK, capacity_table, profile_for

MILLI = 1000
MODE_CODE = {ShareMode.TIMESLICE: 1, ShareMode.MPS: 2, ShareMode.MILLI: 3}


@dataclass(frozen=True, slots=True)
class GpuSlot:
    """Where a fractional pod sits on its node: the GPU index and, for MIG, the first memory slice.

    ``tenant`` owns a soft share (the tenant rule); ``reconfigure`` says this pod needed the GPU's
    MIG mode changed (it waits ``MIG_RECONFIGURE_S`` before running).
    """

    gpu: int
    mig_start: int = -1
    tenant: str = ""
    reconfigure: bool = False


@dataclass(slots=True)
class GpuColumns:
    milli_free: np.ndarray      # int32 (nodes, G)
    mem_free: np.ndarray        # float64 (nodes, G)
    share_mode: np.ndarray      # int8 (nodes, G)
    owner: np.ndarray           # int32 (nodes, G)
    mig_mask: np.ndarray        # int16 (nodes, G)
    mig_configured: np.ndarray  # bool (nodes, G)
    idle_configured: np.ndarray  # int64 (nodes,)
    valid: np.ndarray           # bool (nodes, G), static
    gpu_mem_gb: np.ndarray      # float64 (nodes,), static
    #: Tenant names by index (append-only, shared by copies: an intern table, not state).
    tenants: list[str]
    reconfigurations: int = 0

    @classmethod
    def empty(cls, gpu_total: np.ndarray, gpu_mem_gb: np.ndarray) -> GpuColumns:
        n = len(gpu_total)
        g = int(gpu_total.max()) if n else 0
        valid = np.arange(g)[None, :] < gpu_total[:, None]
        return cls(
            milli_free=np.where(valid, MILLI, 0).astype(np.int32),
            mem_free=np.where(valid, gpu_mem_gb[:, None], 0.0),
            share_mode=np.zeros((n, g), np.int8),
            owner=np.full((n, g), -1, np.int32),
            mig_mask=np.where(valid, 0, FULL_MASK).astype(np.int16),
            mig_configured=np.zeros((n, g), bool),
            idle_configured=np.zeros(n, np.int64),
            valid=valid, gpu_mem_gb=gpu_mem_gb, tenants=[],
        )

    def copy(self) -> GpuColumns:
        return GpuColumns(self.milli_free.copy(), self.mem_free.copy(), self.share_mode.copy(),
                          self.owner.copy(), self.mig_mask.copy(), self.mig_configured.copy(),
                          self.idle_configured.copy(), self.valid, self.gpu_mem_gb, list(self.tenants),
                          self.reconfigurations)

    def tenant_index(self, tenant: str) -> int:
        try:
            return self.tenants.index(tenant)
        except ValueError:
            self.tenants.append(tenant)
            return len(self.tenants) - 1

    def tenant_index_if_known(self, tenant: str) -> int:
        return self.tenants.index(tenant) if tenant in self.tenants else -2

    @property
    def idle(self) -> np.ndarray:
        """(nodes, G) GPUs with no fractional use (some may still be held by whole-GPU pods)."""
        return self.valid & (self.milli_free == MILLI) & (self.mig_mask == 0)

    # --- counting room, vectorised over (nodes × G) ---------------------------------------

    def soft_room(self, req: PodRequest, owner: int | None) -> np.ndarray:
        """(nodes, G) pods of soft share ``req`` each GPU already softly shared can take:
        same mode, (with ``owner``) same tenant, floor of free milli and memory."""
        mode = MODE_CODE[req.share or ShareMode.MILLI]
        ok = (self.share_mode == mode) & (self.milli_free < MILLI)
        if owner is not None:
            ok &= self.owner == owner
        room = self.milli_free // req.gpu_milli
        if req.gpu_memory_gb > 0:
            room = np.minimum(room, (self.mem_free / req.gpu_memory_gb + 1e-9).astype(np.int32))
        return np.where(ok, room, 0)

    def soft_per_fresh_gpu(self, req: PodRequest) -> np.ndarray:
        """(nodes,) pods of ``req`` one idle GPU of each node would take."""
        room = np.full(len(self.gpu_mem_gb), MILLI // req.gpu_milli, np.int64)
        if req.gpu_memory_gb > 0:
            room = np.minimum(room, (self.gpu_mem_gb / req.gpu_memory_gb + 1e-9).astype(np.int64))
        return room

    def mig_lut(self, models: tuple[str, ...], profile: str) -> np.ndarray:
        """(models, 256) instances of ``profile`` that still fit beside each occupied mask."""
        return np.array([capacity_table(m, profile) for m in models], np.int64)

    def mig_room(self, lut: np.ndarray, model_idx: np.ndarray) -> np.ndarray:
        """(nodes, G) instances that fit on GPUs already holding MIG instances (mask ≠ 0)."""
        room = lut[model_idx.astype(np.int64)[:, None], self.mig_mask]
        return np.where(self.valid & (self.mig_mask != 0), room, 0)

    # --- state changes --------------------------------------------------------------------

    def take(self, node: int, req: PodRequest, slot: GpuSlot, model: str, gpu_free: np.ndarray) -> None:
        g = slot.gpu
        was_idle = self.milli_free[node, g] == MILLI and self.mig_mask[node, g] == 0
        if was_idle:
            gpu_free[node] -= 1
            if self.mig_configured[node, g]:
                self.idle_configured[node] -= 1
        if req.mig_profile is not None:
            p = profile_for(model, req.mig_profile)
            assert p is not None, f"{model} has no MIG profile {req.mig_profile}"
            bits = p.bits(slot.mig_start)
            assert not self.mig_mask[node, g] & bits, "MIG slices double-booked"
            if not self.mig_configured[node, g]:
                self.mig_configured[node, g] = True
                self.reconfigurations += 1
            self.mig_mask[node, g] |= bits
            return
        if self.mig_configured[node, g]:      # a soft share on an idle MIG GPU: MIG mode off
            self.mig_configured[node, g] = False
            self.reconfigurations += 1
        self.milli_free[node, g] -= req.gpu_milli
        self.mem_free[node, g] -= req.gpu_memory_gb
        self.share_mode[node, g] = MODE_CODE[req.share or ShareMode.MILLI]
        self.owner[node, g] = self.tenant_index(slot.tenant)

    def give(self, node: int, req: PodRequest, slot: GpuSlot, model: str, gpu_free: np.ndarray) -> None:
        g = slot.gpu
        if req.mig_profile is not None:
            p = profile_for(model, req.mig_profile)
            assert p is not None
            self.mig_mask[node, g] &= ~p.bits(slot.mig_start)
            if self.mig_mask[node, g] == 0:
                gpu_free[node] += 1
                self.idle_configured[node] += 1
            return
        self.milli_free[node, g] += req.gpu_milli
        self.mem_free[node, g] += req.gpu_memory_gb
        if self.milli_free[node, g] == MILLI:
            self.share_mode[node, g] = 0
            self.owner[node, g] = -1
            self.mem_free[node, g] = self.gpu_mem_gb[node]
            gpu_free[node] += 1

    def whole_taken(self, node: int, gpu_free: np.ndarray) -> None:
        """After whole GPUs were taken: keep idle_configured ≤ gpu_free by ending MIG mode on the
        surplus idle MIG GPUs (highest index first), one reconfiguration each."""
        surplus = int(self.idle_configured[node] - gpu_free[node])
        if surplus <= 0:
            return
        idle_cfg = np.flatnonzero(self.mig_configured[node] & self.idle[node])[::-1][:surplus]
        self.mig_configured[node, idle_cfg] = False
        self.idle_configured[node] -= len(idle_cfg)
        self.reconfigurations += len(idle_cfg)
