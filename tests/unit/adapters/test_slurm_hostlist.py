"""Slurm hostlists: expansion as Slurm does it, compression that expands back to the same names."""

import pytest

from gpufleet.adapters.slurm.hostlist import HostlistError, compress, expand


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("gpu[001-003]", ["gpu001", "gpu002", "gpu003"]),
        ("gpu[001-002,007],login1", ["gpu001", "gpu002", "gpu007", "login1"]),
        ("r[1-2]n[01-02]", ["r1n01", "r1n02", "r2n01", "r2n02"]),
        ("node-a,node-b", ["node-a", "node-b"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("leaf[01-02]-ib", ["leaf01-ib", "leaf02-ib"]),
        ("", []),
    ],
    ids=[
        "a zero-padded range keeps its padding",
        "ranges, single numbers and plain names mix",
        "two bracket groups expand as a cross product",
        "a dash outside brackets is part of the name",
        "an unpadded range crosses a digit boundary",
        "a suffix after the brackets is kept",
        "an empty hostlist has no names",
    ],
)
def test_expand(text: str, names: list[str]) -> None:
    assert expand(text) == names


@pytest.mark.parametrize(
    ("names", "text"),
    [
        (["gpu001", "gpu002", "gpu003", "gpu007"], "gpu[001-003,007]"),
        (["gpu005"], "gpu005"),
        (["gpu099", "gpu100"], "gpu[099-100]"),
        (["h100-g0-n0000", "h100-g0-n0001"], "h100-g0-n[0000-0001]"),
        (["login", "gpu1", "gpu2"], "login,gpu[1-2]"),
    ],
    ids=[
        "consecutive numbers become one range",
        "a single name stays as it is",
        "an unpadded number joins a padded group of its length",
        "the last number of a dashed name is the one compressed",
        "names without numbers are kept in place",
    ],
)
def test_compress(names: list[str], text: str) -> None:
    assert compress(names) == text
    assert expand(text) == names


@pytest.mark.parametrize(
    "text",
    ["gpu[001-003", "gpu001]", "gpu[a-b]", "gpu[5-1]", "gpu[[1-2]]"],
    ids=["an unclosed bracket", "a stray closing bracket", "letters in a range",
         "a descending range", "nested brackets"],
)
def test_bad_hostlists_are_refused_with_a_reason(text: str) -> None:
    with pytest.raises(HostlistError, match="hostlist"):
        expand(text)
