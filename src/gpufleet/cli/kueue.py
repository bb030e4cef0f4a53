"""`gpufleet kueue`: Kueue's quota objects in and out.

    gpufleet kueue import DIR|FILE… [--gpu-model FLAVOR=MODEL] [--out tenancy.yaml]
    gpufleet kueue export CONFIG [--api-version v1beta2|v1beta1] [--out manifests.yaml]

``import`` reads ResourceFlavor, ClusterQueue, Cohort, LocalQueue and WorkloadPriorityClass
manifests (kueue.x-k8s.io v1beta1 or v1beta2; files, directories, ``kubectl get -o yaml`` lists)
and Kueue's Configuration when given, and writes a gpufleet tenancy config; every field it does
not carry over is listed on stderr. ``export`` writes a tenancy config (a scenario file or an
imported config, anything with a ``tenancy:`` section) as those manifests.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
import yaml
from pydantic import ValidationError

from gpufleet.adapters.kueue.export import export_manifests
from gpufleet.adapters.kueue.read import read_manifests
from gpufleet.adapters.kueue.to_tenancy import to_tenancy
from gpufleet.cli.common import console, err_console, one_line_errors
from gpufleet.cli.main import app
from gpufleet.model.errors import InputError, from_validation_error
from gpufleet.model.job import Job
from gpufleet.model.tenancy_config import TenancySpec
from gpufleet.policies.kueue.afs import QUEUE_LABEL
from gpufleet.sim.scenario import Scenario, ScenarioSpec, parse_scenario

kueue_app = typer.Typer(help="Read Kueue's quota objects into a tenancy config; write them back.",
                        no_args_is_help=True)
app.add_typer(kueue_app, name="kueue")


def _gpu_models(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in pairs:
        flavor, sep, model = p.partition("=")
        if not sep or not flavor or not model:
            raise InputError("--gpu-model", p, "FLAVOR=MODEL, e.g. tas-flavor=H100-80GB")
        out[flavor] = model
    return out


@kueue_app.command("import")
@one_line_errors
def import_cmd(
    paths: Annotated[list[Path], typer.Argument(help="Manifest files or directories (YAML/JSON).")],
    gpu_model: Annotated[list[str] | None, typer.Option(
        "--gpu-model", help="FLAVOR=MODEL for a ResourceFlavor whose labels name no GPU model.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the config here (default: stdout).")] = None,
) -> None:
    """Kueue manifests → a gpufleet tenancy config (the `tenancy:` section of a scenario)."""
    objects, notes = read_manifests(paths)
    config, more = to_tenancy(objects, _gpu_models(gpu_model or []), sources=[str(p) for p in paths])
    text = yaml.safe_dump(config, sort_keys=False)
    for n in notes + more:
        err_console.print(f"note: {n}", highlight=False, soft_wrap=True)
    if out is None:
        console.print(text, end="", highlight=False, soft_wrap=True, markup=False)
    else:
        out.write_text(text)
        n = len(config["tenancy"]["tenants"])
        err_console.print(f"wrote {out}: {n} tenant(s); {len(notes) + len(more)} note(s)")


def load_tenancy(path: Path) -> tuple[TenancySpec, dict[str, str]]:
    """The ``tenancy:`` section of a YAML file, validated, and its ``kueue_local_queues``
    (namespace/name → ClusterQueue, written by import); one-line errors."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(str(path), "", f"a readable file ({e.strerror})") from None
    if b"\x00" in raw:
        raise InputError(str(path), "", "a YAML file, not a binary file")
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InputError(str(path), "", f"valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("tenancy"), dict):
        raise InputError(str(path), "tenancy", "a tenancy section (tenants, cohorts, quotas)")
    try:
        spec = TenancySpec.model_validate(data["tenancy"])
    except ValidationError as e:
        raise from_validation_error(str(path), e, "tenancy") from None
    problem = spec.problem()
    if problem is not None:
        raise InputError(str(path), *problem)
    local = data.get("kueue_local_queues") or {}
    if not isinstance(local, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in local.items()):
        raise InputError(str(path), "kueue_local_queues", "a mapping of namespace/name to ClusterQueue name")
    return spec, local


@kueue_app.command("export")
@one_line_errors
def export_cmd(
    config: Annotated[Path, typer.Argument(help="A YAML file with a `tenancy:` section.")],
    api_version: Annotated[str, typer.Option(
        "--api-version", help="v1beta2 (default) or v1beta1.")] = "v1beta2",
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the manifests here (default: stdout).")] = None,
) -> None:
    """A gpufleet tenancy config → Kueue manifests (one multi-document YAML)."""
    if api_version not in ("v1beta1", "v1beta2"):
        raise InputError("--api-version", "", f"v1beta1 or v1beta2, not {api_version!r}")
    spec, local = load_tenancy(config)
    manifests, notes = export_manifests(spec, api_version, local)
    text = yaml.safe_dump_all(manifests, sort_keys=False)
    for n in notes:
        err_console.print(f"note: {n}", highlight=False, soft_wrap=True)
    if out is None:
        console.print(text, end="", highlight=False, soft_wrap=True, markup=False)
    else:
        out.write_text(text)
        err_console.print(f"wrote {out}: {len(manifests)} object(s)")


def kueue_tenancy(paths: list[Path], gpu_models: list[str] | None = None) -> tuple[dict, dict[str, str]]:
    """A tenancy section and its LocalQueues from Kueue manifests (``gpu_models``: FLAVOR=MODEL
    pairs, as ``kueue import --gpu-model``), or from a config that ``gpufleet kueue import``
    wrote (one YAML file with a ``tenancy:`` section)."""
    if len(paths) == 1 and paths[0].is_file():
        try:
            data = yaml.safe_load(paths[0].read_text())
        except (yaml.YAMLError, UnicodeDecodeError, OSError):
            data = None
        if isinstance(data, dict) and "tenancy" in data:
            if gpu_models:
                raise InputError("--gpu-model", gpu_models[0], "Kueue manifests to apply to; "
                                 f"{paths[0]} is an imported config, whose flavors are GPU models already")
            spec, local = load_tenancy(paths[0])
            return spec.model_dump(exclude_defaults=True), local
    objects, notes = read_manifests(paths)
    config, more = to_tenancy(objects, _gpu_models(gpu_models or []), sources=[str(p) for p in paths])
    for n in notes + more:
        err_console.print(f"note: {n}", highlight=False, soft_wrap=True)
    return config["tenancy"], config["kueue_local_queues"]


class KueueTraceScenario(Scenario):
    """A trace replayed under a Kueue config: each job's tenant names its ClusterQueue, or a
    LocalQueue (namespace/name, name, or namespace when only one queue lives there) that
    points to one."""

    def __init__(self, spec: ScenarioSpec, source: str, local_queues: dict[str, str]) -> None:
        super().__init__(spec, source)
        queues = {t.name for t in spec.tenancy.tenants} if spec.tenancy else set()
        self.tenant_of: dict[str, str] = {q: q for q in queues}
        by_ns: dict[str, set[str]] = {}
        #: A job whose tenant names a LocalQueue carries it as Kueue's queue-name label (the
        #: kueue profile's admission fair sharing orders by it).
        self.local_queue_of: dict[str, str] = {}
        for key, cq in local_queues.items():
            ns, _, name = key.rpartition("/")
            self.tenant_of.setdefault(key, cq)
            self.tenant_of.setdefault(name, cq)
            if key not in queues:
                self.local_queue_of.setdefault(key, key)
                self.local_queue_of.setdefault(name, key)
            by_ns.setdefault(ns, set()).add(cq)
        for ns, cqs in by_ns.items():
            if len(cqs) == 1:
                self.tenant_of.setdefault(ns, next(iter(cqs)))
        for j in super().jobs():
            if j.tenant not in self.tenant_of:
                raise InputError(str(spec.workload.trace), f"job {j.id}: tenant",
                                 f"a ClusterQueue or LocalQueue of the Kueue config, not {j.tenant!r} "
                                 f"(queues: {', '.join(sorted(queues))})")

    def jobs(self, seed: int | None = None) -> list[Job]:
        return [replace(j, tenant=self.tenant_of[j.tenant],
                        labels=j.labels + ((QUEUE_LABEL, self.local_queue_of[j.tenant]),)
                        if j.tenant in self.local_queue_of else j.labels)
                for j in super().jobs(seed)]


def kueue_trace_scenario(fleet: Path, trace: Path, kueue: list[Path], gpu_models: list[str] | None = None
                         ) -> Scenario:
    """``gpufleet simulate --fleet F --trace T --kueue DIR [--gpu-model FLAVOR=MODEL]``: the
    trace under the Kueue config, decided by our policy and by Kueue's rules."""
    section, local = kueue_tenancy(kueue, gpu_models)
    data = {"name": trace.stem, "description": f"trace {trace} on fleet {fleet} under the Kueue config "
            f"{', '.join(map(str, kueue))}: our four-layer policy and Kueue's rules side by side",
            "fleet": {"file": str(fleet.resolve())}, "workload": {"trace": str(trace.resolve())},
            "policies": ["tenancy", "kueue"], "tenancy": section}
    base = parse_scenario(data, "<command line>")
    return KueueTraceScenario(base.spec, base.source, local)
