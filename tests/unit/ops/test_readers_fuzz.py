"""Issue 29 §4: a hypothesis strategy per reader. Each parser of ops/ gets arbitrary text and text built
from real lines of its own tool (the fixtures of tests/data/ops, shuffled, cut, repeated, with odd
bytes between) and must return plain data — never raise (parse_node_json may refuse with a one-line
ValueError, which diagnose sets aside) — and every line number it returns must point into the text.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.ops import parse_smi, parse_sys
from gpufleet.ops.bundle import Source, content_kind, kinds_of
from gpufleet.ops.integrity import driver_versions

DATA = Path(__file__).resolve().parents[2] / "data" / "ops"


def _lines(*names: str) -> list[str]:
    out: list[str] = []
    for pattern in names:
        for p in sorted(DATA.rglob(pattern)):
            if p.is_file():
                out += p.read_text(errors="replace").splitlines()
    return out or [""]


NOISE = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80)


def texts(*fixture_names: str) -> st.SearchStrategy[list[str]]:
    """Lists of lines: real lines of the tool (any order, any count) mixed with arbitrary ones, some
    cut at a random point."""
    real = _lines(*fixture_names)
    line = st.one_of(
        st.sampled_from(real),
        st.sampled_from(real).flatmap(lambda s: st.integers(0, len(s)).map(lambda k: s[:k])),
        NOISE,
    )
    return st.lists(line, max_size=60)


def _in_range(n: int, lines: list[str]) -> bool:
    return 0 <= n <= len(lines)


FUZZ = settings(max_examples=150, deadline=None)


@FUZZ
@given(texts("nvidia-smi.txt"))
def test_smi_table(lines):
    t = parse_smi.parse_smi_table(lines)
    assert all(_in_range(g.line, lines) for g in t.gpus) and all(_in_range(i, lines) for i in t.err_lines)


@FUZZ
@given(texts("nvidia-smi-q.txt", "nvidia-smi-a.txt"))
def test_smi_q(lines):
    header, gpus = parse_smi.parse_smi_q(lines)
    assert isinstance(header, dict)
    for g in gpus:
        assert _in_range(g.line, lines) and all(_in_range(ln, lines) for _, ln in g.fields.values())


@FUZZ
@given(texts("nvidia-smi-nvlink-status.txt"))
def test_nvlink_status(lines):
    for g in parse_smi.parse_nvlink_status(lines):
        assert _in_range(g.line, lines) and all(_in_range(ln, lines) for _, ln in g.links.values())
        assert set(g.inactive) <= set(g.links)


@FUZZ
@given(texts("nvidia-smi-mig.txt"))
def test_mig_lgi(lines):
    for m in parse_smi.parse_mig_lgi(lines):
        assert _in_range(m.line, lines)
        assert m.compute_slices >= 0


def test_a_mig_row_with_an_unknown_profile_shape_has_no_compute_slices():
    """`MIG (\\S+)` takes any word; an unknown shape used to raise ValueError in int()."""
    row = next(ln for ln in _lines("nvidia-smi-mig.txt") if "MIG 1g.10gb" in ln)
    (m,) = parse_smi.parse_mig_lgi([row.replace("1g.10gb", "xg.10gb")])
    assert m.compute_slices == 0


@FUZZ
@given(texts("topo-*.txt"))
def test_topo(lines):
    t = parse_smi.parse_topo(lines)
    if t is not None:
        assert all(set(row) <= set(t.columns) for row in t.matrix.values())


@FUZZ
@given(texts("nvidia-smi-nvlink-status.txt", "nvidia-smi.txt"))
def test_smi_L(lines):
    assert all(_in_range(i, lines) for *_, i in parse_smi.parse_smi_L(lines))


@FUZZ
@given(texts("lspci-*.txt", "lspci*"))
def test_lspci(lines):
    for d in parse_sys.parse_lspci(lines):
        assert _in_range(d.line, lines) and _in_range(d.lnksta_line, lines)


@FUZZ
@given(texts("lsmod*", "modprobe.txt"))
def test_lsmod(lines):
    assert all(_in_range(i, lines) for i in parse_sys.parse_lsmod(lines).values())


@FUZZ
@given(texts("ibstat*.txt", "sys-class-infiniband.txt"))
def test_ib(lines):
    for p in parse_sys.parse_ibstat(lines) + parse_sys.parse_sysfs_ib(lines):
        assert _in_range(p.line, lines) and _in_range(p.phys_line, lines)
        assert p.rate_gbps is None or p.rate_gbps == p.rate_gbps  # never NaN from a real-looking line


@FUZZ
@given(texts("node.yaml", "labels-*.yaml"))
def test_node_object(lines):
    try:
        nodes = parse_sys.parse_node_json(lines)
    except ValueError as e:
        assert "\n" not in str(e)
        return
    for n in nodes:
        assert all(_in_range(ln, lines) for _, ln in n.taints) and _in_range(n.unschedulable_line, lines)


# YAML and JSON that parse but are not Node-shaped: every field of the wrong type
WRONG = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=5)),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(
        st.sampled_from(["items", "spec", "status", "metadata", "taints", "capacity", "allocatable",
                         "labels", "name", "key", "value", "effect", "unschedulable"]), kids, max_size=4)),
    max_leaves=12,
)


@FUZZ
@given(WRONG)
def test_node_object_of_any_shape(doc):
    import json

    lines = json.dumps(doc).splitlines()
    try:
        parse_sys.parse_node_json(lines)
    except ValueError as e:
        assert "\n" not in str(e)


@FUZZ
@given(texts("kubectl-describe-node.txt"))
def test_describe_node(lines):
    n = parse_sys.parse_describe_node(lines)
    assert all(_in_range(ln, lines) for _, ln in n.taints) and _in_range(n.unschedulable_line, lines)


@FUZZ
@given(texts("dmesg*.txt", "*.log", "nvidia-smi*.txt"),
       st.sampled_from(["dmesg.txt", "log1", "nvidia-smi.txt", "x"]))
def test_kind_and_driver_version(lines, name):
    text = "\n".join(lines)
    kind, named = kinds_of(name, text)
    assert kind and named != kind
    assert content_kind(text)
    for version, line in driver_versions(Source(name, kind, lines)):
        assert version[0].isdigit() and 1 <= line <= len(lines)
