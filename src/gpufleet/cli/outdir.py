"""A run owns its ``--out`` directory: it never overwrites or deletes what it did not write.

A directory gpufleet writes into holds a marker, ``.gpufleet-run.json``: the command that wrote it,
whether that run finished, and the files it wrote. Claiming a directory for a new run:

- missing or empty: created and claimed;
- holding a finished run of the same command: the files that run listed are removed (and the
  folders they leave empty), so nothing stale (an event log of a policy not run this time, which
  ``explain`` would read as this run's) survives; other files are left alone;
- holding a run of that command that did not finish: it was claimed empty, so every file in it
  was written by that run and all are removed;
- holding a run of another command, or files without a marker: refused with one line, before any
  work. Nothing is deleted.

The marker is written as "running" at the claim and rewritten with the file list at ``finish``.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from gpufleet.cli.common import check_out_dir, fail, warn

MARKER = ".gpufleet-run.json"


@dataclass(frozen=True)
class RunDir:
    path: Path
    command: str

    def finish(self) -> None:
        """Record every file now in the directory as this run's (it was ours or empty at the claim)."""
        files = sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*")
                       if p.is_file() and p.name != MARKER)
        _write_marker(self.path, {"command": self.command, "finished": True, "files": files})


def read_marker(path: Path) -> dict | None:
    """The marker of a directory gpufleet wrote, or None (no marker, or not one of ours)."""
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("command"), str) \
            or not isinstance(data.get("files", []), list):
        return None
    return data


def claim_out_dir(out: Path, command: str, option: str = "--out") -> RunDir:
    """Check ``out`` can be written and is ours (module docstring), clear our last run, claim it."""
    check_out_dir(out, option)
    entries = sorted(p.name for p in out.iterdir() if p.name != MARKER)
    marker = read_marker(out)
    if entries and marker is None:
        shown = ", ".join(entries[:3]) + (f", … ({len(entries)} entries)" if len(entries) > 3 else "")
        raise fail(f"{option} {out}: holds files gpufleet did not write ({shown}); choose an empty or "
                   "new directory (nothing was changed)")
    if marker is not None and marker["command"] != command:
        raise fail(f"{option} {out}: holds the output of `gpufleet {marker['command']}`; choose another "
                   f"directory for `gpufleet {command}` (nothing was changed)")
    if marker is not None and entries:
        if marker.get("finished"):
            _remove(out, [out / str(f) for f in marker.get("files", [])])
        else:
            warn(f"{option} {out}: the previous `gpufleet {command}` there did not finish; "
                 "removing what it wrote")
            _remove(out, [p for p in out.rglob("*") if p.is_file() and p.name != MARKER])
    _write_marker(out, {"command": command, "finished": False, "files": []})
    return RunDir(out, command)


def _remove(root: Path, files: list[Path]) -> None:
    """Delete ``files`` (only inside ``root``, only plain files), then folders they left empty."""
    base = root.resolve()
    parents: set[Path] = set()
    for f in files:
        try:
            real = f.resolve()
        except OSError:
            continue
        if not real.is_relative_to(base) or f.is_symlink() or not f.is_file():
            continue
        f.unlink()
        parents.update(p for p in f.parents if p != root and p.is_relative_to(root))
    for d in sorted(parents, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):  # not empty: holds something not ours, left alone
            d.rmdir()


def _write_marker(out: Path, data: dict) -> None:
    tmp = out / f"{MARKER}.tmp"
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, out / MARKER)
