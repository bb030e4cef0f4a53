"""Slurm's pending reasons mapped onto gpufleet's own reason codes.

Slurm has well over a hundred reason strings; what a user needs to know is the kind of wait, and
whether it ends by itself. Each ``WaitReason`` carries a plain-language explanation and the
engine ``StatusCode`` it corresponds to, so an explanation built from Slurm reads the same as one
built from our own engine. Families (``QOSMax*``, ``AssocGrp*``, ...) are matched by prefix.
"""

from __future__ import annotations

from enum import StrEnum

from gpufleet.engine.status import StatusCode


class WaitReason(StrEnum):
    RESOURCES = "resources"
    PRIORITY = "priority"
    NODES_UNAVAILABLE = "nodes_unavailable"
    QUOTA = "quota"
    DEPENDENCY = "dependency"
    DEPENDENCY_NEVER = "dependency_never_satisfied"
    BEGIN_TIME = "begin_time"
    HELD = "held"
    RESERVATION = "reservation"
    PARTITION_LIMIT = "partition_limit"
    PARTITION_DOWN = "partition_down"
    LICENSES = "licenses"
    BAD_REQUEST = "bad_request"
    SCHEDULER = "scheduler"
    UNKNOWN = "unknown"

    @property
    def explanation(self) -> str:
        return _EXPLANATIONS[self]

    @property
    def status(self) -> StatusCode:
        return _STATUS[self]


_EXPLANATIONS: dict[WaitReason, str] = {
    WaitReason.RESOURCES: "not enough free nodes or GPUs of the requested shape right now; it is "
                          "next in line and starts when running jobs release them",
    WaitReason.PRIORITY: "jobs with a higher priority are ahead of it; it starts after them, or "
                         "earlier if backfill finds a hole that delays none of them",
    WaitReason.NODES_UNAVAILABLE: "nodes it needs are down, drained or reserved (for maintenance or "
                                  "another job)",
    WaitReason.QUOTA: "a QOS or account limit is reached (GPUs, jobs or time in use by this user, "
                      "account or QOS); it starts when usage drops below the limit",
    WaitReason.DEPENDENCY: "it waits for another job (--dependency) to reach the required state",
    WaitReason.DEPENDENCY_NEVER: "the job it depends on ended in a way that can never satisfy the "
                                 "dependency; it will not start unless the dependency is changed",
    WaitReason.BEGIN_TIME: "it was submitted with --begin and is not eligible before that time",
    WaitReason.HELD: "it is held (by its user or an administrator) until released",
    WaitReason.RESERVATION: "it waits for its advance reservation to start",
    WaitReason.PARTITION_LIMIT: "it asks for more than the partition allows (time, nodes or size); "
                                "it will not start unless the request or the limit changes",
    WaitReason.PARTITION_DOWN: "its partition is down or inactive",
    WaitReason.LICENSES: "the licenses it requested are in use",
    WaitReason.BAD_REQUEST: "the request cannot be satisfied by this cluster as configured "
                            "(constraints, node count or resources)",
    WaitReason.SCHEDULER: "the scheduler has not looked at it yet (just submitted, or the queue is "
                          "deeper than one scheduling pass)",
    WaitReason.UNKNOWN: "Slurm gave a reason gpufleet does not classify; see the Slurm reason text",
}

_STATUS: dict[WaitReason, StatusCode] = {
    WaitReason.RESOURCES: StatusCode.UNSCHEDULABLE,
    WaitReason.PRIORITY: StatusCode.WAIT,
    WaitReason.NODES_UNAVAILABLE: StatusCode.UNSCHEDULABLE,
    WaitReason.QUOTA: StatusCode.NOT_ADMITTED,
    WaitReason.DEPENDENCY: StatusCode.WAIT,
    WaitReason.DEPENDENCY_NEVER: StatusCode.UNRESOLVABLE,
    WaitReason.BEGIN_TIME: StatusCode.WAIT,
    WaitReason.HELD: StatusCode.WAIT,
    WaitReason.RESERVATION: StatusCode.WAIT,
    WaitReason.PARTITION_LIMIT: StatusCode.UNRESOLVABLE,
    WaitReason.PARTITION_DOWN: StatusCode.UNSCHEDULABLE,
    WaitReason.LICENSES: StatusCode.UNSCHEDULABLE,
    WaitReason.BAD_REQUEST: StatusCode.UNRESOLVABLE,
    WaitReason.SCHEDULER: StatusCode.WAIT,
    WaitReason.UNKNOWN: StatusCode.WAIT,
}

_EXACT: dict[str, WaitReason] = {
    "resources": WaitReason.RESOURCES,
    "priority": WaitReason.PRIORITY,
    "dependency": WaitReason.DEPENDENCY,
    "dependencyneversatisfied": WaitReason.DEPENDENCY_NEVER,
    "begintime": WaitReason.BEGIN_TIME,
    "jobhelduser": WaitReason.HELD,
    "jobheldadmin": WaitReason.HELD,
    "reservation": WaitReason.RESERVATION,
    "resvdeleted": WaitReason.RESERVATION,
    "partitiondown": WaitReason.PARTITION_DOWN,
    "partitioninactive": WaitReason.PARTITION_DOWN,
    "licenses": WaitReason.LICENSES,
    "badconstraints": WaitReason.BAD_REQUEST,
    "invalidqos": WaitReason.BAD_REQUEST,
    "invalidaccount": WaitReason.BAD_REQUEST,
    "none": WaitReason.SCHEDULER,
    "": WaitReason.SCHEDULER,
}

_PREFIXES: tuple[tuple[str, WaitReason], ...] = (
    ("reqnodenotavail", WaitReason.NODES_UNAVAILABLE),
    ("nodedown", WaitReason.NODES_UNAVAILABLE),
    ("qos", WaitReason.QUOTA),
    ("assoc", WaitReason.QUOTA),
    ("maxcpu", WaitReason.QUOTA),
    ("maxgres", WaitReason.QUOTA),
    ("partitiontimelimit", WaitReason.PARTITION_LIMIT),
    ("partitionnodelimit", WaitReason.PARTITION_LIMIT),
    ("partitionconfig", WaitReason.PARTITION_LIMIT),
    ("badconstraints", WaitReason.BAD_REQUEST),
    ("launch", WaitReason.SCHEDULER),
)


def slurm_reason_code(reason: str) -> str:
    """The reason's code word: ``ReqNodeNotAvail, UnavailableNodes:gpu016`` -> ``ReqNodeNotAvail``."""
    return reason.split(",", 1)[0].split("(", 1)[0].strip()


def map_reason(reason: str) -> WaitReason:
    key = slurm_reason_code(reason).lower().replace("_", "")
    if key in _EXACT:
        return _EXACT[key]
    for prefix, code in _PREFIXES:
        if key.startswith(prefix):
            return code
    return WaitReason.UNKNOWN


def reason_detail(reason: str) -> str:
    """What Slurm adds after the code word (``UnavailableNodes:gpu016``), or ''."""
    code = slurm_reason_code(reason)
    rest = reason[len(code):].strip().lstrip(",").strip()
    return rest.strip("()")
