"""Reading one log in time order: a later line that supersedes an earlier one, and a fault that
comes back after a reboot.

Supersession. Newer drivers sum up what a GPU needs after an error in an Xid 154 line,
"GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)" (NVIDIA Xid catalog; the
nvidia-smi -q field "GPU Recovery Action" reads the same state). That line is the driver's verdict on
every Xid it logged for that GPU before it, so it replaces them as the finding: its action is the
action, and the Xids it sums up follow it as evidence. A later 154 for the same GPU supersedes an
earlier one (the action can rise from Reset to Reboot, or fall back to None once the GPU recovered);
a 154 that ends at None turns the Xids before it into history. Xids logged after the last 154 are
judged on their own. The generic Xid 154 catalog row ("the driver's summary") is not reported
beside the recovery finding.

Recurrence. A reboot clears a fault only once: if the same fault (same rule, same GPU or switch)
shows in two or more boots of one kernel log, the reboot did not fix it, and the part is replaced
(a GPU that falls off the bus again after a reboot is the RMA case of ops-reference §1.2). Boots are
the boot markers of ``rules.BOOT_MARKER`` and, for logs without them, the points where the kernel's
own timestamps jump back (``[ 1843.3]`` then ``[    2.6]``): within one boot they only grow.
"""

from __future__ import annotations

import re
from bisect import bisect_right

import numpy as np

from gpufleet.ops.bundle import Source
from gpufleet.ops.layers import Finding
from gpufleet.ops.scan import indexed

RECOVERY_RULE = "xid-154-action"
_STAMP = re.compile(r"^(?:(?:<\d+>)?\[\s*(\d+\.\d+)\])?", re.MULTILINE)
#: a jump back of more than this many seconds, to under half the previous stamp, is a new boot
#: (printk stamps from different CPUs can be out of order by microseconds, never by seconds)
BACKWARD_S = 5.0
#: actions a reboot is meant to fix; a fault with one of them that survives a reboot needs the part
REBOOT_FIXES = frozenset({"reboot", "reset_gpu"})
HARDWARE_LAYERS = frozenset({"hardware_pci", "gpu_xid", "nvlink_fabric"})


def supersede(found: list[tuple[Finding, int]]) -> list[tuple[Finding, int]]:
    """Fold each GPU's Xids into the last recovery-action line logged after them (module doc)."""
    last: dict[str, tuple[Finding, int]] = {}
    for f, line in found:
        if f.rule == RECOVERY_RULE and f.subject:
            last[f.subject] = (f, line)
    if not last:
        return found
    out: list[tuple[Finding, int]] = []
    folded: dict[str, list[Finding]] = {s: [] for s in last}
    for f, line in found:
        head = last.get(f.subject)
        if head is None or f is head[0] or line > head[1] or not f.rule.startswith("xid-"):
            out.append((f, line))
            continue
        if f.rule == RECOVERY_RULE or f.rule == "xid-154":
            continue  # an earlier recovery action (replaced), or the generic row of a 154 line
        folded[f.subject].append(f)
    for subject, (head, _) in last.items():
        earlier = folded[subject]
        if not earlier:
            continue
        codes = ", ".join(dict.fromkeys(f.failure.split(":")[0] for f in earlier))
        if head.action == "none":
            for f in earlier:
                f.history = True
                f.failure += f" — then the driver reported recovery action None ({head.evidence[0].render()})"
            out.extend((f, f.evidence[0].line) for f in earlier)
        else:
            head.failure += f" after {codes} on GPU {subject}"
            head.evidence.extend(e for f in earlier for e in f.evidence)
            head.confirm = head.confirm or earlier[0].confirm
    return out


def boot_lines(src: Source, markers: list[int]) -> list[int]:
    """Lines that start a new boot: the markers given plus the kernel-timestamp jumps back. One regex
    pass over the joined text (``scan.indexed``) yields each line's stamp or "" (the pattern matches,
    possibly empty, once at every line start); numpy compares each stamp with the one before it."""
    text, _ = indexed(src)
    stamps = np.array([v or "nan" for v in _STAMP.findall(text)], dtype=float)
    lines = np.flatnonzero(~np.isnan(stamps))  # 0-based lines that carry a stamp
    t = stamps[lines]
    prev, cur = t[:-1], t[1:]
    jumps = lines[1:][(prev - cur > BACKWARD_S) & (cur < prev / 2)]
    return sorted(set(markers) | {int(i) + 1 for i in jumps})


def escalate_recurrent(found: list[tuple[Finding, int]], boots: list[int]) -> None:
    """A hardware fault seen in two or more boots of the log: replace the part (module doc)."""
    if not boots:
        return
    segments: dict[tuple[str, str], set[int]] = {}
    for f, line in found:
        if f.normal or f.layer not in HARDWARE_LAYERS or f.action not in REBOOT_FIXES:
            continue
        segments.setdefault((f.rule or f.failure, f.subject), set()).add(bisect_right(boots, line))
    for f, line in found:
        seen = segments.get((f.rule or f.failure, f.subject), set())
        if len(seen) >= 2 and bisect_right(boots, line) < max(seen):
            f.failure += " — it came back in a later boot"
        elif len(seen) >= 2:
            f.action = "drain_and_rma"
            f.failure += f" — the same fault in {len(seen)} boots: a reboot does not clear it, replace it"
            f.confirm = (f.confirm + "; " if f.confirm else "") + "the earlier boot's lines are in the notes"
