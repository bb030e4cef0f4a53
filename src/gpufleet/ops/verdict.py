"""From a diagnosis verdict (layer, action) to the node-health events the model applies.

The node-health state machine (issue 12 §5: healthy → suspect → draining → quarantined → diagnosing →
repaired → pre-flight → healthy, and RMA) lives in the model; this table is the contract between it and
``node diagnose``. Events are named after the machine's transitions; the lead wires them.

The reasoning per action:
- ``drain_and_rma``: the part is broken (row-remap failure, missing NVSwitch): drain, then RMA.
- ``reset_gpu`` / ``reboot`` / ``reinstall_driver`` / ``restart_fabricmanager`` /
  ``reseat_or_replace_cable``: the node must stop taking work, be repaired by hand or by automation,
  and prove itself in pre-flight before it takes work again: drain → quarantine → repair.
- ``fix_runtime_config`` / ``restart_device_plugin``: software on a healthy GPU; running jobs are not
  hurt (the GPU works), new placements fail: mark suspect (stop placing), repair, pre-flight.
- ``remove_taint``: Kubernetes state only; nothing to repair on the node: the node goes back to the
  pool after the taint is cleared (a pre-flight is still cheap insurance).
- ``none`` with a layer: an observation below the fault threshold (thermal slowdown): suspect.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# The events of the node-health state machine this module emits.
EVENTS = ("suspect", "drain", "quarantine", "repair", "preflight", "rma", "clear")


@dataclass(frozen=True)
class HealthEvent:
    events: tuple[str, ...]
    why: str

    def to_dict(self) -> dict:
        return asdict(self)


ACTION_EVENTS: dict[str, HealthEvent] = {
    "none": HealthEvent((), "nothing to do"),
    "drain_and_rma": HealthEvent(("drain", "rma"), "hardware fault: replace the part"),
    "reset_gpu": HealthEvent(("drain", "quarantine", "repair", "preflight"), "GPU reset needs an idle GPU"),
    "reboot": HealthEvent(("drain", "quarantine", "repair", "preflight"), "reboot needs an idle node"),
    "reinstall_driver": HealthEvent(
        ("drain", "quarantine", "repair", "preflight"), "driver work needs an idle node"
    ),
    "restart_fabricmanager": HealthEvent(
        ("drain", "quarantine", "repair", "preflight"), "NVSwitch fabric down: no CUDA job can start"
    ),
    "reseat_or_replace_cable": HealthEvent(
        ("drain", "quarantine", "repair", "preflight"),
        "hands-on repair: a degraded link slows every gang on the node",
    ),
    "fix_runtime_config": HealthEvent(
        ("suspect", "repair", "preflight"), "GPUs are fine; new containers cannot get them"
    ),
    "restart_device_plugin": HealthEvent(
        ("suspect", "repair", "preflight"), "GPUs are fine; Kubernetes cannot allocate them"
    ),
    "remove_taint": HealthEvent(("clear",), "scheduling state only"),
}


def health_event(layer: str, action: str) -> HealthEvent:
    """The events for a verdict; a fault with no node action (thermal slowdown) makes the node suspect."""
    if layer != "none" and action == "none":
        return HealthEvent(("suspect",), "a condition to watch, no repair action")
    return ACTION_EVENTS[action]
