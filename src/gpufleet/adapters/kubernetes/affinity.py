"""Required node affinity (``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``).

The core/v1 rule: the node must match at least one ``nodeSelectorTerms`` entry (terms are ORed;
an empty term matches nothing); inside a term every ``matchExpressions`` and ``matchFields``
requirement must hold (ANDed). Operators: ``In`` / ``NotIn`` (label value in / not in the list;
``NotIn`` also holds when the label is absent), ``Exists`` / ``DoesNotExist``, ``Gt`` / ``Lt``
(the label parsed as an integer, compared with the single value). ``matchFields`` supports the
one field the API allows, ``metadata.name``.

Expressions on ``nvidia.com/gpu.product`` are left to the GPU-model check (filters.py), which
compares catalog models, not raw label strings (``NVIDIA-H100-80GB-HBM3`` and ``H100`` name the
same GPU); a term holding only such expressions counts as matched here.
"""

from __future__ import annotations

from dataclasses import dataclass

PRODUCT_LABEL = "nvidia.com/gpu.product"


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]
    field: bool = False   # a matchFields entry (metadata.name)

    def holds(self, labels: dict[str, str], name: str) -> bool:
        has = name if self.field and self.key == "metadata.name" else labels.get(self.key)
        op = self.operator
        if op == "In":
            return has is not None and has in self.values
        if op == "NotIn":
            return has is None or has not in self.values
        if op == "Exists":
            return has is not None
        if op == "DoesNotExist":
            return has is None
        if op in ("Gt", "Lt") and has is not None and len(self.values) == 1:
            try:
                a, b = int(has), int(self.values[0])
            except ValueError:
                return False
            return a > b if op == "Gt" else a < b
        return False


Term = tuple[Requirement, ...]


def read_terms(spec: dict) -> tuple[Term, ...]:
    """The required terms of a pod spec (empty tuple: no required node affinity)."""
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    out = []
    for term in req.get("nodeSelectorTerms") or []:
        if not isinstance(term, dict):
            continue
        reqs = [Requirement(str(e.get("key", "")), str(e.get("operator", "")),
                            tuple(str(v) for v in e.get("values") or []))
                for e in term.get("matchExpressions") or [] if isinstance(e, dict)]
        reqs += [Requirement(str(e.get("key", "")), str(e.get("operator", "")),
                             tuple(str(v) for v in e.get("values") or []), field=True)
                 for e in term.get("matchFields") or [] if isinstance(e, dict)]
        out.append(tuple(reqs))
    return tuple(out)


def matches(terms: tuple[Term, ...], labels: dict[str, str], name: str) -> bool:
    """Does a node with these labels and name satisfy the required affinity (module docstring)?"""
    if not terms:
        return True
    for term in terms:
        if not term:
            continue  # an empty term selects no node
        if all(r.holds(labels, name) for r in term if r.key != PRODUCT_LABEL or r.field):
            return True
    return False
