"""Coverage-guided fuzzing (atheris / libFuzzer) of gpufleet's readers: ``make fuzz``.

    python tests/fuzz/atheris_readers.py TARGET [libFuzzer flags] [CORPUS_DIR]

TARGET is one of scenario, fleet, trace, openb-nodes, openb-pods. Each input is written to a file
and read by the real reader; the only exceptions allowed are the readers' one-line errors
(``InputError``, ``OpenbFormatError``) and their messages must be one line naming the file. Any
other exception is a crash that libFuzzer saves as ``crash-<hash>`` for a regression test. When
CORPUS_DIR is empty it is seeded with valid examples (the bundled scenarios, small traces).

Not collected by pytest (the name does not start with ``test_``); the bounded hypothesis suite in
this folder runs in ``make test``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from importlib import resources
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from gpufleet.model.errors import InputError
    from gpufleet.model.fleet_config import load_fleet
    from gpufleet.sim.feasibility import unschedulable_jobs
    from gpufleet.sim.scenario import load_scenario
    from gpufleet.traces.jsonl import read_jobs
    from gpufleet.traces.openb import OpenbFormatError, read_nodes, read_pods

SCRATCH = Path(tempfile.mkdtemp(prefix="gpufleet-fuzz-")) / "input"

SEEDS = {
    "fleet": [b"fleet:\n  groups: [{nodes: 2, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 2}]\n",
              b"fleet:\n  nodes:\n    - {id: n1, gpu: H100, gpus: 8, cpus: 64, memory_gb: 512, zone: z,"
              b" spine: s, leaf: l, nvlink_domain: n1}\n"],
    "trace": [b'{"id": "1", "submit_time": 0, "run_time": 60, "pod_sets": [{"replicas": 2, "gpus": 8}]}\n'
              b'{"id": "2", "submit_time": 5, "run_time": 1, "pod_sets": [{"replicas": 1, "gpus": 1,'
              b' "gpu_models": ["H100"]}], "labels": {"a": "b"}}\n'],
    "openb-nodes": [b"sn,cpu_milli,memory_mib,gpu,model\nn1,64000,262144,2,P100\nc1,32000,131072,0,\n"],
    "openb-pods": [b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np1,12000,16384,1,460,T4|P100\n"
                   b"p2,4000,8192,0,0,nan\np3,32000,65536,8,1000,G2\n"],
}


def _scenario(path: Path) -> None:
    scn = load_scenario(path)
    jobs = scn.jobs()
    unschedulable_jobs(jobs, scn.fleet)


TARGETS = {
    "scenario": (_scenario, InputError),
    "fleet": (load_fleet, InputError),
    "trace": (read_jobs, InputError),
    "openb-nodes": (read_nodes, OpenbFormatError),
    "openb-pods": (read_pods, OpenbFormatError),
}


def seed(target: str, corpus: Path) -> None:
    if corpus.exists() and any(corpus.iterdir()):
        return
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = list(SEEDS.get(target, []))
    if target == "scenario":
        for ref in resources.files("gpufleet.scenarios").iterdir():
            if ref.name.endswith(".yaml"):
                seeds.append(ref.read_bytes())
    for i, data in enumerate(seeds):
        (corpus / f"seed-{i}").write_bytes(data)


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{'|'.join(TARGETS)}}} [libFuzzer flags] [CORPUS_DIR]")
    target = sys.argv.pop(1)
    read, allowed = TARGETS[target]
    corpora = [Path(a) for a in sys.argv[1:] if not a.startswith("-")]
    for c in corpora:
        seed(target, c)

    def one_input(data: bytes) -> None:
        SCRATCH.write_bytes(data)
        try:
            read(SCRATCH)
        except allowed as e:
            message = str(e)
            if "\n" in message or str(SCRATCH) not in message:
                raise AssertionError(f"error is not one line naming the file: {message!r}") from None

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
