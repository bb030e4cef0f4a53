"""The one-pass scan finds exactly what trying every rule on every line finds.

``scan`` looks for each pattern branch over the whole text and builds findings only on the lines hit;
``scan_reference`` is the plain per-line, per-rule loop it replaces. They must agree line for line and
rule for rule on every real fixture and on any mix of real lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.ops.bundle import Source, load_bundle
from gpufleet.ops.rules import RESTART_MARKERS, RULES
from gpufleet.ops.scan import branches, required_prefix, restarts, scan, scan_reference

DATA = Path(__file__).resolve().parents[2] / "data" / "ops"
SOURCES = [s for b in sorted((DATA / "bundles").iterdir()) for s in load_bundle(b).sources]
LINES = sorted({ln for s in SOURCES for ln in s.lines} | {
    ln for ln in (DATA / "bench" / "dmesg-boot.txt").read_text().splitlines()})


def _key(found):
    return [(f.rule, f.layer, f.action, f.failure, i, [e.render() for e in f.evidence]) for f, i in found]


@pytest.mark.parametrize("src", SOURCES, ids=lambda s: s.name)
def test_the_fast_scan_equals_the_per_line_reference_on_every_fixture_file(src):
    assert _key(scan(src)) == _key(scan_reference(src))


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(st.sampled_from(LINES), min_size=0, max_size=80),
    kind=st.sampled_from(sorted({"dmesg", "nvidia-smi", "device-plugin", "nccl-log", "other"})),
)
def test_the_fast_scan_equals_the_reference_on_any_mix_of_real_lines(lines, kind):
    src = Source("mix.txt", kind, lines)
    assert _key(scan(src)) == _key(scan_reference(src))


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.sampled_from(LINES), max_size=60), kind=st.sampled_from(sorted(RESTART_MARKERS)))
def test_restart_markers_are_found_on_the_same_lines_as_a_per_line_search(lines, kind):
    marker = RESTART_MARKERS[kind]
    expected = [i for i, ln in enumerate(lines, 1) if marker.search(ln)]
    assert restarts(Source("mix.txt", kind, lines))[0] == expected


def test_a_pattern_splits_into_its_top_level_branches_only():
    assert branches(r"a|b(c|d)|[|x]y|\|z") == ["a", "b(c|d)", "[|x]y", r"\|z"]


def test_the_required_prefix_of_a_branch_is_the_text_every_match_starts_with():
    assert required_prefix(r"No devices found\. Waiting") == "No devices found. Waiting"
    assert required_prefix(r"ACCESS_REG\(0x805\).*failed") == "ACCESS_REG(0x805)"
    assert required_prefix(r"^-- Boot [0-9a-f]+ --$") == "-- Boot "
    assert required_prefix(r"colou?r") == "colo" and required_prefix(r"ab{2}") == "a"
    assert required_prefix(r".*x") == "" and required_prefix(r"\d+ MiB") == ""


@settings(max_examples=200, deadline=None)
@given(line=st.sampled_from(LINES))
def test_a_line_a_branch_matches_always_holds_its_required_prefix(line):
    for r in RULES:
        for b in branches(r.pattern.pattern):
            if re.search(b, line):
                assert required_prefix(b) in line, (b, line)


def test_every_rule_branch_is_valid_on_its_own():
    """Splitting must never cut a pattern inside a group or a class: each branch compiles."""
    for r in RULES:
        for b in branches(r.pattern.pattern):
            re.compile(b)
