"""Pod Security admission (issue 36): a namespace labelled ``pod-security.kubernetes.io/enforce`` refuses the
pods that break its level with kube-apiserver's message, through kubectl over HTTPS; a Job's pods there are
refused as upstream's are (FailedCreate), and a namespace without the label is not checked."""

from __future__ import annotations

import json

import pytest

from flexq.api import podsecurity

from .conftest import Served

RESTRICTED_P = (
    'Error from server (Forbidden): pods "p" is forbidden: violates PodSecurity "restricted:latest": '
    'allowPrivilegeEscalation != false (container "p" must set securityContext.allowPrivilegeEscalation=false), '
    'unrestricted capabilities (container "p" must set securityContext.capabilities.drop=["ALL"]), '
    'runAsNonRoot != true (pod or container "p" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or container "p" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")'
)

GOOD = """apiVersion: v1
kind: Pod
metadata: {name: good, namespace: psa-r}
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: busybox
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}
"""


@pytest.fixture(scope="module")
def namespaces(served: Served) -> Served:
    for ns, level in (("psa-r", "restricted"), ("psa-b", "baseline"), ("psa-none", "")):
        served.kubectl("create", "namespace", ns)
        if level:
            served.kubectl("label", "namespace", ns, f"{podsecurity.ENFORCE}={level}")
    return served


def test_a_restricted_namespace_refuses_kubectl_run_with_upstream_s_message(namespaces: Served) -> None:
    r = namespaces.kubectl("run", "p", "--image=busybox", "-n", "psa-r", check=False)
    assert r.returncode == 1
    assert r.stderr.strip() == RESTRICTED_P
    assert namespaces.kubectl("get", "pod", "p", "-n", "psa-r", check=False).returncode == 1
    namespaces.kubectl("apply", "-f", "-", input=GOOD)  # what the level asks for goes in
    # a namespace without the label takes the same pod as kubectl run made it
    namespaces.kubectl("run", "p", "--image=busybox", "-n", "psa-none")


def test_baseline_refuses_host_access_and_lets_the_rest_through(namespaces: Served) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "host", "namespace": "psa-b"},
        "spec": {
            "hostNetwork": True,
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}},
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                }
            ],
        },
    }
    r = namespaces.kubectl("apply", "-f", "-", input=json.dumps(pod), check=False)
    assert r.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "host" is forbidden: violates '
        'PodSecurity "baseline:latest": non-default capabilities (container "c" must not include "SYS_ADMIN" in '
        'securityContext.capabilities.add), host namespaces (hostNetwork=true), hostPath volumes (volume "root"), '
        'hostPort (container "c" uses hostPort 8080), privileged (container "c" must not set '
        "securityContext.privileged=true)"
    )
    namespaces.kubectl("run", "plain", "--image=busybox", "-n", "psa-b")  # baseline takes a default pod


def test_a_job_s_pods_are_refused_and_the_job_says_so(namespaces: Served) -> None:
    namespaces.kubectl("create", "job", "j", "--image=busybox", "-n", "psa-r")
    for _ in range(50):
        events = namespaces.kubectl(
            "get", "events", "-n", "psa-r", "--field-selector", "reason=FailedCreate", "-o", "json"
        )
        items = json.loads(events.stdout)["items"]
        if items:
            break
        namespaces.kubectl("wait", "--for=create", "job/j", "-n", "psa-r", "--timeout=1s", check=False)
    assert items and items[0]["message"].startswith(
        'Error creating: pods "j-" is forbidden: violates PodSecurity "restricted:latest": '
    )
    pods = namespaces.kubectl("get", "pods", "-n", "psa-r", "-l", "job-name=j", "-o", "name").stdout
    assert pods.strip() == ""


@pytest.mark.parametrize(
    ("level", "spec", "expected"),
    [
        ("restricted", {"securityContext": {"runAsNonRoot": False, "runAsUser": 0}, "containers": []}, 2),
        (
            "restricted",
            {"volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}], "containers": []},
            1,
        ),
        ("baseline", {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}, 1),
        ("privileged", {"hostPID": True}, 0),
    ],
    ids=["root", "nfs", "sysctl", "privileged-level"],
)
def test_the_other_checks(level: str, spec: dict, expected: int) -> None:
    found = podsecurity.violations(level, spec)
    assert len(found) == expected, found
    if level == "restricted" and "volumes" in spec:
        assert found == ['restricted volume types (volume "n" uses restricted volume type "nfs")']
