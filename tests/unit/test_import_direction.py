"""Imports point one way (.importlinter): model ← engine ← policies ← {traces, testing} ← sim ←
studies ← {adapters, ops, econ} ← live ← {report, service, sweep} ← cli; and the code that runs
inside ``run_cycle`` (engine/ and policies/) is pure: no clock, no I/O, no unseeded randomness, no
dynamic imports.

Two independent checks, each shown to fail on the forms it must catch:
- import-linter (``lint-imports`` with the repository's ``.importlinter``): the layer contract
  over the whole import graph, indirect imports included;
- an AST walk (``violations``) that resolves ``from gpufleet import cli`` and relative imports to
  the module they name, and flags clocks, ``importlib``/``__import__``, ``open``, stdlib
  ``random``, ``uuid``, ``os.urandom``, ``secrets``, numpy's global generator and
  ``default_rng()`` without a seed.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "gpufleet"
LAYER = {"model": 0, "scenarios": 0, "engine": 1, "policies": 2, "testing": 3, "traces": 3, "sim": 4,
         "studies": 5, "adapters": 6, "ops": 6, "econ": 6, "live": 7, "report": 8, "service": 8, "sweep": 8,
         "cli": 9}
PURE = ("engine", "policies")

#: Modules whose import alone breaks purity (a clock, entropy, dynamic import, process or socket).
BANNED_MODULES = {"time", "datetime", "random", "secrets", "uuid", "importlib", "subprocess",
                  "socket", "threading", "asyncio"}
#: numpy.random attributes that do not touch the global generator.
SEEDED_NUMPY = {"Generator", "SeedSequence", "PCG64", "PCG64DXSM", "Philox", "SFC64", "BitGenerator"}


def imported_modules(tree: ast.AST, package: tuple[str, ...]) -> list[str]:
    """Every module an import statement names, absolute: ``from gpufleet import cli`` gives
    ``gpufleet.cli``, ``from ..cli import x`` in gpufleet/engine/ gives ``gpufleet.cli``."""
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ((node.module,) if node.module else ()))
            else:
                mod = node.module or ""
            out.append(mod)
            out += [f"{mod}.{a.name}" for a in node.names if a.name != "*"]
    return out


def layer_violations(path: Path) -> list[str]:
    rel = path.relative_to(SRC.parent).with_suffix("").parts  # ("gpufleet", "engine", "cycle")
    if len(rel) < 3:
        return []
    here = LAYER[rel[1]]
    tree = ast.parse(path.read_text())
    bad = []
    for mod in imported_modules(tree, rel[:-1]):
        parts = mod.split(".")
        if parts[0] == "gpufleet" and len(parts) > 1 and parts[1] in LAYER and LAYER[parts[1]] > here:
            bad.append(f"{'/'.join(rel)} imports {mod}")
    return bad


def violations(source: str, package: tuple[str, ...] = ("gpufleet", "engine")) -> list[str]:
    """Why ``source`` (a module of ``package``) is not pure; empty when it is."""
    tree = ast.parse(source)
    bad: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            bad.append(f"line {node.lineno}: relative import")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""])
            for mod in mods:
                if mod.split(".")[0] in BANNED_MODULES or mod == "os.urandom":
                    bad.append(f"line {node.lineno}: imports {mod}")
            if isinstance(node, ast.ImportFrom) and node.module in ("os", "numpy.random"):
                for a in node.names:
                    if a.name in ("urandom", "getrandom") or (
                            node.module == "numpy.random" and a.name not in SEEDED_NUMPY | {"default_rng"}):
                        bad.append(f"line {node.lineno}: imports {node.module}.{a.name}")
        if isinstance(node, ast.Call):
            bad += _call_violations(node)
        if isinstance(node, ast.Attribute):
            chain = _dotted(node)
            if chain and (chain.startswith(("np.random.", "numpy.random."))):
                attr = chain.split(".")[2]
                if attr not in SEEDED_NUMPY | {"default_rng"}:
                    bad.append(f"line {node.lineno}: {chain} uses numpy's global generator")
            if chain in ("os.urandom", "os.getrandom", "os.environ", "os.getenv"):
                bad.append(f"line {node.lineno}: {chain}")
    return bad


def _call_violations(node: ast.Call) -> list[str]:
    name = _dotted(node.func)
    if name in ("open", "__import__", "input", "print", "eval", "exec"):
        return [f"line {node.lineno}: calls {name}()"]
    if name and name.split(".")[-1] == "default_rng":
        seed = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "seed"), None)
        if seed is None or (isinstance(seed, ast.Constant) and seed.value is None):
            return [f"line {node.lineno}: {name}() without a seed"]
    return []


def _dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


# ---- the checks catch what they must ---------------------------------------------------------------


@pytest.mark.parametrize("source", [
    "from gpufleet import cli",
    "from gpufleet.cli import main",
    "import gpufleet.sim.runner",
    "from ..sim import runner",
    "from ...gpufleet import report",
], ids=["from-package-import-cli", "from-cli", "import-sim", "relative-up", "relative-to-root"])
def test_the_layer_walk_catches_every_spelling_of_an_upward_import(source):
    mods = imported_modules(ast.parse(source), ("gpufleet", "engine"))
    upward = [m for m in mods if m.startswith("gpufleet.") and LAYER[m.split(".")[1]] > LAYER["engine"]]
    assert upward, mods


@pytest.mark.parametrize("source", [
    "import time",
    "from time import monotonic",
    "from datetime import datetime",
    "import importlib",
    "mod = __import__('gpufleet.cli')",
    "from .plan import Plan",
    "import random",
    "from random import choice",
    "import uuid",
    "from uuid import uuid4",
    "import os\nx = os.urandom(8)",
    "from os import urandom",
    "import secrets",
    "import numpy as np\nrng = np.random.default_rng()",
    "import numpy as np\nrng = np.random.default_rng(None)",
    "import numpy as np\nrng = np.random.default_rng(seed=None)",
    "import numpy as np\nx = np.random.rand(3)",
    "import numpy as np\nnp.random.shuffle([1, 2])",
    "from numpy.random import randint",
    "f = open('x')",
])
def test_the_purity_walk_catches_clocks_io_dynamic_imports_and_unseeded_randomness(source):
    assert violations(source), source


@pytest.mark.parametrize("source", [
    "import numpy as np\nrng = np.random.default_rng(seed)",
    "import numpy as np\nrng = np.random.default_rng(0)",
    "import numpy as np\ndef f(rng: np.random.Generator) -> None: ...",
    "from gpufleet.engine.plan import Plan",
])
def test_the_purity_walk_lets_seeded_generators_and_absolute_imports_pass(source):
    assert violations(source) == []


# ---- the code base passes them ---------------------------------------------------------------------


def test_no_module_imports_from_a_higher_layer():
    bad = [v for path in SRC.rglob("*.py") for v in layer_violations(path)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", PURE)
def test_code_that_runs_inside_a_cycle_reads_no_clock_does_no_io_and_draws_no_unseeded_randomness(package):
    bad = []
    for path in sorted((SRC / package).rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("").parts
        bad += [f"{'/'.join(rel)}.py {v}" for v in violations(path.read_text(), rel[:-1])]
    assert not bad, "\n".join(bad)


def imports_inside_functions(source: str) -> list[str]:
    """Our own modules imported inside a function body (the way an import cycle is dodged)."""
    out = []
    for fn in ast.walk(ast.parse(source)):
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(fn):
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                         else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                out += [f"{fn.name}: {n}" for n in names if n == "gpufleet" or n.startswith("gpufleet.")]
    return out


def test_the_function_import_walk_finds_an_import_inside_a_method():
    source = "class A:\n    def f(self):\n        from gpufleet.sim.step import engine_cycle\n"
    assert imports_inside_functions(source) == ["f: gpufleet.sim.step"]
    assert imports_inside_functions("from gpufleet.sim.step import engine_cycle\n") == []


def test_no_module_outside_the_cli_imports_our_own_modules_inside_a_function():
    """The layers are ordered, so no import needs hiding in a function to dodge a cycle; the CLI
    loads its command groups lazily on purpose (start-up time) and is left out."""
    bad = [f"{path.relative_to(SRC)} {v}" for path in sorted(SRC.rglob("*.py"))
           if path.relative_to(SRC).parts[0] != "cli" for v in imports_inside_functions(path.read_text())]
    assert not bad, "\n".join(bad)


def _lint_imports(cwd: Path, src: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    env = {"PYTHONPATH": str(src), "PATH": str(exe.parent), "LANG": "C.UTF-8"}
    return subprocess.run([str(exe), "--config", str(ROOT / ".importlinter"), "--no-cache"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_import_linter_keeps_every_contract():
    out = _lint_imports(ROOT, ROOT / "src")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def test_import_linter_breaks_on_an_engine_module_that_imports_the_cli(tmp_path):
    """The contract is not vacuous: a copy of the package whose engine says
    ``from gpufleet import cli`` fails it."""
    shutil.copytree(SRC, tmp_path / "gpufleet", ignore=shutil.ignore_patterns("__pycache__"))
    probe = tmp_path / "gpufleet" / "engine" / "status.py"
    probe.write_text(probe.read_text() + "\nfrom gpufleet import cli  # noqa\n")
    out = _lint_imports(tmp_path, tmp_path)
    assert out.returncode != 0
    assert "BROKEN" in out.stdout and "gpufleet.engine.status -> gpufleet.cli" in out.stdout
