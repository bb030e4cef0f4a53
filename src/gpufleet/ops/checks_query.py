"""Checks of ``nvidia-smi --query-gpu=… --format=csv`` output: the same states ``-q`` shows, in the
field names scripts use.

- ``mig.mode.current`` ≠ ``mig.mode.pending``: a MIG mode change waits for a GPU reset (gpu-operator
  PR #2603: "the GPU then sits with mig.mode.pending=Enabled and mig.mode.current not Enabled");
- ``gpu_recovery_action`` other than ``None``: the driver asks for a reset or a reboot;
- ``clocks_event_reasons.hw_thermal_slowdown`` / ``hw_power_brake_slowdown`` / ``sw_thermal_slowdown``
  ``Active`` — or the same reasons under their old ``clocks_throttle_reasons.`` prefix: a condition to
  watch, as in ``-q``.

Rows whose MIG and recovery fields are all consistent vouch for the GPU-state layer now.
"""

from __future__ import annotations

from gpufleet.ops.bundle import Source
from gpufleet.ops.layers import Evidence, Finding
from gpufleet.ops.parse_smi import parse_smi_query

UNSET = frozenset({"", "N/A", "[N/A]", "[Not Supported]"})
SLOWDOWNS = ("hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def check_smi_query(src: Source, out: list[Finding], now: set[str]) -> None:
    rows = parse_smi_query(src.lines)
    read_any, all_ok = False, True
    for r in rows:
        v = r.values
        gpu = v.get("index") or v.get("uuid") or v.get("pci.bus_id") or f"row {r.line}"
        ev = [Evidence(src.name, r.line, src.lines[r.line - 1])]
        cur, pend = v.get("mig.mode.current", ""), v.get("mig.mode.pending", "")
        if cur not in UNSET and pend not in UNSET:
            read_any = True
            if cur != pend:
                all_ok = False
                out.append(Finding("gpu_xid", f"GPU {gpu}: MIG mode change pending ({cur} → {pend}): needs a "
                                   "GPU reset", "reset_gpu", "nvidia-smi --gpu-reset -i <gpu>  (or reboot)",
                                   ev, "mig-pending"))
        rec = v.get("gpu_recovery_action", "")
        if rec not in UNSET:
            read_any = True
            if rec != "None":
                all_ok = False
                out.append(Finding("gpu_xid", f"GPU {gpu}: driver asks for recovery action '{rec}'",
                                   "reboot" if "Reboot" in rec else "reset_gpu",
                                   "nvidia-smi -q | grep 'Recovery Action'", ev, "recovery-action"))
        for prefix in ("clocks_event_reasons.", "clocks_throttle_reasons."):
            for reason in SLOWDOWNS:
                if v.get(prefix + reason) == "Active":
                    out.append(Finding("thermal_power", f"GPU {gpu}: {prefix}{reason} Active", "none",
                                       "nvidia-smi -q -d PERFORMANCE,TEMPERATURE  (check airflow, PSU)", ev,
                                       "hw-slowdown"))
    if read_any and all_ok:
        now.add("gpu_xid")
