"""The planner checks its own diagnosis (issue 33): a family of broken studies, each one mistake of configuration
made in a small, working plan-A/plan-B study (``data/planb``). Every one is refused before anything runs, naming
the file and the field; and the ones a real kubelet would only show at run time, run anyway (``check=False``),
are diagnosed with that mistake as the first cause, in the kubelet's words, with no capacity advice."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import flexq
from flexq.errors import InputError

DATA = Path(__file__).with_name("data") / "planb"
CAPACITY_KNOBS = {"poolMax", "nominalQuota", "retryLimit", "podsReadyTimeout", "flavorOrder", "cluster"}


def _edit(path: Path, fn: Callable[[Any], Any]) -> None:
    docs = list(yaml.safe_load_all(path.read_text()))
    out = fn(docs[0] if len(docs) == 1 else docs)
    path.write_text(yaml.safe_dump_all(out if isinstance(out, list) else [out], sort_keys=False))


def _container(job: dict) -> dict:
    return job["spec"]["template"]["spec"]["containers"][0]


def _pod(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def _study_doc(study: Path, fn: Callable[[dict], None]) -> None:
    doc = yaml.safe_load((study / "simulation.yaml").read_text())
    fn(doc)
    (study / "simulation.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def no_configmap(s: Path) -> None:
    _study_doc(s, lambda d: d.update(manifests=["queues.yaml"]))


def secret_volume(s: Path) -> None:
    def f(job: dict) -> dict:
        _pod(job)["volumes"].append({"name": "creds", "secret": {"secretName": "gcs-key"}})
        return job

    _edit(s / "job.yaml", f)


def projected_secret(s: Path) -> None:
    def f(job: dict) -> dict:
        _pod(job)["volumes"].append(
            {"name": "all", "projected": {"sources": [{"secret": {"name": "tokens"}}]}}
        )
        return job

    _edit(s / "job.yaml", f)


def pvc_volume(s: Path) -> None:
    def f(job: dict) -> dict:
        _pod(job)["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "datasets"}})
        return job

    _edit(s / "job.yaml", f)


def env_configmap(s: Path) -> None:
    def f(job: dict) -> dict:
        _container(job)["env"] = [
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}
        ]
        return job

    _edit(s / "job.yaml", f)


def env_missing_key(s: Path) -> None:
    def f(job: dict) -> dict:
        _container(job)["env"] = [
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "train-script", "key": "mode"}}}
        ]
        return job

    _edit(s / "job.yaml", f)


def envfrom_secret(s: Path) -> None:
    def f(job: dict) -> dict:
        _container(job)["envFrom"] = [{"secretRef": {"name": "wandb"}}]
        return job

    _edit(s / "job.yaml", f)


def bad_image(s: Path) -> None:
    def f(job: dict) -> dict:
        _container(job)["image"] = "Python:3.11"
        return job

    _edit(s / "job.yaml", f)


def template_placeholder(s: Path) -> None:
    def f(job: dict) -> dict:
        _container(job)["image"] = "${TRAIN_IMAGE}"
        return job

    _edit(s / "job.yaml", f)


def manifest_placeholder(s: Path) -> None:
    def f(docs: list) -> list:
        docs[0]["spec"]["nodeLabels"]["cloud.google.com/gke-nodepool"] = "${ONDEMAND_NODEPOOL}"
        return docs

    _edit(s / "queues.yaml", f)


def queue_name(s: Path) -> None:
    _study_doc(s, lambda d: d["generator"]["mix"][0].update(queue="team-queue"))


def queue_namespace(s: Path) -> None:
    def f(docs: list) -> list:
        docs[3]["metadata"]["namespace"] = "team-a"
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}, *docs]

    _edit(s / "queues.yaml", f)


def priority_class(s: Path) -> None:
    _study_doc(s, lambda d: d["generator"]["mix"][0].update(priority="high"))


def fallback_not_opted_in(s: Path) -> None:
    _study_doc(s, lambda d: d.update(variants=[{"name": "base", "settings": {"fallback": True}}]))


def one_variant_without_configmap(s: Path) -> None:
    _study_doc(
        s, lambda d: d.update(variants=[{"name": "base"}, {"name": "lean", "manifests": ["queues.yaml"]}])
    )


# id, the mistake, (file, field, words of the refusal), the first cause a run without the preflight shows
FAMILY: list[tuple[str, Callable[[Path], None], tuple[str, str, str], str | None]] = [
    (
        "configmap-volume",
        no_configmap,
        ("job.yaml", "spec.template.spec.volumes[0].configMap.name", "ConfigMap 'train-script'"),
        "FailedMount",
    ),
    (
        "secret-volume",
        secret_volume,
        ("job.yaml", "spec.template.spec.volumes[1].secret.secretName", "Secret 'gcs-key'"),
        "FailedMount",
    ),
    (
        "projected-secret",
        projected_secret,
        ("job.yaml", "volumes[1].projected.sources[0].secret.name", "Secret 'tokens'"),
        None,
    ),
    (
        "pvc-volume",
        pvc_volume,
        ("job.yaml", "volumes[1].persistentVolumeClaim.claimName", "PersistentVolumeClaim 'datasets'"),
        None,
    ),
    (
        "env-configmap",
        env_configmap,
        ("job.yaml", "env[0].valueFrom.configMapKeyRef.name", "ConfigMap 'settings'"),
        "CreateContainerConfigError",
    ),
    (
        "env-missing-key",
        env_missing_key,
        ("job.yaml", "env[0].valueFrom.configMapKeyRef.key", "has no key 'mode'"),
        "CreateContainerConfigError",
    ),
    (
        "envfrom-secret",
        envfrom_secret,
        ("job.yaml", "envFrom[0].secretRef.name", "Secret 'wandb'"),
        "CreateContainerConfigError",
    ),
    ("image", bad_image, ("job.yaml", "containers[0].image", "InvalidImageName"), "InvalidImageName"),
    (
        "template-placeholder",
        template_placeholder,
        ("job.yaml", "spec.template.spec.containers[0].image", "${TRAIN_IMAGE} is not expanded"),
        None,
    ),
    (
        "manifest-placeholder",
        manifest_placeholder,
        ("queues.yaml", "document 1: spec.nodeLabels", "${ONDEMAND_NODEPOOL} is not expanded"),
        None,
    ),
    ("queue-name", queue_name, ("simulation.yaml", "queue", "no LocalQueue 'team-queue'"), None),
    (
        "queue-namespace",
        queue_namespace,
        ("simulation.yaml", "queue", "no LocalQueue 'q' in namespace 'default'"),
        None,
    ),
    (
        "priority-class",
        priority_class,
        ("simulation.yaml", "priority", "no WorkloadPriorityClass or PriorityClass 'high'"),
        None,
    ),
    (
        "fallback-not-opted-in",
        fallback_not_opted_in,
        ("simulation.yaml", "settings.fallback", 'fallback.flexq.dev/enabled: "true"'),
        "FallbackNotOptedIn",
    ),
    (
        "one-variant-without-configmap",
        one_variant_without_configmap,
        ("job.yaml", "configMap.name", "(variant lean)"),
        None,
    ),
]


def _broken(tmp_path: Path, mistake: Callable[[Path], None]) -> Path:
    study = tmp_path / "study"
    shutil.copytree(DATA, study)
    mistake(study)
    return study


def test_the_study_the_family_is_made_from_passes_the_preflight(tmp_path) -> None:
    study = _broken(tmp_path, lambda s: None)
    assert flexq.simulate.preflight(flexq.simulate.load_study(study)) == []


@pytest.mark.parametrize(("name", "mistake", "refusal", "_cause"), FAMILY, ids=[f[0] for f in FAMILY])
def test_each_mistake_is_refused_before_anything_runs_naming_file_and_field(
    tmp_path, name, mistake, refusal, _cause
) -> None:
    study = _broken(tmp_path, mistake)
    with pytest.raises(InputError) as info:
        flexq.simulate(study, workers=1, plots=False)
    text = str(info.value)
    source, field, words = refusal
    lines = [ln for ln in text.splitlines() if words in ln]
    assert lines, text
    assert any(source in ln and field in ln for ln in lines), text
    if "expanded" in words:
        assert "envsubst" in text and "env:" in text  # the hint: envsubst first, or set it in the study


RUNTIME = [f for f in FAMILY if f[3] is not None]


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory) -> dict:
    """The figures of the study the family is made from (the fix of each mistake should give them back)."""
    from flexq.simulate.whatif import figures

    res = flexq.simulate(DATA, workers=1, plots=False, whatif=False)
    return figures(res.documents["base"])


@pytest.mark.parametrize(("name", "mistake", "_refusal", "code"), RUNTIME, ids=[f[0] for f in RUNTIME])
def test_run_anyway_the_mistake_is_the_first_cause_and_no_capacity_advice_is_given(
    tmp_path, unbroken, name, mistake, _refusal, code
) -> None:
    study = _broken(tmp_path, mistake)
    res = flexq.simulate(study, workers=1, plots=False, check=False)
    causes = res.documents["base"]["causes"]
    assert causes and causes[0]["code"] == code, [c["code"] for c in causes]
    assert all(c.get("config") for c in causes), [c["code"] for c in causes]
    shown = [k for c in causes for o in c["options"] for k in o["knobs"]]
    assert not [k for k in shown if k["kind"] in CAPACITY_KNOBS], shown
    first = causes[0]
    assert first["fix"]
    assert first["jobsLost"] >= 1 or code == "FallbackNotOptedIn"  # its lost job is NodepoolSizeReached's
    if code in ("FailedMount", "CreateContainerConfigError", "FallbackNotOptedIn"):
        # the fix, run on the same seeds, measured: for a missing object, the unbroken study's own figures
        (fix,) = first["options"]
        assert fix["tested"]["helps"], fix
        if code != "FallbackNotOptedIn":
            assert "not found" in first["title"] or "has no key" in first["title"]
            assert fix["knobs"][0]["kind"] == "object" and fix["tested"]["whatIf"] == unbroken
            made = [d for d in yaml.safe_load_all(fix["tested"]["apply"]) if d]
            assert [d["kind"] for d in made] == [fix["knobs"][0]["value"]["kind"]]  # whole, for kubectl apply
    lost = res.documents["base"]["replicas"][0]["jobs"]["lost"]
    assert sum(c["jobsLost"] for c in causes) <= lost  # each lost job under one cause at most
