"""Issue 49, item 4: Pod Security labels as the admission plugin reads them (``PolicyToEvaluate``,
``ValidateNamespace``), over real HTTPS with kubectl.

An invalid level (``enforce=Restricted``) is refused when a namespace is created or its label changed (422,
``metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "Restricted": must be one of privileged,
baseline, restricted``); a namespace that still carries one (an old object) is evaluated as ``restricted:latest``,
never as privileged."""

from __future__ import annotations

import json

import pytest

from flexq.api import podsecurity
from flexq.errors import Forbidden
from tests.http.conftest import Served

PRIVILEGED = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "root"},
    "spec": {"containers": [{"name": "c", "image": "busybox", "securityContext": {"privileged": True}}]},
}
WHY = 'Invalid value: "Restricted": must be one of privileged, baseline, restricted'


def test_an_invalid_level_is_refused_on_create_and_on_change(served: Served) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "psa-typo", "labels": {"pod-security.kubernetes.io/enforce": "Restricted"}},
    }
    r = served.kubectl("create", "-f", "-", input=json.dumps(doc), check=False)
    assert (
        r.returncode == 1
        and WHY in r.stderr
        and "metadata.labels[pod-security.kubernetes.io/enforce]" in r.stderr
    ), r.stderr
    assert served.kubectl("get", "namespace", "psa-typo", check=False).returncode == 1  # not stored
    served.kubectl("create", "namespace", "psa-ok")
    served.kubectl("label", "namespace", "psa-ok", "pod-security.kubernetes.io/enforce=restricted")
    r = served.kubectl(
        "label",
        "namespace",
        "psa-ok",
        "--overwrite",
        "pod-security.kubernetes.io/enforce=Restricted",
        check=False,
    )
    assert r.returncode == 1 and WHY in r.stderr, r.stderr
    r = served.kubectl("label", "namespace", "psa-ok", "pod-security.kubernetes.io/warn=nope", check=False)
    assert r.returncode == 1 and 'Invalid value: "nope"' in r.stderr, r.stderr


def test_an_unparseable_level_already_stored_is_enforced_as_restricted() -> None:
    """A namespace stored before the check with a bad level (the admission refuses new ones): pods are judged by
    restricted:latest (``ParseLevel`` returns the most restrictive level with its error)."""

    class Reader:
        def peek(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
            labels = {
                "pod-security.kubernetes.io/enforce": "Restricted",
                "pod-security.kubernetes.io/enforce-version": "v1.20",
            }
            return {"metadata": {"name": name, "labels": labels}} if kind == "Namespace" else None

    pod = {**PRIVILEGED, "metadata": {"name": "root", "namespace": "psa-old"}}
    with pytest.raises(Forbidden) as exc:
        podsecurity.admit("CREATE", pod, None, Reader(), "root")
    assert (
        'violates PodSecurity "restricted:latest"' in exc.value.message and "privileged" in exc.value.message
    )
