"""``flexq fallback manifests`` applied to the served twin with real kubectl (server-side dry run and for real),
and the twin refusing broken RBAC objects and Deployments with the API server's words."""

from __future__ import annotations

import subprocess
import sys

import yaml

from flexq.cli.fallback import CLUSTER_RULES, manifests_yaml


def _manifests(*args: str) -> str:
    r = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "fallback", "manifests", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_manifests_apply_with_server_dry_run(served) -> None:
    text = _manifests()
    assert text == manifests_yaml()
    kinds = [d["kind"] for d in yaml.safe_load_all(text)]
    assert kinds == [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
    ]
    # as on a real API server, a server-side dry run creates no namespace, so what goes into a new one is
    # refused for want of it
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=text, check=False)
    assert r.returncode != 0 and 'namespaces "flexq-system" not found' in r.stderr, r.stderr
    served.kubectl("create", "namespace", "flexq-system")
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=text)
    for line in (
        "namespace/flexq-system configured (server dry run)",
        "serviceaccount/flexq-fallback created (server dry run)",
        "clusterrole.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "clusterrolebinding.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "role.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "rolebinding.rbac.authorization.k8s.io/flexq-fallback created (server dry run)",
        "deployment.apps/flexq-fallback created (server dry run)",
    ):
        assert line in r.stdout, r.stdout
    assert (
        "flexq-fallback" not in served.kubectl("get", "clusterroles", "-o", "name").stdout
    )  # nothing stored
    assert (
        "flexq-fallback" not in served.kubectl("get", "deploy,sa", "-n", "flexq-system", "-o", "name").stdout
    )


def test_manifests_apply_and_read_back(served) -> None:
    text = _manifests("--namespace", "fb-test", "--image", "python:3.12-slim")
    served.kubectl("apply", "-f", "-", input=text)
    dep = yaml.safe_load(
        served.kubectl("get", "deploy", "flexq-fallback", "-n", "fb-test", "-o", "yaml").stdout
    )
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "python:3.12-slim"
    assert "flexq fallback --in-cluster" in dep["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    # the API server's defaults
    assert dep["spec"]["revisionHistoryLimit"] == 10 and dep["spec"]["progressDeadlineSeconds"] == 600
    assert dep["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    cr = yaml.safe_load(served.kubectl("get", "clusterrole", "flexq-fallback", "-o", "yaml").stdout)
    assert cr["rules"] == CLUSTER_RULES
    crb = yaml.safe_load(served.kubectl("get", "clusterrolebinding", "flexq-fallback", "-o", "yaml").stdout)
    assert crb["subjects"] == [{"kind": "ServiceAccount", "name": "flexq-fallback", "namespace": "fb-test"}]
    served.kubectl("get", "sa", "flexq-fallback", "-n", "fb-test")
    served.kubectl("get", "role,rolebinding", "flexq-fallback", "-n", "kueue-system")
    again = served.kubectl("apply", "-f", "-", input=text)
    assert "deployment.apps/flexq-fallback unchanged" in again.stdout, again.stdout
    # roleRef is immutable
    crb["roleRef"]["name"] = "other"
    r = served.kubectl("replace", "-f", "-", input=yaml.safe_dump(crb), check=False)
    assert r.returncode != 0 and "cannot change roleRef" in r.stderr, r.stderr
    served.kubectl("delete", "--ignore-not-found", "-f", "-", input=text, timeout=60)


def test_kubectl_create_serviceaccount_generator(served) -> None:
    served.kubectl("create", "serviceaccount", "pb-sa", "-n", "default")
    sa = yaml.safe_load(served.kubectl("get", "sa", "pb-sa", "-n", "default", "-o", "yaml").stdout)
    assert sa["kind"] == "ServiceAccount" and sa["metadata"]["name"] == "pb-sa"
    served.kubectl("delete", "sa", "pb-sa", "-n", "default")


def _refused(served, doc: dict) -> str:
    r = served.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert r.returncode != 0, r.stdout
    return r.stderr


def test_broken_manifests_are_refused_with_the_api_servers_text(served) -> None:
    docs = list(yaml.safe_load_all(manifests_yaml()))
    cr, crb, dep = docs[2], docs[3], docs[6]

    bad = yaml.safe_load(yaml.safe_dump(cr))
    del bad["rules"][0]["verbs"]
    err = _refused(served, bad)
    assert 'The ClusterRole "flexq-fallback" is invalid: ' in err, err
    assert "rules[0].verbs: Required value: verbs must contain at least one value" in err, err

    bad = yaml.safe_load(yaml.safe_dump(cr))
    del bad["rules"][0]["apiGroups"]
    assert (
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group"
        in _refused(served, bad)
    )

    bad = yaml.safe_load(yaml.safe_dump(crb))
    bad["roleRef"]["kind"] = "Role"
    assert 'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"' in _refused(served, bad)

    bad = yaml.safe_load(yaml.safe_dump(crb))
    del bad["subjects"][0]["namespace"]
    assert "subjects[0].namespace: Required value" in _refused(served, bad)

    bad = yaml.safe_load(yaml.safe_dump(dep))
    bad["spec"]["selector"]["matchLabels"] = {"app": "other"}
    err = _refused(served, bad)
    assert 'The Deployment "flexq-fallback" is invalid: ' in err, err
    assert (
        "spec.template.metadata.labels: Invalid value" in err
        and "`selector` does not match template `labels`" in err
    ), err

    bad = yaml.safe_load(yaml.safe_dump(dep))
    bad["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert (
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
        in _refused(served, bad)
    )

    bad = yaml.safe_load(yaml.safe_dump(dep))
    del bad["spec"]["template"]["spec"]["containers"]
    assert "spec.template.spec.containers" in _refused(served, bad)
    assert "flexq-fallback" not in served.kubectl("get", "clusterroles", "-o", "name").stdout
