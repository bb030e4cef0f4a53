"""Imports point one way (DESIGN.md): model ← engine ← policies ← {sim, live, adapters, ops, econ,
traces} ← {report, service, cli}. An AST walk over src/ finds any import against the arrow."""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "gpufleet"
LAYER = {"model": 0, "engine": 1, "policies": 2, "testing": 3, "sim": 3, "live": 3, "adapters": 3,
         "ops": 3, "econ": 3, "traces": 3, "report": 4, "sweep": 4, "service": 4, "cli": 5, "scenarios": 0}


def imports_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpufleet."):
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names if a.name.startswith("gpufleet.")]
    return out


def test_no_module_imports_from_a_higher_layer():
    bad = []
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).parts
        if len(rel) < 2:
            continue
        here = LAYER[rel[0]]
        for mod in imports_of(path):
            target = mod.split(".")[1]
            if target in LAYER and LAYER[target] > here:
                bad.append(f"{'/'.join(rel)} imports {mod}")
    assert not bad, "\n".join(bad)


def test_the_engine_reads_no_clock_and_draws_no_unseeded_randomness():
    offenders = []
    for path in (SRC / "engine").rglob("*.py"):
        text = path.read_text()
        for banned in ("import time", "datetime.now", "random.random", "np.random.rand(", "open("):
            if banned in text:
                offenders.append(f"{path.name}: {banned}")
    assert not offenders
