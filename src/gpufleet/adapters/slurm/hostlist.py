"""Slurm hostlists: ``gpu[001-003,007],login1`` <-> ``[gpu001, gpu002, gpu003, gpu007, login1]``.

Written here rather than taken from PyPI: the one maintained package (python-hostlist 2.3.0) is
GPL-2.0, and the subset Slurm configuration files use is small. Supported: comma-separated items,
any number of bracket groups per item (``r[1-2]n[01-04]`` is the cross product, left to right),
ranges with zero padding taken from the lower bound, and a ``-`` inside a name outside brackets.

Compression groups names by (prefix, digits width, suffix) on the *last* numeric run only, which
is what Slurm itself prints for the names it compresses; names without a number stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_EXPANSION = 1_000_000


class HostlistError(ValueError):
    """A hostlist that cannot be expanded; the message says what was expected."""


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    items: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(f"nested '[' in hostlist {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(f"unbalanced ']' in hostlist {text!r}")
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise HostlistError(f"unbalanced '[' in hostlist {text!r}")
    items.append(text[start:])
    return [s.strip() for s in items if s.strip()]


def _expand_range(body: str, whole: str) -> list[str]:
    out: list[str] = []
    for part in body.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise HostlistError(f"bad range {part!r} in hostlist {whole!r} (expected N or N-M)")
        lo_s, hi_s = m.group(1), m.group(2)
        if hi_s is None:
            out.append(lo_s)
            continue
        lo, hi = int(lo_s), int(hi_s)
        if hi < lo:
            raise HostlistError(f"descending range {part!r} in hostlist {whole!r}")
        if hi - lo + 1 > MAX_EXPANSION:
            raise HostlistError(f"range {part!r} in hostlist {whole!r} is too large")
        width = len(lo_s)
        out.extend(str(i).zfill(width) for i in range(lo, hi + 1))
    return out


def _expand_item(item: str) -> list[str]:
    results = [""]
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]", item):
        literal = item[pos:m.start()]
        choices = _expand_range(m.group(1), item)
        results = [r + literal + c for r in results for c in choices]
        if len(results) > MAX_EXPANSION:
            raise HostlistError(f"hostlist {item!r} expands to too many names")
        pos = m.end()
    tail = item[pos:]
    if "[" in tail or "]" in tail:
        raise HostlistError(f"unbalanced brackets in hostlist {item!r}")
    return [r + tail for r in results]


def expand(hostlist: str) -> list[str]:
    """All names in ``hostlist``, in the order written (duplicates kept, as Slurm does)."""
    names: list[str] = []
    for item in _split_top(hostlist):
        names.extend(_expand_item(item))
    return names


_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$")


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], n)
        elif not spans or n != spans[-1][1]:
            spans.append((n, n))
    return spans


def _padded(digits: str) -> bool:
    return len(digits) > 1 and digits.startswith("0")


def compress(names: Iterable[str]) -> str:
    """The usual short hostlist for ``names``, sorted within each (prefix, width, suffix) group.

    Groups appear in the order of their first name, so a sorted input gives a sorted output. An
    unpadded number joins a padded group of its own length (``gpu099,gpu100`` -> ``gpu[099-100]``).
    """
    by_stem: dict[tuple[str, str], list[str]] = {}
    order: list[tuple[str, str] | str] = []
    seen_plain: set[str] = set()
    for name in names:
        m = _LAST_NUMBER.match(name)
        if not m:
            if name not in seen_plain:
                seen_plain.add(name)
                order.append(name)
            continue
        prefix, digits, suffix = m.groups()
        if (prefix, suffix) not in by_stem:
            by_stem[(prefix, suffix)] = []
            order.append((prefix, suffix))
        by_stem[(prefix, suffix)].append(digits)
    parts: list[str] = []
    for key in order:
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, suffix = key
        widths = {len(d) for d in by_stem[key] if _padded(d)}
        groups: dict[int, set[int]] = {}
        for d in by_stem[key]:
            width = len(d) if _padded(d) or len(d) in widths else 0
            groups.setdefault(width, set()).add(int(d))
        for width in sorted(groups, key=lambda w: min(groups[w])):
            spans = _ranges(sorted(groups[width]))
            texts = [
                str(a).zfill(width) if a == b else f"{str(a).zfill(width)}-{str(b).zfill(width)}"
                for a, b in spans
            ]
            if len(texts) == 1 and spans[0][0] == spans[0][1]:
                parts.append(f"{prefix}{texts[0]}{suffix}")
            else:
                parts.append(f"{prefix}[{','.join(texts)}]{suffix}")
    return ",".join(parts)
