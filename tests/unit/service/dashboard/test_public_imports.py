"""The dashboard uses other modules' public names only (issue 25: whatif_form imported the what-if
route's private ``_tenancy``), and nothing from service/routes/ (routes translate HTTP; what both
need lives below them)."""

from __future__ import annotations

import ast
from pathlib import Path

import gpufleet.service.dashboard as dashboard

HERE = Path(dashboard.__file__).parent


def test_no_private_name_and_no_route_module_is_imported() -> None:
    bad = []
    for path in sorted(HERE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gpufleet"):
                if node.module.startswith("gpufleet.service.routes"):
                    bad.append(f"{path.name}: from {node.module}")
                bad += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert bad == []
