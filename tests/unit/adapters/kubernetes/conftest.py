"""Fixtures: the real kubectl -o json objects in tests/data/k8s (see PROVENANCE.md there)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[4] / "tests" / "data" / "k8s"


def real(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.fixture
def nori() -> dict:
    """The RKE2 GPU node "nori" (NVIDIA A16 vGPU, GPU Operator v24.9.2), a fresh copy per test."""
    return copy.deepcopy(real("nodes-rke2-gpu.json")["items"][0])


@pytest.fixture
def aks_nodes() -> list[dict]:
    return copy.deepcopy(real("nodes-aks.json")["items"])


@pytest.fixture
def cluster_dir() -> Path:
    return DATA / "cluster"
