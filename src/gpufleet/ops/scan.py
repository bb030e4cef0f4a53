"""Scan one file of a bundle against the rule table, the Xid catalog and the restart markers.

Why a prefilter: a day of a busy kernel log is ~90,000 lines and the table has ~45 rules plus the Xid
and recovery-action patterns. Trying every pattern on every line is 47 × 90,000 ≈ 4.2 million
``re.search`` calls (≈ 8 s on the 2-core build machine, bench/diagnose_scan.py). Almost no line
matches anything, so the scan runs each pattern that applies to the file's kind — compiled once per
(rule table, kind) — over the whole joined text in C (≈ 47 fast passes instead of 4 million calls),
collects the lines any of them hits, and builds findings only for those lines. (One alternation of
all patterns was tried first: Python's regex engine tries its branches one by one at every
character, and it was barely faster than the per-line loop.)

Exactness: each search runs with ``re.MULTILINE`` over the lines joined by "\n", so ``^`` and
``$`` mean line start and end as they do on a single line. A pattern with ``\\s`` could match across a
newline in the joined text; that can only add candidate lines (each is confirmed on its own line
with the original pattern) and never hide one, because after a hit the search resumes at the start
of the line after the hit's *first* line. ``scan_reference`` is the plain per-line, per-rule loop
the fast scan must equal; the tests compare the two on every fixture and on random mixes of real
lines.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate

from gpufleet.ops.bundle import Source
from gpufleet.ops.layers import Evidence, Finding
from gpufleet.ops.rules import BOOT_MARKER, RESTART_MARKERS, RULES, Rule
from gpufleet.ops.xid import RECOVERY_ACTION, RECOVERY_RE, SXID_RE, XID_RE, xid_layer


def message(src: Source, i: int) -> list[Evidence]:
    """The matched line and, when it continues a multi-line kernel message (indented continuation
    lines, as newer drivers print "fallen off the bus"), the lines back to where the message starts."""
    start = i
    while start > 1 and src.lines[start - 1][:1].isspace() and i - start < 4:
        start -= 1
    return [Evidence(src.name, n, src.lines[n - 1]) for n in range(start, i + 1)]


def _applicable(rules: tuple[Rule, ...], kind: str) -> tuple[Rule, ...]:
    return tuple(r for r in rules if r.kinds is None or kind in r.kinds)


def branches(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (``a|b(c|d)`` → ``a``, ``b(c|d)``). A branch that starts
    with a literal lets the regex engine jump between occurrences of that literal; the whole
    alternation cannot (≈ 10× slower per pass on a kernel log, bench/diagnose_scan.py)."""
    out, depth, cls, start, i = [], 0, False, 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if cls:
            cls = c != "]"
        elif c == "[":
            cls = True
            if pattern[i + 1 : i + 2] == "]":  # "[]…]": a literal ] first in the class
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    out.append(pattern[start:])
    return out


_META = frozenset(".^$*+?{}[]()|")


def required_prefix(branch: str) -> str:
    """The plain text every match of a regex branch starts with (after a ``^``): ``SXid.*Fatal`` →
    ``SXid``, ``No devices found\\. Waiting`` → the whole text, ``colou?r`` → ``colo``, ``.*x`` → "".

    Lines holding that text are a superset of the lines the branch matches, and ``str.find`` looks
    for it several times faster than the regex engine looks for the branch; the scan confirms every
    candidate line with the real patterns, so a superset is all the prefilter has to be."""
    out: list[str] = []
    i = 1 if branch.startswith("^") else 0
    while i < len(branch):
        c = branch[i]
        if c == "\\":
            nxt = branch[i + 1 : i + 2]
            if not nxt or nxt.isalnum():  # \d \b \s …: a class or an assertion, not a character
                break
            out.append(nxt)
            i += 2
            continue
        if c in _META:
            if c in "?*{" and out:  # the last character is optional (or counted): not required
                out.pop()
            break
        out.append(c)
        i += 1
    return "".join(out)


Needle = str | re.Pattern[str]
#: Shorter prefixes ("a", "Xi") hit too many lines to be worth it; the branch's regex runs instead.
MIN_PREFIX = 3


def _needles(pattern: re.Pattern[str]) -> tuple[Needle, ...]:
    """What to look for in the joined text for one pattern: per top-level branch, its required prefix
    when it has one of at least ``MIN_PREFIX`` characters, else the branch compiled with MULTILINE
    (so ``^``/``$`` keep their per-line meaning)."""
    out: list[Needle] = []
    for b in dict.fromkeys(branches(pattern.pattern)):
        pre = required_prefix(b) if not pattern.flags & re.IGNORECASE else ""
        out.append(pre if len(pre) >= MIN_PREFIX else re.compile(b, pattern.flags | re.MULTILINE))
    return tuple(out)


@lru_cache(maxsize=64)
def _prefilter(rules: tuple[Rule, ...], kind: str) -> tuple[tuple[Rule, ...], tuple[Needle, ...]]:
    """The rules that apply to ``kind`` and every pattern to look for (theirs, the Xid and the
    recovery-action pattern) compiled with MULTILINE, once per rule table and kind (the table is a
    hashable tuple, so a test that swaps it gets a fresh entry)."""
    mine = _applicable(rules, kind)
    parts = [r.pattern for r in mine] + [XID_RE, RECOVERY_RE, SXID_RE]
    return mine, tuple(n for p in parts for n in _needles(p))


def _match_line(src: Source, i: int, line: str, rules: tuple[Rule, ...]) -> list[tuple[Finding, int]]:
    """Every rule, Xid and recovery-action finding on line ``i`` (1-based) of ``src``."""
    out: list[tuple[Finding, int]] = []
    for rule in rules:
        if rule.pattern.search(line):
            f = Finding(rule.layer, rule.failure, rule.action, rule.confirm, message(src, i), rule.id,
                        normal=rule.normal)
            out.append((f, i))
    if m := SXID_RE.search(line):
        out.append((_sxid(src, i, line, m), i))
    if m := XID_RE.search(line):
        code = int(m.group(2))
        info = xid_layer(code)
        failure = f"Xid {code} ({info.mnemonic}): {info.meaning}"
        if info.app_level:
            failure += " — an application error, not a node fault"
        confirm = f"dmesg | grep -i xid; nvidia-smi -q -i {m.group(1).removeprefix('PCI:')}"
        out.append((Finding(info.layer, failure, info.action, confirm, [Evidence(src.name, i, line)],
                            f"xid-{code}", normal=info.app_level, subject=gpu_id(m.group(1))), i))
    if m := RECOVERY_RE.search(line):
        action = RECOVERY_ACTION.get(m.group(1), "reset_gpu")
        x = XID_RE.search(line)
        out.append((Finding("gpu_xid", f"driver recovery action now '{m.group(2)}'", action,
                            "nvidia-smi -q | grep 'Recovery Action'", [Evidence(src.name, i, line)],
                            "xid-154-action", normal=action == "none",
                            subject=gpu_id(x.group(1)) if x else ""), i))
    return out


def gpu_id(pci: str) -> str:
    """One spelling of a GPU's PCI address: "PCI:0000:52:00" and "0000:52:00" are the same GPU."""
    return pci.removeprefix("PCI:").lower()


def _sxid(src: Source, i: int, line: str, m: re.Match[str]) -> Finding:
    """An NVSwitch SXid: fatal ones stop the fabric until the switches and GPUs are reset (NVIDIA's
    fabric-manager guide: restart the system); non-fatal ones are counted, not acted on. A line that
    prints the code without its severity is treated as fatal — the conservative reading, as for an
    Xid we have no row for."""
    switch, code, severity = m.group(1), m.group(2), m.group(3)
    confirm = "journalctl -u nvidia-fabricmanager; nvidia-smi nvlink -e; nvidia-smi -q | grep -A3 Fabric"
    ev = [Evidence(src.name, i, line)]
    if severity == "Non-fatal":
        return Finding("nvlink_fabric", f"SXid {code} (non-fatal) on NVSwitch {switch}", "none", confirm,
                       ev, f"sxid-{code}", normal=True, subject=switch)
    what = "fatal" if severity == "Fatal" else "severity not on the line: treated as fatal"
    return Finding("nvlink_fabric", f"SXid {code} ({what}) on NVSwitch {switch}", "reboot", confirm, ev,
                   f"sxid-{code}", subject=switch)


def indexed(src: Source) -> tuple[str, list[int]]:
    """The lines joined by "\\n" and the offset each line starts at, computed once per file."""
    if src.index is None:
        starts = [0, *accumulate(map((1).__add__, map(len, src.lines)))]
        src.index = ("\n".join(src.lines), starts)
    return src.index


def _hit_lines(needles: tuple[Needle, ...], src: Source) -> list[int]:
    """1-based numbers of the lines on which any of ``needles`` (plain text, or a pattern compiled
    with MULTILINE) may match, sorted. Each runs over the joined text in C, resuming after a hit at
    the start of the next line; one pass per branch is much faster than one alternation of them all,
    which Python's regex engine tries branch by branch at every character."""
    text, starts = indexed(src)  # starts[k]: offset of line k+1
    end = len(text)
    hits: set[int] = set()
    for needle in needles:
        pos = 0
        while pos <= end:
            if isinstance(needle, str):
                at = text.find(needle, pos)
            else:
                at = m.start() if (m := needle.search(text, pos)) else -1
            if at < 0:
                break
            k = bisect_right(starts, at) - 1  # 0-based line of the hit's start
            hits.add(k + 1)
            pos = starts[k + 1]
    return sorted(hits)


def scan(src: Source) -> list[tuple[Finding, int]]:
    """Rule and Xid matches of one file, with the line number each was found on (module docstring)."""
    rules, needles = _prefilter(RULES, src.kind)
    out: list[tuple[Finding, int]] = []
    for i in _hit_lines(needles, src):
        line = src.lines[i - 1]
        if line.strip():
            out.extend(_match_line(src, i, line, rules))
    return out


def scan_reference(src: Source) -> list[tuple[Finding, int]]:
    """The specification ``scan`` must equal: every applicable pattern tried on every line."""
    rules = _applicable(RULES, src.kind)
    out: list[tuple[Finding, int]] = []
    for i, line in enumerate(src.lines, 1):
        if line.strip():
            out.extend(_match_line(src, i, line, rules))
    return out


_multiline = lru_cache(maxsize=16)(_needles)


def restarts(src: Source) -> tuple[list[int], list[int]]:
    """Line numbers of restart markers and of kernel boots in one file (one pass each)."""
    marker = RESTART_MARKERS.get(src.kind)
    if marker is None:
        return [], []
    found = _hit_lines(_multiline(marker), src)
    boots = _hit_lines(_multiline(BOOT_MARKER), src) if src.kind == "dmesg" else []
    return found, boots
