"""From a diagnosis verdict (layer, action) to the node-health machine's own events, states and label.

There is one health vocabulary (model/health.py): the machine's states and events, and the coarse
fleet label (``model.fleet.NodeHealth``) each state shows as. A verdict speaks it too: the events are
the ones ``ops.health_moves.verdict_moves`` walks (each an edge of ``model.health.TRANSITIONS``), the
state is where the walk ends, and the label is ``fleet_label`` of that state — what a fleet config, the
Slurm and Kubernetes adapters and the simulator would call the node.

The reasoning per action (``ACTION_WHY``):
- ``drain_and_rma``: the part is broken (row-remap failure, missing NVSwitch): out of service, RMA.
- ``reset_gpu`` / ``reboot`` / ``reinstall_driver`` / ``restart_fabricmanager`` /
  ``reseat_or_replace_cable`` / ``fix_runtime_config`` / ``restart_device_plugin``: the node must stop
  taking work and be repaired, then prove itself in pre-flight before it takes work again.
- ``remove_taint``: Kubernetes state only; nothing moves.
- ``none`` with a layer: an observation below the fault threshold (thermal or power-brake slowdown):
  suspect — no new work until someone looks (label ``draining``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpufleet.model.health import HealthState, fleet_label
from gpufleet.ops.health_moves import verdict_moves

#: Why each action moves the node as it does (the module docstring's reasoning, one line each).
ACTION_WHY: dict[str, str] = {
    "none": "nothing to do",
    "drain_and_rma": "hardware fault: replace the part",
    "reset_gpu": "GPU reset needs an idle GPU",
    "reboot": "reboot needs an idle node",
    "reinstall_driver": "driver work needs an idle node",
    "restart_fabricmanager": "NVSwitch fabric down: no CUDA job can start",
    "reseat_or_replace_cable": "hands-on repair: a degraded link slows every gang on the node",
    "fix_runtime_config": "GPUs are fine; new containers cannot get them",
    "restart_device_plugin": "GPUs are fine; Kubernetes cannot allocate them",
    "remove_taint": "scheduling state only",
}


@dataclass(frozen=True)
class HealthVerdict:
    """What a verdict does to a node in ``start``: the machine's events in order, the state it ends
    in, that state's fleet label, and why."""

    start: str
    events: tuple[str, ...]
    state: str
    fleet_label: str
    why: str

    def to_dict(self) -> dict:
        return asdict(self)


def health_verdict(layer: str, action: str, start: HealthState = HealthState.HEALTHY) -> HealthVerdict:
    """The machine's moves for a verdict from ``start`` (IllegalTransition if the machine forbids
    them); a fault with no node action (thermal slowdown) makes the node suspect."""
    moves = verdict_moves(start, layer, action)
    end = moves[-1].to if moves else start
    watch = layer != "none" and action == "none"
    why = "a condition to watch, no repair action" if watch else ACTION_WHY[action]
    return HealthVerdict(str(start), tuple(str(m.event) for m in moves), str(end), str(fleet_label(end)), why)
