"""One name for one thing (issue 52 item 6): a class name defined at the top level of two modules of ``src/flexq``
is either listed here with why both keep it — the API's schema versions, or a schema and the upstream code that
reads it under upstream's own name — or it is a bug (the fitted forecast model was once renamed onto the GKE
twin's ``CapacityModel``). A reader meeting a name should not have to ask which one it is."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "flexq"

# name -> the modules that may each define it, and why
SHARED: dict[str, tuple[frozenset[str], str]] = {}


def _share(why: str, modules: tuple[str, ...], *names: str) -> None:
    for n in names:
        SHARED[n] = (frozenset(modules), why)


_share(
    "Kueue's v1beta1 and v1beta2 schemas, field for field",
    ("api/kueue_v1beta1.py", "api/kueue_v1beta2.py"),
    "AdmissionCheck",
    "AdmissionCheckSpec",
    "ClusterQueue",
    "ClusterQueueSpec",
    "FlavorFungibility",
    "Workload",
    "WorkloadSpec",
)
_share(
    "the schema, and Kueue's cache snapshot (pkg/cache)",
    ("api/kueue_v1beta2.py", "kueue/snapshot.py"),
    "ResourceGroup",
    "ResourceQuota",
)
_share(
    "the schema, and Kueue's flavor assigner (pkg/scheduler/flavorassigner)",
    ("api/kueue_v1beta2.py", "kueue/flavorassigner.py"),
    "PodSetAssignment",
    "Status",
)
_share(
    "the schema, and Kueue's retry strategy read with its defaults",
    ("api/kueue_v1beta2.py", "kueue/checks.py"),
    "RetryStrategy",
)
_share(
    "the schema of a PodSet in Kueue and in the autoscaler's ProvisioningRequest",
    ("api/autoscaling.py", "api/kueue_v1beta2.py"),
    "PodSet",
)
_share(
    "an admission request (api.scheme), and a Workload's admission (the schema)",
    ("api/scheme.py", "api/kueue_v1beta2.py"),
    "Admission",
)
_share(
    "the schema, and Kueue's RayJob adapter (pkg/controller/jobs/rayjob)",
    ("api/ray.py", "kueue/job_adapters.py"),
    "RayJob",
)
_share("the schema, and a node in Kueue's TAS snapshot", ("api/core.py", "kueue/snapshot.py"), "Node")
_share(
    "batch/v1's JobSpec, and a study's job (flexq.simulate.JobSpec, public)",
    ("api/core.py", "simulate/jobs.py"),
    "JobSpec",
)
_share(
    "the GKE API's schema, and a study's cluster section (its own document)",
    ("api/gke_models.py", "simulate/study_doc.py"),
    "Cluster",
    "NodePool",
)
_share(
    "the two upstream binaries' names: Kueue's scheduler and kube-scheduler",
    ("kueue/scheduler.py", "kube/scheduler.py"),
    "Scheduler",
)
_share(
    "Kueue's jobframework reconciler and kube-controller-manager's Job controller",
    ("kueue/jobframework.py", "kube/job_controller.py"),
    "JobController",
)
_share(
    "an API request's target (http.kube.target), and a preemption target (Kueue's preemption.Target)",
    ("http/kube/target.py", "kueue/preemption.py"),
    "Target",
)


def _top_level_classes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found[node.name].append(path.relative_to(SRC).as_posix())
    return found


def test_a_class_name_stands_for_one_thing() -> None:
    unlisted = {}
    for name, modules in _top_level_classes().items():
        if len(modules) < 2:
            continue
        allowed = SHARED.get(name, (frozenset(), ""))[0]
        if not set(modules) <= allowed:
            unlisted[name] = modules
    assert not unlisted, (
        f"class names defined in more than one module (rename one, or list it in SHARED with why): {unlisted}"
    )


def test_every_listed_name_is_still_shared() -> None:
    found = _top_level_classes()
    stale = {n: sorted(m) for n, (m, _) in SHARED.items() if len(set(found.get(n, ())) & m) < 2}
    assert not stale, f"SHARED lists names no longer defined twice (drop them): {stale}"
