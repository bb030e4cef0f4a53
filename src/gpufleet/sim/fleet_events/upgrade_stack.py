"""The software stack of each node in a driver rollout: driver, Fabric Manager, kernel.

The node's software stack (``UpgradeConfig.from_driver``/``to_driver``, ``nodes``, ``kernel``):
each node has a driver, a Fabric Manager and a kernel; a mixed fleet starts with several drivers
(``NodeStart`` entries matched by node name). What really happens on a mismatch (ops reference
§2.2, §8.2; reliability reference §6.1):

- **Driver, then Fabric Manager.** On an NVSwitch system (HGX/DGX) the driver is installed first
  and the FM package after it (``fm_s`` seconds; 0: one step). Between the two, and whenever the
  FM's version differs from the driver's, ``nv-fabricmanager`` refuses to start ("fabric manager
  NVIDIA GPU driver interface version … don't match with driver version …", then
  ``status=1/FAILURE``) and every CUDA program fails with error 802 "system not yet initialized":
  the node runs no GPU work at all, not only NVLink work. The node is still cordoned then; if the
  rollout installs an FM other than the new driver (``fabric_manager``, an unpinned package as in
  NVIDIA/gpu-driver-container#735: FM 590.48.01 beside driver 580.126.09, the cuda-validator
  failed) the node fails validation (``fm-mismatch``) and waits for repair, which pins the pair. A
  node that *starts* with FM ≠ driver is held out of service until its wave installs a matching
  pair.
- **Kernel ↔ driver module.** A node whose kernel is older than the new driver's floor
  (model/driver_compat.py ``kernel_ok``) cannot build/load the module: it fails validation
  (``kernel-too-old``); its repair upgrades the kernel (an assumption).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from typing import TYPE_CHECKING

from gpufleet.model.driver_compat import kernel_ok
from gpufleet.sim.fleet_events.failures import FM_MISMATCH_KIND, KERNEL_KIND

if TYPE_CHECKING:
    from gpufleet.sim.fleet_events.upgrade import UpgradeConfig, UpgradeState


@dataclass(frozen=True, slots=True)
class NodeStart:
    """Where the nodes whose name matches ``match`` (fnmatch: ``g0-n000*``) start: their driver,
    Fabric Manager and kernel (None: the rollout's ``from_driver``, FM = driver, ``kernel``)."""

    match: str
    driver: str | None = None
    fabric_manager: str | None = None
    kernel: str | None = None


def stacks(cfg: UpgradeConfig, names: list[str]) -> tuple[list[str], list[str], list[str | None]]:
    """Each node's starting (driver, FM, kernel): the last ``NodeStart`` matching its name wins."""
    base = cfg.from_driver or ""
    drivers, fms, kernels = [base] * len(names), [""] * len(names), [cfg.kernel] * len(names)
    for ns in cfg.nodes:
        if not any(fnmatch(name, ns.match) for name in names):
            raise ValueError(f"upgrade nodes: {ns.match!r} matches no node (names look like {names[0]})")
        for i, name in enumerate(names):
            if fnmatch(name, ns.match):
                drivers[i] = ns.driver or drivers[i]
                fms[i] = ns.fabric_manager or fms[i]
                kernels[i] = ns.kernel or kernels[i]
    fms = [f or d for f, d in zip(fms, drivers, strict=True)]
    return drivers, fms, kernels


def driver_installed(us: UpgradeState, node: int, fm: bool = True) -> None:
    """``node`` now runs the driver the rollout is at (the new one, or its own after a rollback),
    and with ``fm`` the matching Fabric Manager too."""
    driver, fab = us.target(node)
    us.drivers_seq += us.driver[node] != driver
    us.driver[node] = driver
    if fm:
        us.fm[node] = fab


def stack_problem(us: UpgradeState, node: int) -> tuple[str | None, int]:
    """Why the node's new stack cannot run CUDA (kernel too old for the module; FM ≠ driver on
    an NVSwitch system), with the failure kind; (None, 0) when it can."""
    d, k = us.driver[node], us.kernel[node]
    if d and k is not None:
        ok, why = kernel_ok(d, k)
        if not ok:
            us.ledger.nodes_kernel_too_old += 1
            return why, KERNEL_KIND
    if us.cfg.nvswitch and us.fm[node] != d:
        us.ledger.nodes_fm_mismatch += 1
        return (f"Fabric Manager {us.fm[node]} ≠ driver {d}: nv-fabricmanager exits, CUDA fails with "
                "802"), FM_MISMATCH_KIND
    return None, 0


def repair_installs(us: UpgradeState, node: int) -> None:
    """A node handed to repair comes back with the rollout's driver, a matching Fabric Manager
    and a kernel that builds its module (the repair's technician pins the pair, updates the
    kernel)."""
    driver_installed(us, node)
    us.fm[node] = us.driver[node]
    us.kernel[node] = None
    us.held.discard(node)


def repair_pins_fabric_manager(us: UpgradeState, node: int) -> None:
    """A node held out of service for FM ≠ driver that went through a repair for another fault
    comes back with its Fabric Manager pinned to its current driver (the technician's
    validation runs CUDA, which fails with 802 until the pair matches): it takes work again on
    its old driver and is upgraded in its wave like any other. Without this the repaired node
    would run jobs while the model still called it unable to run CUDA."""
    us.fm[node] = us.driver[node]
    us.held.discard(node)
