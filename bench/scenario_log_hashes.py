"""SHA-256 of every bundled scenario's event log and fleet timeline, per policy it lists: the
check that a speed-up left every decision as it was.

    python bench/scenario_log_hashes.py /tmp/after.txt                 # all bundled scenarios
    python bench/scenario_log_hashes.py /tmp/after.txt default training
    diff <(grep -v '^#' /tmp/before.txt) <(grep -v '^#' /tmp/after.txt)

Run it once on the code before a change (e.g. a ``git worktree add /tmp/before <commit>`` with
``PYTHONPATH=/tmp/before/src``) and once after. The log is hashed as the JSONL
``Recorder.write_log`` writes; the timeline as the recorder's sample arrays.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

from gpufleet.cli.simulate import run_policies
from gpufleet.sim.scenario import bundled, bundled_names


def main() -> None:
    out = sys.argv[1]
    names = sys.argv[2:] or bundled_names()
    lines = []
    for name in names:
        scn = bundled(name)
        c0 = time.process_time()
        for pol, r in run_policies(scn, scn.spec.policies, None, show_progress=False).items():
            h = hashlib.sha256()
            for t, kind, job, detail in r.recorder.log:
                h.update((json.dumps({"t": t, "event": kind, "job": job, "detail": detail}) + "\n").encode())
            rec = r.recorder
            tl = hashlib.sha256(repr((rec.t, rec.allocated, rec.busy, rec.queued, rec.stranded_t,
                                      rec.stranded)).encode()).hexdigest()
            line = f"{name} {pol} log={h.hexdigest()} n={len(rec.log)} timeline={tl} cycles={r.cycles}"
            print(line, flush=True)
            lines.append(line)
        print(f"# {name}: {time.process_time() - c0:.1f} s CPU", flush=True)
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
