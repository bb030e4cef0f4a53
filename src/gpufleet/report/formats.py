"""The input formats (scenario, fleet, tenancy, trace) as JSON Schema and as a Markdown reference.

The pydantic models that validate each file are the single source: ``gpufleet schema NAME`` prints
their JSON Schema (with the descriptions below added), and ``tools/gen_formats.py`` writes
docs/formats.md from the same walk. A test regenerates the page and fails when it is stale, so a
new field shows up in the reference (with "—" until it gets a description here).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from gpufleet.model.fleet_config import FleetSpec
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.sim.scenario import ScenarioSpec
from gpufleet.traces.jsonl import TraceRow

#: What each field means, with its unit, by path ("[]" marks a list item, "{}" a mapping value).
D = {
    "name": "Scenario name, shown in reports.",
    "description": "One line shown under the report title.",
    "policies": "Policies to compare (names from `gpufleet simulate --help`).",
    "cycle_interval_s": "Seconds between scheduling cycles; 0 = a cycle at every arrival and finish.",
    "reliability": "Failures in the simulated fleet (issue 13): Llama 3's rates by kind, recovery, spares.",
    "reliability.failure_scale": "Multiplier on Llama 3's failure rates (419 unexpected interruptions in "
                                 "54 days on 16,384 H100s); 0 = no failures.",
    "reliability.recovery": "Recovery configuration: `30-minute` (NCCL timeout, manual replace) or "
                            "`3-minute` (health watch, hot spare, fast reschedule).",
    "reliability.spares": "Hot-spare nodes held out of the pool to replace failed ones.",
    "reliability.detect_s": "Seconds from a fault to its detection (DCGM health watch default 30 s).",
    "reliability.diagnose_s": "Seconds of diagnostics on a quarantined node (`dcgmi diag -r 3` ≈ 900 s).",
    "reliability.repair_hours": "Hours to repair a node in place (assumption; see docs/reliability.md).",
    "reliability.rma_days": "Days a node is away when its parts go back to the vendor (assumption).",
    "reliability.preflight_s": "Seconds of the pre-flight gate before a repaired node takes work.",
    "reliability.seed": "Seed of the failure stream: every policy meets the same failures.",
    "reliability.upgrade": "A driver-upgrade rollout during the run (docs/reliability.md): waves of "
    "`wave` nodes after a `canary`, drained at checkpoints.",
    "reliability.upgrade.wave": "Nodes upgraded at once (a wave).",
    "reliability.upgrade.canary": "Nodes upgraded first and watched for `soak_minutes`; 0: no canary.",
    "reliability.upgrade.start_hours": "When the rollout begins, hours into the run.",
    "reliability.upgrade.node_minutes": "Upgrade of one node: driver + Fabric Manager, reboot, validation.",
    "reliability.upgrade.drain_timeout_s": "Seconds a job gets to reach its next checkpoint before it "
    "is stopped (GPU Operator: 300).",
    "reliability.upgrade.soak_minutes": "How long the canary is watched before the rest.",
    "reliability.upgrade.node_fail_p": "Share of nodes failing validation with a good driver (assumption).",
    "reliability.upgrade.bad_driver_p": "Probability the new driver is bad (drawn once per seed).",
    "reliability.upgrade.bad_fail_p": "Share of canary nodes a bad driver fails.",
    "reliability.upgrade.rollback_share": "Roll back when more than this share of the canary failed.",
    "reliability.upgrade.from_driver": "Driver before the rollout (e.g. 550.54.14); with `to_driver`, jobs "
    "with a `cuda` image go only to nodes whose driver runs it.",
    "reliability.upgrade.to_driver": "Driver the rollout installs (e.g. 580.65.06).",
    "reliability.upgrade.forward_compat": "`cuda-compat` packages are installed (data-center GPUs): a newer "
    "CUDA major runs on an older driver.",
    "reliability.upgrade.fabric_manager": "Fabric Manager the rollout installs; default the new driver's "
    "(pinned). Another version: FM does not start, CUDA fails with 802, the node fails validation.",
    "reliability.upgrade.fm_minutes": "Minutes of the Fabric Manager step after the driver's (NVSwitch "
    "systems); 0: one step with the driver.",
    "reliability.upgrade.nvswitch": "The nodes have NVSwitches, so Fabric Manager must equal the driver.",
    "reliability.upgrade.kernel": "Linux kernel of every node (e.g. 5.15.0): a driver whose module does not "
    "support it fails validation (3.10 before R560, 4.15 from R560); omitted: not checked.",
    "reliability.upgrade.nodes": "A mixed fleet: where the nodes named like `match` start (driver, "
    "Fabric Manager, kernel); later entries win.",
    "reliability.upgrade.nodes[].match": "Node names (fnmatch pattern, e.g. `g0-n000*`).",
    "reliability.upgrade.nodes[].driver": "Their driver before the rollout; default `from_driver`.",
    "reliability.upgrade.nodes[].fabric_manager": "Their Fabric Manager; default their driver. A "
    "different version holds the node out of service until its wave.",
    "reliability.upgrade.nodes[].kernel": "Their Linux kernel; default `kernel`.",
    "reliability.days": "Days of failures drawn; default the workload's horizon, or 30 days.",
    "reliability.spot": "Spot capacity (docs/reliability.md): the first `nodes` nodes are reclaimed with "
    "a notice, per node and by zone capacity events; each zone may have its own rates.",
    "reliability.spot.nodes": "How many nodes are spot (the first ones of the fleet).",
    "reliability.spot.reclaims_per_node_day": "Independent reclaims per spot node per day (Poisson).",
    "reliability.spot.notice_s": "Warning before the node goes (AWS 120 s; GCP, Azure 30 s).",
    "reliability.spot.away_hours": "How long a reclaimed node stays away.",
    "reliability.spot.zone_events_per_day": "Capacity events per zone per day, each taking "
    "`zone_fraction` of the zone's spot nodes at one instant; 0: none.",
    "reliability.spot.zone_fraction": "Share of a zone's spot nodes one capacity event takes.",
    "reliability.spot.zones": "Per zone (by fleet zone name) its own rates; zones omitted use the defaults.",
    "reliability.spot.zones{}.reclaims_per_node_day": "This zone's independent reclaims per node-day.",
    "reliability.spot.zones{}.events_per_day": "This zone's capacity events per day.",
    "reliability.spot.zones{}.fraction": "Share of this zone's spot nodes one event takes.",
    "runtime_model": "`topology`: a training job's run time is stretched by its placement's slowdown.",
    "fleet": "The fleet: `groups` (compact) or `nodes` (per node), or in a scenario `{file: fleet.yaml}`.",
    "fleet.name": "Fleet name.",
    "fleet.fabric": "Scale-out network figures for the bandwidth model.",
    "fleet.fabric.nic_gbps": "NIC bandwidth per GPU rail, Gb/s.",
    "fleet.fabric.leaf_oversubscription": "Leaf downlink:uplink bandwidth ratio (1 = non-blocking).",
    "fleet.fabric.spine_oversubscription": "Spine downlink:uplink bandwidth ratio (1 = non-blocking).",
    "fleet.groups": "Node groups (compact form).",
    "fleet.groups[].nodes": "Nodes in the group.",
    "fleet.groups[].gpu": "GPU model or alias from the catalog (H100-80GB, H200, A100-80GB, B200, GB200, "
                          "L40S).",
    "fleet.groups[].gpus_per_node": "GPUs per node.",
    "fleet.groups[].cpus": "CPU cores per node.",
    "fleet.groups[].memory_gb": "Host memory per node, GB.",
    "fleet.groups[].leaf_size": "Nodes per leaf switch (rounded to whole NVLink domains).",
    "fleet.groups[].leaves_per_spine": "Leaves per spine switch.",
    "fleet.groups[].nvlink_domain_nodes": "Nodes per NVLink domain (18 for a GB200 NVL72 rack).",
    "fleet.groups[].zone": "Zone name.",
    "fleet.groups[].prefix": "Node-name prefix (names are PREFIX-n0000…); unique per group.",
    "fleet.nodes": "Nodes one by one (per-node form, as `gpufleet slurm import-conf` writes).",
    "fleet.nodes[].id": "Node name, unique.",
    "fleet.nodes[].gpu": "GPU model or alias.",
    "fleet.nodes[].gpus": "GPUs on the node (0 for a CPU node).",
    "fleet.nodes[].cpus": "CPU cores.",
    "fleet.nodes[].memory_gb": "Host memory, GB.",
    "fleet.nodes[].zone": "Zone name.",
    "fleet.nodes[].spine": "Spine switch name.",
    "fleet.nodes[].leaf": "Leaf switch name.",
    "fleet.nodes[].nvlink_domain": "NVLink domain name (the node's own name for an HGX node).",
    "fleet.nodes[].health": "healthy, degraded, draining or down, or a health-machine state (suspect, "
                            "quarantined, diagnosing, repaired, rma, preflight) stored as its label.",
    "fleet.nodes[].weight": "Scheduling weight (Slurm's node Weight, default 1): lighter nodes are used "
                             "first by the Slurm-like node choice.",
    "workload": "Exactly one of `generator`, `jobs` or `trace`.",
    "workload.generator": "A seeded synthetic workload sized to the fleet.",
    "workload.generator.days": "Arrival window, days; the simulation runs until the queue drains.",
    "workload.generator.offered_load": "GPU-time asked ÷ GPU-time available over the window (0.9 = 90 %).",
    "workload.generator.max_gpus": "Largest job, GPUs.",
    "workload.generator.seed": "Seed; the same seed gives the same jobs.",
    "workload.generator.tenants": "Tenants and their shares of arrivals.",
    "workload.generator.tenants[].name": "Tenant name.",
    "workload.generator.tenants[].weight": "Relative share of arrivals.",
    "workload.generator.training": "Turn a share of the gangs into training jobs (TP/PP/DP layouts).",
    "workload.generator.training.fraction": "Share of eligible gangs made training jobs, 0..1.",
    "workload.generator.training.min_gpus": "Smallest training job, GPUs.",
    "workload.generator.training.pod_gpus": "GPUs per pod → probability.",
    "workload.generator.checkpointing": "Give multi-GPU jobs checkpointing.",
    "workload.generator.checkpointing.intervals_s": "Checkpoint intervals to draw from, seconds.",
    "workload.generator.checkpointing.cost_s": "Time to write one checkpoint, seconds.",
    "workload.generator.checkpointing.restart_s": "Time to restart from a checkpoint, seconds.",
    "workload.generator.checkpointing.min_gpus": "Smallest job given checkpointing, GPUs.",
    "workload.jobs": "Jobs listed one by one; ids unique.",
    "workload.jobs[].id": "Job id, unique in the file.",
    "workload.jobs[].tenant": "Tenant (a queue in `tenancy.tenants` when there is a tenancy).",
    "workload.jobs[].submit": "Submit time, seconds from the start.",
    "workload.jobs[].run_time": "Run time once started, seconds.",
    "workload.jobs[].estimate": "User's run-time estimate (the backfill limit), seconds; default: run_time.",
    "workload.jobs[].replicas": "Pods in the gang (all start together or none).",
    "workload.jobs[].gpus": "Whole GPUs per pod (0 for a MIG or shared pod).",
    "workload.jobs[].cpus": "CPU cores per pod.",
    "workload.jobs[].memory_gb": "Host memory per pod, GB.",
    "workload.jobs[].gpu_models": "Allowed GPU models; empty = any.",
    "workload.jobs[].priority": "Priority (higher first).",
    "workload.jobs[].priority_class": "A name from `tenancy.priority_classes`; overrides `priority`.",
    "workload.jobs[].checkpoint_interval_s": "Checkpoint every this many seconds (preemption loses less).",
    "workload.jobs[].checkpoint_cost_s": "Time to write one checkpoint, seconds.",
    "workload.jobs[].restart_s": "Time to restart after preemption, seconds.",
    "workload.jobs[].min_replicas": "Elastic gang: the fewest pods it keeps running with after a failure "
    "(it grows back when capacity returns); omitted: rigid.",
    "workload.jobs[].replica_step": "Elastic gang: pods per data-parallel replica; it shrinks and grows "
    "in these.",
    "workload.jobs[].elastic_serial_fraction": "Elastic gang: Amdahl's serial fraction s of a step "
    "(all-reduce, optimizer): speed at n replicas ∝ 1/(s + (1 − s)/n); 0: linear in replicas.",
    "workload.jobs[].kind": "batch, training, inference or notebook.",
    "workload.jobs[].cuda": "CUDA toolkit of the job's image (e.g. 12.8): during a driver rollout with "
    "`from_driver`/`to_driver` it goes only to nodes whose driver runs it; omitted: any driver.",
    "workload.jobs[].nccl": "NCCL of the job's image (`2.27.3+cuda12.9`, or `2.27.3` with `cuda`): its "
    "build's CUDA must be of the image's major, and the node's driver must run it.",
    "workload.jobs[].tp": "Tensor-parallel degree (tp × pp × dp = replicas × gpus).",
    "workload.jobs[].pp": "Pipeline-parallel degree.",
    "workload.jobs[].dp": "Data-parallel degree.",
    "workload.jobs[].model": "Training profile for the step-time model (llama-7b, llama-13b, llama-70b).",
    "workload.jobs[].topology_required": "The gang must sit within one nvlink domain, node, leaf or spine.",
    "workload.jobs[].topology_preferred": "Prefer (not require) one nvlink domain, node, leaf or spine.",
    "workload.jobs[].mig_profile": "A MIG instance per pod, e.g. 3g.40gb.",
    "workload.jobs[].gpu_milli": "A soft share of one GPU per pod, thousandths (1..1000).",
    "workload.jobs[].share": "How a soft share is enforced.",
    "workload.jobs[].gpu_memory_gb": "GPU memory of a soft share, GB.",
    "workload.trace": "A gpufleet JSON-lines trace, relative to the scenario file.",
    "tenancy": "Tenant queues, cohorts, quotas and priority classes; absent: no quotas.",
    "tenancy.half_life_h": "Half-life of decayed usage for fair share, hours.",
    "tenancy.usage_weight": "Weight of usage history vs current allocation in fair share, 0..1.",
    "tenancy.grace_s": "Notice before a preempted job is evicted, seconds.",
    "tenancy.priority_classes": "Named priorities.",
    "tenancy.priority_classes[].name": "Class name.",
    "tenancy.priority_classes[].value": "Priority value (distinct per class).",
    "tenancy.priority_classes[].preemptible": "Whether jobs of this class may be preempted.",
    "tenancy.cohorts": "Cohorts that lend and borrow quota among their tenants.",
    "tenancy.cohorts[].name": "Cohort name.",
    "tenancy.cohorts[].parent": "Parent cohort.",
    "tenancy.cohorts[].quotas": "GPU model → quota held by the cohort itself.",
    "tenancy.tenants": "Tenant queues.",
    "tenancy.tenants[].name": "Tenant name (jobs name it in `tenant`).",
    "tenancy.tenants[].cohort": "Cohort the tenant belongs to.",
    "tenancy.tenants[].weight": "Fair-share weight.",
    "tenancy.tenants[].priority_budget_gpus": "GPUs the tenant may run at high priority.",
    "tenancy.tenants[].quotas": "GPU model → quota, GPUs.",
    "tenancy.cohorts[].weight": "Fair-sharing weight of the cohort (Kueue's fairSharing.weight; 0 = "
                                "its share counts as infinite).",
    "tenancy.cohorts[].resources": "Flavor → resource (cpu, memory, any named resource) → quota held by "
                                   "the cohort itself (Kueue's resourceGroups).",
    "tenancy.tenants[].resources": "Flavor → resource (cpu, memory, any named resource) → quota of the "
                                   "queue beside its GPUs (Kueue's resourceGroups).",
    "tenancy.tenants[].resource_groups": "Kueue's resourceGroups: the resources each group covers "
                                         "(nvidia.com/gpu, cpu, memory_gb, named); one flavor per group. "
                                         "Empty: one group over everything.",
    "tenancy.cohorts[].resource_groups": "Resource groups of the cohort's own quota, as on a tenant.",
    "tenancy.tenants[].kueue": "The queue's Kueue rules, read by the `kueue` profile (ours ignores them).",
    "tenancy.tenants[].kueue.within_cluster_queue": "Kueue preemption.withinClusterQueue: which of the "
                                                    "queue's own workloads a pending one may evict.",
    "tenancy.tenants[].kueue.reclaim_within_cohort": "Kueue preemption.reclaimWithinCohort: which "
                                                     "borrowers' workloads it may evict to reclaim quota.",
    "tenancy.tenants[].kueue.borrow_within_cohort": "Kueue preemption.borrowWithinCohort.policy: may it "
                                                    "evict while borrowing.",
    "tenancy.tenants[].kueue.max_priority_threshold": "Kueue borrowWithinCohort.maxPriorityThreshold: "
                                                      "only victims at or below this priority.",
    "tenancy.tenants[].kueue.queueing_strategy": "Kueue queueingStrategy: StrictFIFO blocks behind an "
                                                 "unadmitted head; BestEffortFIFO lets others pass.",
    "tenancy.tenants[].kueue.when_can_borrow": "Kueue flavorFungibility.whenCanBorrow: borrow in this "
                                               "flavor, or try the next flavor first.",
    "tenancy.tenants[].kueue.when_can_preempt": "Kueue flavorFungibility.whenCanPreempt: preempt in this "
                                                "flavor, or try the next flavor first.",
    "tenancy.tenants[].kueue.preference": "Kueue flavorFungibility.preference: when every flavor needs "
                                          "borrowing or preemption, BorrowingOverPreemption (default) or "
                                          "PreemptionOverBorrowing.",
    "tenancy.tenants[].kueue.admission_fair_sharing": "Kueue admissionScope UsageBasedAdmissionFairSharing: "
                                                      "order the queue by LocalQueue decayed usage first.",
    "tenancy.admission_fair_sharing": "Kueue admission fair sharing settings for the `kueue` profile "
                                      "(its half-life is half_life_h).",
    "tenancy.admission_fair_sharing.sampling_interval_s": "Kueue usageSamplingInterval, seconds: the "
                                                          "entry penalty is one interval of usage.",
    "tenancy.admission_fair_sharing.local_queue_weights": "LocalQueue (queue-name label) → "
                                                          "fairSharing.weight; 1 when absent.",
    "tenancy.fair_sharing": "Kueue fair sharing for the `kueue` profile (present = enabled).",
    "tenancy.fair_sharing.preemption_strategies": "Kueue fairSharing.preemptionStrategies, tried in "
                                                  "order.",
    "QuotaSpec.nominal": "Guaranteed GPUs.",
    "QuotaSpec.borrowing_limit": "Most GPUs borrowed beyond nominal; absent = no limit.",
    "QuotaSpec.lending_limit": "Most GPUs of the nominal lent to others; absent = all.",
    "ResourceQuotaSpec.nominal": "Guaranteed amount of the resource (cpu cores, memory GB, or units).",
    "ResourceQuotaSpec.borrowing_limit": "Most borrowed beyond nominal; absent = no limit.",
    "ResourceQuotaSpec.lending_limit": "Most of the nominal lent to others; absent = all.",
    "trace.id": "Job id, unique in the file.",
    "trace.tenant": "Tenant.",
    "trace.submit_time": "Submit time, seconds from the earliest submit.",
    "trace.run_time": "Run time, seconds (0: failed at once).",
    "trace.run_time_estimate": "User's estimate (time limit), seconds.",
    "trace.priority": "Priority (higher first).",
    "trace.kind": "batch, training, inference or notebook.",
    "trace.pod_sets": "Pod sets of the gang.",
    "trace.pod_sets[].name": "Pod set name.",
    "trace.pod_sets[].replicas": "Pods.",
    "trace.pod_sets[].gpus": "GPUs per pod.",
    "trace.pod_sets[].cpus": "CPU cores per pod.",
    "trace.pod_sets[].memory_gb": "Host memory per pod, GB.",
    "trace.pod_sets[].gpu_models": "Allowed GPU models; empty = any.",
    "trace.labels": "Free-form labels (e.g. slurm.qos).",
    "trace.eligible_nodes": "Node names the job's pods may use (a per-job node filter); absent = any node.",
    "trace.slurm": "What Slurm did (import-sacct writes it; the simulator ignores it).",
}

EXAMPLES = {
    "scenario": "name: demo\nfleet:\n"
                "  groups: [{nodes: 64, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 16}]\n"
                "workload:\n  generator: {days: 14, offered_load: 0.9, max_gpus: 256, seed: 7}\n"
                "  # or: jobs: [{id: a, tenant: t1, submit: 0, run_time: 3600, replicas: 8, gpus: 8}]\n"
                "policies: [gang-easy, gang-bestfit]\n",
    "fleet": "fleet:\n  name: demo\n  fabric: {nic_gbps: 400, leaf_oversubscription: 2.0}\n  groups:\n"
             "    - {nodes: 64, gpu: H100-80GB, gpus_per_node: 8, leaf_size: 16}\n"
             "    - {nodes: 18, gpu: GB200, gpus_per_node: 4, nvlink_domain_nodes: 18}\n",
    "tenancy": "tenancy:\n  half_life_h: 24\n"
               "  priority_classes: [{name: normal, value: 0}, {name: high, value: 100}]\n"
               "  cohorts: [{name: org}]\n  tenants:\n    - name: research\n      cohort: org\n"
               "      quotas: {H100-80GB: {nominal: 96, borrowing_limit: 64, lending_limit: 48}}\n",
    "trace": '{"id": "17", "tenant": "prod", "submit_time": 0.0, "run_time": 3600.0, "kind": "training",\n'
             ' "pod_sets": [{"name": "main", "replicas": 2, "gpus": 8, "cpus": 64, "memory_gb": 500}]}\n',
}

#: name → (title, model, path prefix of its fields, what the file is).
SCHEMAS: dict[str, tuple[str, type[BaseModel], str, str]] = {
    "scenario": ("Scenario file", ScenarioSpec, "",
                 "`gpufleet simulate FILE.yaml`: a fleet, a workload and the policies to compare."),
    "fleet": ("Fleet file", FleetSpec, "fleet",
              "`fleet:` in a scenario, or a file `gpufleet simulate --fleet` reads (top-level key `fleet`)."),
    "tenancy": ("Tenancy section", TenancySpec, "tenancy", "`tenancy:` in a scenario."),
    "trace": ("Trace (JSON lines)", TraceRow, "trace",
              "One job per line; `gpufleet simulate --trace`, `workload: {trace: …}`."),
}


def describe(path: str) -> str:
    if path in D:
        return D[path]
    if ".resources{}{}." in path:
        return D.get("ResourceQuotaSpec." + path.rsplit(".", 1)[-1], "—")
    if ".quotas{}." in path:
        return D.get("QuotaSpec." + path.rsplit(".", 1)[-1], "—")
    return "—"


def _resolve(schema: dict, node: Any) -> dict:
    if not isinstance(node, dict):  # ``additionalProperties: true`` (any value)
        return {}
    ref = node.get("$ref")
    if ref:
        return _resolve(schema, schema["$defs"][ref.rsplit("/", 1)[-1]])
    return node


def _options(schema: dict, node: dict) -> list[dict]:
    node = _resolve(schema, node)
    if "anyOf" in node:
        return [_resolve(schema, o) for o in node["anyOf"] if o.get("type") != "null"]
    return [node]


def _type(schema: dict, node: dict) -> str:
    parts = []
    for o in _options(schema, node):
        if "enum" in o:
            parts.append(" \\| ".join(f"`{v}`" for v in o["enum"]))
        elif "const" in o:
            parts.append(f"`{o['const']}`")
        elif o.get("type") == "array":
            parts.append(f"list of {_type(schema, o.get('items', {}))}")
        elif o.get("type") == "object" and "properties" not in o:
            parts.append(f"map to {_type(schema, o.get('additionalProperties', {}))}")
        elif o.get("type") == "object" or "properties" in o:
            parts.append("mapping")
        else:
            parts.append(o.get("type", "any"))
    nullable = any(o.get("type") == "null" for o in _resolve(schema, node).get("anyOf", []))
    return " or ".join(parts) + (" (optional)" if nullable else "")


def _bounds(schema: dict, node: dict) -> str:
    out = []
    for o in _options(schema, node):
        for key, sym in (("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"),
                         ("maximum", "≤"), ("minItems", "items ≥"), ("maxItems", "items ≤"),
                         ("minLength", "length ≥")):
            if key in o:
                v = o[key]
                number = isinstance(v, int | float) and not isinstance(v, bool)
                out.append(f"{sym} {v:,}" if number else f"{sym} {v}")
    return ", ".join(out)


def _rows(schema: dict, node: dict, path: str, rows: list[list[str]]) -> None:
    node = _resolve(schema, node)
    required = set(node.get("required", ()))
    for name, prop in node.get("properties", {}).items():
        p = f"{path}.{name}" if path else name
        default = prop.get("default", "")
        shown = "required" if name in required else ("" if default == "" and "default" not in prop
                                                     else f"`{json.dumps(default)}`")
        rows.append([f"`{p}`", _type(schema, prop), shown, _bounds(schema, prop), describe(p)])
        for o in _options(schema, prop):
            if o.get("type") == "array" and "properties" in _resolve(schema, o.get("items", {})):
                _rows(schema, o["items"], f"{p}[]", rows)
            elif "properties" in o:
                _rows(schema, o, p, rows)
            elif o.get("type") == "object" and "properties" in _resolve(
                    schema, o.get("additionalProperties", {})):
                _rows(schema, o["additionalProperties"], f"{p}{{}}", rows)


def json_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of format ``name``, with each property's description filled in."""
    title, model, prefix, what = SCHEMAS[name]
    schema = model.model_json_schema()

    def annotate(node: dict, path: str) -> None:
        node = _resolve(schema, node)
        inner = node.get("additionalProperties")
        if "properties" not in node and node.get("type") == "object" and isinstance(inner, dict):
            annotate(inner, f"{path}{{}}")  # a map of maps (flavor → resource → quota)
            return
        for key, prop in node.get("properties", {}).items():
            p = f"{path}.{key}" if path else key
            if describe(p) != "—":
                prop["description"] = describe(p)
            for o in _options(schema, prop):
                if o.get("type") == "array":
                    annotate(o.get("items", {}), f"{p}[]")
                elif "properties" in o:
                    annotate(o, p)
                elif o.get("type") == "object":
                    annotate(o.get("additionalProperties", {}), f"{p}{{}}")

    annotate(schema, prefix)
    if name == "fleet":
        schema["description"] = D["fleet"]
        schema = {"title": "Fleet file", "type": "object", "required": ["fleet"],
                  "$defs": schema.pop("$defs", {}),
                  "properties": {"fleet": schema}, "additionalProperties": False}
    schema["description"] = what
    return schema


def markdown() -> str:
    """docs/formats.md: per format, every field with its type, default, bounds and meaning."""
    out = ["# Input formats", "",
           "Generated from the pydantic models by `python tools/gen_formats.py`; do not edit by hand "
           "(a test fails when this page is stale). `gpufleet schema NAME` prints the JSON Schema of "
           f"each ({', '.join(SCHEMAS)}).", "",
           "Units are in the field names and descriptions: `_s` seconds, `_h` hours, `days` days, `_gb` "
           "gigabytes, `gpus` whole GPUs, `gpu_milli` thousandths of a GPU, `cpus` cores. Every number "
           "must be finite: `.nan`, `.inf` and `NaN` are rejected with one line naming the file and "
           "field.", ""]
    for name, (title, model, prefix, what) in SCHEMAS.items():
        schema = model.model_json_schema()
        rows: list[list[str]] = []
        _rows(schema, schema, prefix, rows)
        out += [f"## {title} (`gpufleet schema {name}`)", "", what, "", "Example:", "",
                "```" + ("json" if name == "trace" else "yaml"), EXAMPLES[name].rstrip("\n"), "```", "",
                "| field | type | default | bounds | meaning |", "|---|---|---|---|---|"]
        out += ["| " + " | ".join(c.replace("|", "\\|") if i != 1 else c for i, c in enumerate(r)) + " |"
                for r in rows]
        out.append("")
    return "\n".join(out)
