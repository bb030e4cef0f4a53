"""Outcome as data: every job the cycle did not start carries a Status saying why."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class StatusCode(StrEnum):
    SCHEDULED = "SCHEDULED"          # all pods bound this cycle
    WAIT = "WAIT"                    # feasible in principle, held back (partial gang, behind a reservation)
    UNSCHEDULABLE = "UNSCHEDULABLE"  # does not fit the free capacity now
    UNRESOLVABLE = "UNRESOLVABLE"    # can never fit this fleet, even empty
    NOT_ADMITTED = "NOT_ADMITTED"    # admission (quota) refused it


@dataclass(frozen=True, slots=True)
class Status:
    code: StatusCode
    reasons: tuple[str, ...] = ()
    policy: str = ""
    estimated_start: float | None = None

    def explain(self) -> str:
        head = f"{self.code}" + (f" [{self.policy}]" if self.policy else "")
        return head + (": " + "; ".join(self.reasons) if self.reasons else "")
