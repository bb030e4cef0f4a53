"""Mutation testing, one module at a time, with a reviewable list of equivalent mutants.

    python tools/mutation.py run   engine/plan.py policies/fgd/measure.py   # mutate, test, score
    python tools/mutation.py score engine/plan.py                           # score from the cache only

`run` calls mutmut 2.5 (the `mutation` extra) on one module with only the tests listed for it in
tools/mutation.toml, `pytest -x --import-mode=importlib -m 'not slow and not slurm'`, under a wall-clock
limit (MUTATION_TIMEOUT seconds per module, default 1800). mutmut edits the module in place while it
runs; this script keeps a copy and writes it back afterwards whatever happens (timeout, Ctrl-C), and
refuses to start on a module with uncommitted edits mutmut could confuse with its own.

`score` reads mutmut's results (.mutmut-cache, SQLite) and prints per module
    killed / survived / equivalent / untested and score = killed / (all - equivalent)
where "killed" includes timeouts (a mutant that hangs the tests is caught) and an equivalent mutant is one
listed in tools/mutation.toml with its reason. Surviving mutants are printed as diffs so the next step is
clear: a test that kills it, or an [[equivalent]] entry with the reason it cannot be told apart.
Exit status 1 when a module is under TARGET (0.90) or has untested mutants, 2 on bad input.
mutmut 2.5 keeps a kill across test edits (it assumes tests only grow) and retests the rest when any
file under tests/ changes; delete .mutmut-cache for a from-scratch score after removing tests.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "tools" / "mutation.toml"
CACHE = ROOT / ".mutmut-cache"
PACKAGE = "src/gpufleet"
TARGET = 0.90
KILLED = {"ok_killed", "ok_suspicious", "bad_timeout"}


@dataclass
class Score:
    module: str
    killed: int = 0
    survived: list[tuple[int, str, str]] = field(default_factory=list)
    equivalent: int = 0
    untested: int = 0
    stale: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.killed + len(self.survived) + self.equivalent + self.untested

    @property
    def score(self) -> float:
        counted = self.total - self.equivalent
        return self.killed / counted if counted else 1.0


def load_config() -> dict:
    with CONFIG.open("rb") as f:
        return tomllib.load(f)


def bin_path(name: str) -> str:
    return str(Path(sys.executable).with_name(name))


def runner_for(module: str, config: dict) -> str:
    tests = [t for t in config["modules"][module]["tests"] if (ROOT / t).exists()]
    if not tests:
        raise SystemExit(f"tools/mutation.toml: modules.\"{module}\".tests: no listed test file exists")
    # Loading hypothesis's pytest plugin costs seconds per mutant on a loaded machine: skip it when
    # no listed test file uses hypothesis.
    plugins = "" if any("hypothesis" in (ROOT / t).read_text() for t in tests) else "-p no:hypothesispytest "
    return (f"{sys.executable} -m pytest -x -q -p no:cacheprovider {plugins}--import-mode=importlib "
            f"-m 'not slow and not slurm' {' '.join(tests)}")


def run_module(module: str, config: dict, timeout_s: float) -> None:
    path = f"{PACKAGE}/{module}"
    dirty = subprocess.run(["git", "status", "--porcelain", "--", path], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.strip()
    if dirty:
        raise SystemExit(f"{path}: uncommitted edits; commit them first (mutmut rewrites the file in place)")
    original = (ROOT / path).read_bytes()
    runner = runner_for(module, config)
    print(f"== {module}\n   runner: {runner}", flush=True)
    cmd = [bin_path("mutmut"), "run", "--paths-to-mutate", path, "--tests-dir", "tests",
           "--runner", runner, "--no-progress", "--simple-output"]
    proc = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        print(f"   stopped after {timeout_s:.0f} s (MUTATION_TIMEOUT); the score counts what ran", flush=True)
    except KeyboardInterrupt:
        print("   interrupted", flush=True)
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if (ROOT / path).read_bytes() != original:
            (ROOT / path).write_bytes(original)
            print(f"   restored {path}", flush=True)
        (ROOT / f"{path}.bak").unlink(missing_ok=True)  # mutmut's own copy, left behind when stopped


def equivalents(config: dict, module: str) -> dict[tuple[str, str, str], str]:
    """Listed equivalents by (original, mutant, after); ``after`` (optional: the unchanged line
    just above, stripped) tells apart mutants whose own lines are common, such as `break`."""
    return {(e["original"].strip(), e["mutant"].strip(), e.get("after", "").strip()): e["reason"]
            for e in config.get("equivalent", []) if e["module"] == module}


def diff_of(mutant_id: int) -> tuple[str, str, str]:
    """(original line, mutated line, the unchanged line above them), stripped, from `mutmut show`."""
    out = subprocess.run([bin_path("mutmut"), "show", str(mutant_id)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    minus = [x[1:].strip() for x in out if x.startswith("-") and not x.startswith("---")]
    plus = [x[1:].strip() for x in out if x.startswith("+") and not x.startswith("+++")]
    first = next((i for i, x in enumerate(out) if x.startswith("-") and not x.startswith("---")), 0)
    above = out[first - 1][1:].strip() if first > 0 and out[first - 1].startswith(" ") else ""
    return " / ".join(minus), " / ".join(plus), above


def score_module(module: str, config: dict) -> Score:
    path = f"{PACKAGE}/{module}"
    result = Score(module)
    if not CACHE.exists():
        return result
    with sqlite3.connect(CACHE) as db:
        rows = db.execute(
            "SELECT m.id, m.status FROM Mutant m JOIN Line l ON m.line = l.id "
            "JOIN SourceFile s ON l.sourcefile = s.id WHERE s.filename = ? ORDER BY m.id", (path,),
        ).fetchall()
    listed = equivalents(config, module)
    seen: set[tuple[str, str, str]] = set()
    for mutant_id, status in rows:
        if status in KILLED:
            result.killed += 1
        elif status in ("untested", "skipped"):
            result.untested += 1
        else:
            original, mutated, above = diff_of(mutant_id)
            keys = ((original, mutated, above), (original, mutated, ""))
            key = next((k for k in keys if k in listed), None)
            if key is not None:
                result.equivalent += 1
                seen.add(key)
            else:
                result.survived.append((mutant_id, original, mutated))
    result.stale = [f"{o}  ->  {m}" + (f"  (after {a})" if a else "")
                    for (o, m, a) in listed if (o, m, a) not in seen]
    return result


def report(s: Score) -> None:
    print(f"{s.module}: {s.total} mutants, killed {s.killed}, survived {len(s.survived)}, "
          f"equivalent {s.equivalent}, untested {s.untested}, score {s.score:.1%} "
          f"(target {TARGET:.0%})", flush=True)
    for mutant_id, original, mutated in s.survived:
        print(f"   survived #{mutant_id}: {original}\n{'':>18}-> {mutated}")
    for entry in s.stale:
        print(f"   stale [[equivalent]] (killed now, or gone): {entry}")


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("run", "score"):
        print("usage: mutation.py run|score MODULE... (paths under src/gpufleet, e.g. engine/plan.py)",
              file=sys.stderr)
        return 2
    config = load_config()
    modules = argv[1:]
    unknown = [m for m in modules if m not in config["modules"]]
    if unknown:
        print(f"tools/mutation.toml: no [modules.\"{unknown[0]}\"] (known: {', '.join(config['modules'])})",
              file=sys.stderr)
        return 2
    if argv[0] == "run":
        # `timeout` and CI send SIGTERM: turn it into KeyboardInterrupt so the module is restored.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        if not shutil.which(bin_path("mutmut")):
            print("mutmut not installed: pip install -e '.[dev,mutation]'", file=sys.stderr)
            return 2
        timeout_s = float(os.environ.get("MUTATION_TIMEOUT", "1800"))
        for module in modules:
            run_module(module, config, timeout_s)
            report(score_module(module, config))
        print()
    scores = [score_module(m, config) for m in modules]
    if argv[0] == "score":
        for s in scores:
            report(s)
    print("mutation scores (killed / (all - equivalent)):")
    for s in scores:
        print(f"   {s.module:<26} {s.score:6.1%}  killed {s.killed}, survived {len(s.survived)}, "
              f"equivalent {s.equivalent}, untested {s.untested}")
    return 0 if all(s.score >= TARGET and not s.untested for s in scores) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
