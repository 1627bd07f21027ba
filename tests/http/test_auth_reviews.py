"""``kubectl auth can-i`` / ``can-i --list`` / ``whoami`` against a served twin: its one token may do
everything, and the review APIs say so (nothing is stored); without the token they answer 401."""

from __future__ import annotations

from tests.http.conftest import Served


def test_kubectl_auth_commands(served: Served) -> None:
    assert served.kubectl("auth", "can-i", "create", "pods").stdout.strip() == "yes"
    assert (
        served.kubectl("auth", "can-i", "delete", "rayjobs.ray.io", "-n", "kube-system").stdout.strip()
        == "yes"
    )
    rules = served.kubectl("auth", "can-i", "--list").stdout
    assert "*.*" in rules
    who = served.kubectl("auth", "whoami").stdout
    assert "flexq-admin" in who and "system:masters" in who


def test_review_api_shapes(served: Served) -> None:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "workloads", "group": "kueue.x-k8s.io"}},
    }
    r = served.http("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=body)
    assert r.status_code == 201
    assert r.json()["status"]["allowed"] is True
    assert r.json()["spec"] == body["spec"]
    assert served.http("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").status_code == 405
    anon = served.http("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=None, json={})
    assert anon.status_code == 401
