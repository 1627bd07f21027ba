"""Who may do what on a served twin, as the Kubernetes API server decides it: RBAC over Roles, ClusterRoles and
their bindings, ServiceAccount tokens (``kubectl create token``, tokens bound to pods, projected tokens in the
files of a pod the kubelet starts), impersonation (``--as``, ``--as-group``), the review APIs and the API
server's 403 text — with real kubectl and real HTTP.

The matrix states each answer as upstream's rules give it (``plugin/pkg/auth/authorizer/rbac``: a RoleBinding
grants in its namespace only, a ClusterRoleBinding everywhere, ``resourceNames`` only named requests, a
subresource only when listed, ``*/status`` every status, a ServiceAccount subject without a namespace is in the
binding's, a group binding every member, ``view`` no secrets), then checks it three ways: ``kubectl auth can-i``
(a SelfSubjectAccessReview, impersonating), a SubjectAccessReview the admin posts, and the request itself made
with the subject's own credentials (403 or not)."""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexq.runtime.executor import PodRunState
from tests.http.conftest import Served
from tests.kube.kube_builders import add_node, node
from tests.kube.test_kube_kubelet import ManualExecutor

RBAC = "rbac.authorization.k8s.io"

OBJECTS = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: team-b}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: runner, namespace: team-a}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: idle, namespace: team-a}}
---
apiVersion: {RBAC}/v1
kind: Role
metadata: {{name: pod-reader, namespace: team-a}}
rules:
- {{apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}}
---
apiVersion: {RBAC}/v1
kind: RoleBinding
metadata: {{name: runner-reads, namespace: team-a}}
roleRef: {{apiGroup: {RBAC}, kind: Role, name: pod-reader}}
subjects: [{{kind: ServiceAccount, name: runner}}]
---
apiVersion: {RBAC}/v1
kind: Role
metadata: {{name: one-config, namespace: team-a}}
rules:
- {{apiGroups: [""], resources: [configmaps], resourceNames: [settings], verbs: [get, update]}}
---
apiVersion: {RBAC}/v1
kind: RoleBinding
metadata: {{name: runner-config, namespace: team-a}}
roleRef: {{apiGroup: {RBAC}, kind: Role, name: one-config}}
subjects: [{{kind: ServiceAccount, name: runner, namespace: team-a}}]
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: queue-watcher}}
rules:
- {{apiGroups: [kueue.x-k8s.io], resources: [workloads, localqueues], verbs: [get, list, watch]}}
- {{apiGroups: [kueue.x-k8s.io], resources: ["*/status"], verbs: [get]}}
---
apiVersion: {RBAC}/v1
kind: ClusterRoleBinding
metadata: {{name: team-a-queues}}
roleRef: {{apiGroup: {RBAC}, kind: ClusterRole, name: queue-watcher}}
subjects: [{{apiGroup: {RBAC}, kind: Group, name: "system:serviceaccounts:team-a"}}]
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: scraper}}
rules: [{{nonResourceURLs: [/metrics], verbs: [get]}}]
---
apiVersion: {RBAC}/v1
kind: ClusterRoleBinding
metadata: {{name: scrapers}}
roleRef: {{apiGroup: {RBAC}, kind: ClusterRole, name: scraper}}
subjects: [{{apiGroup: {RBAC}, kind: Group, name: observers}}]
---
apiVersion: {RBAC}/v1
kind: RoleBinding
metadata: {{name: alice-view, namespace: team-b}}
roleRef: {{apiGroup: {RBAC}, kind: ClusterRole, name: view}}
subjects: [{{apiGroup: {RBAC}, kind: User, name: alice}}]
---
apiVersion: {RBAC}/v1
kind: RoleBinding
metadata: {{name: dangling, namespace: team-b}}
roleRef: {{apiGroup: {RBAC}, kind: Role, name: missing}}
subjects: [{{apiGroup: {RBAC}, kind: User, name: carol}}]
"""


@dataclass(frozen=True)
class Who:
    user: str
    groups: tuple[str, ...] = ()

    @property
    def sa(self) -> tuple[str, str] | None:
        parts = self.user.split(":")
        return (parts[2], parts[3]) if self.user.startswith("system:serviceaccount:") else None


RUNNER = Who("system:serviceaccount:team-a:runner")
IDLE = Who("system:serviceaccount:team-a:idle")
ALICE = Who("alice")
BOB_OBSERVER = Who("bob", ("observers",))
BOB = Who("bob")
CAROL = Who("carol")


@dataclass(frozen=True)
class Ask:
    """One question: ``verb`` on ``resource`` (``pods``, ``workloads.kueue.x-k8s.io``) or a path."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    @property
    def group(self) -> str:
        return self.resource.split(".", 1)[1] if "." in self.resource else ""

    @property
    def plural(self) -> str:
        return self.resource.split(".", 1)[0]

    def http(self) -> tuple[str, str]:
        """The request that asks it."""
        if self.resource.startswith("/"):
            return "GET", self.resource
        base = (
            f"/apis/{self.group}/{'v1beta2' if self.group == 'kueue.x-k8s.io' else 'v1'}"
            if self.group
            else "/api/v1"
        )
        if self.namespace:
            base += f"/namespaces/{self.namespace}"
        path = f"{base}/{self.plural}" + (f"/{self.name}" if self.name else "")
        if self.plural == "namespaces" and self.name:
            path = f"/api/v1/namespaces/{self.name}"
        path += f"/{self.subresource}" if self.subresource else ""
        method = {"get": "GET", "list": "GET", "delete": "DELETE", "update": "PUT"}[self.verb]
        return method, path

    def can_i(self) -> list[str]:
        if self.resource.startswith("/"):
            return [self.verb, self.resource]
        args = [self.verb, f"{self.resource}/{self.name}" if self.name else self.resource]
        if self.subresource:
            args.append(f"--subresource={self.subresource}")
        args += ["-n", self.namespace] if self.namespace else ["-A"] if self.verb == "list" else []
        return args


# (who, ask, allowed by upstream's rules, why)
MATRIX: list[tuple[Who, Ask, bool, str]] = [
    (
        RUNNER,
        Ask("get", "pods", "team-a", "p1"),
        True,
        "RoleBinding to a Role, SA subject in the binding's namespace",
    ),
    (RUNNER, Ask("list", "pods", "team-a"), True, "list is in the Role"),
    (RUNNER, Ask("list", "pods", "team-b"), False, "a RoleBinding grants in its own namespace only"),
    (RUNNER, Ask("get", "pods", "team-a", "p1", "log"), True, "pods/log is listed"),
    (RUNNER, Ask("get", "pods", "team-a", "p1", "status"), False, "pods/status is not"),
    (RUNNER, Ask("delete", "pods", "team-a", "p1"), False, "no delete verb"),
    (RUNNER, Ask("get", "configmaps", "team-a", "settings"), True, "resourceNames lists it"),
    (RUNNER, Ask("get", "configmaps", "team-a", "other"), False, "resourceNames lists only settings"),
    (RUNNER, Ask("list", "configmaps", "team-a"), False, "resourceNames never allow an unnamed list"),
    (
        RUNNER,
        Ask("list", "workloads.kueue.x-k8s.io", "team-b"),
        True,
        "ClusterRoleBinding to the SA's namespace group",
    ),
    (RUNNER, Ask("get", "workloads.kueue.x-k8s.io", "team-b", "w", "status"), True, "*/status"),
    (RUNNER, Ask("list", "clusterqueues.kueue.x-k8s.io"), False, "not in the ClusterRole"),
    (
        IDLE,
        Ask("list", "workloads.kueue.x-k8s.io"),
        True,
        "every SA of team-a is in the group, all namespaces",
    ),
    (IDLE, Ask("get", "pods", "team-a", "p1"), False, "the RoleBinding names runner only"),
    (ALICE, Ask("list", "pods", "team-b"), True, "view, bound in team-b"),
    (ALICE, Ask("list", "secrets", "team-b"), False, "view grants no secrets"),
    (ALICE, Ask("list", "pods", "team-a"), False, "the binding is in team-b"),
    (ALICE, Ask("get", "namespaces", "team-b", "team-b"), True, "a namespace's name is its namespace"),
    (ALICE, Ask("list", "localqueues.kueue.x-k8s.io", "team-b"), False, "view aggregates no Kueue kinds"),
    (BOB_OBSERVER, Ask("get", "/metrics"), True, "non-resource URL, group binding"),
    (BOB, Ask("get", "/metrics"), False, "not in the group"),
    (CAROL, Ask("list", "pods", "team-b"), False, "the bound Role does not exist"),
]


def _ids() -> list[str]:
    return [
        f"{w.user.rsplit(':', 1)[-1]}{'+' + ','.join(w.groups) if w.groups else ''}-{a.verb}-{a.resource}"
        + (f"-{a.name}" if a.name else "")
        + (f"-{a.subresource}" if a.subresource else "")
        + (f"@{a.namespace}" if a.namespace else "")
        for w, a, _, _ in MATRIX
    ]


@pytest.fixture(scope="module")
def rbac(served: Served) -> Served:
    served.kubectl("apply", "-f", "-", input=OBJECTS)
    return served


def token_for(served: Served, namespace: str, name: str, *extra: str) -> str:
    r = served.kubectl("create", "token", name, "-n", namespace, *extra)
    return r.stdout.strip()


_TOKENS: dict[tuple[str, str, str], str] = {}


def _token(served: Served, namespace: str, name: str) -> str:
    key = (served.url, namespace, name)
    if key not in _TOKENS:
        _TOKENS[key] = token_for(served, namespace, name)
    return _TOKENS[key]


def kubeconfig_with(served: Served, token: str, path: Path) -> str:
    cfg = yaml.safe_load(Path(served.kubeconfig).read_text())
    for u in cfg["users"]:
        if u["name"] == "flexq":
            u["user"] = {"token": token}
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def kubectl_as(served: Served, kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, KUBECONFIG=kubeconfig)
    return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(("who", "ask", "allowed", "why"), MATRIX, ids=_ids())
def test_rbac_matrix(rbac: Served, who: Who, ask: Ask, allowed: bool, why: str) -> None:
    # 1. kubectl auth can-i, impersonating (a SelfSubjectAccessReview as that user)
    imp = [f"--as={who.user}", *(f"--as-group={g}" for g in who.groups)]
    r = rbac.kubectl("auth", "can-i", *ask.can_i(), *imp, check=False)
    answer, _, reason = r.stdout.strip().partition(" - ")
    assert answer == ("yes" if allowed else "no"), (why, r.stdout, r.stderr)
    # 2. a SubjectAccessReview posted by the admin
    spec: dict[str, Any] = {"user": who.user, "groups": list(who.groups) or ["system:authenticated"]}
    if who.sa:
        spec["groups"] = [
            "system:serviceaccounts",
            f"system:serviceaccounts:{who.sa[0]}",
            "system:authenticated",
        ]
    if ask.resource.startswith("/"):
        spec["nonResourceAttributes"] = {"verb": ask.verb, "path": ask.resource}
    else:
        spec["resourceAttributes"] = {
            "verb": ask.verb,
            "group": ask.group,
            "resource": ask.plural,
            "namespace": ask.namespace,
            "name": ask.name,
            "subresource": ask.subresource,
        }
    sar = rbac.http(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        json={"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
    )
    assert sar.status_code == 201 and sar.json()["status"]["allowed"] is allowed, sar.text
    # 3. the request itself, with the subject's own credential (a ServiceAccount's token, else impersonation)
    method, path = ask.http()
    if who.sa:
        resp = rbac.http(method, path, token=_token(rbac, *who.sa))
    else:
        headers = {"Impersonate-User": who.user}
        if who.groups:
            (headers["Impersonate-Group"],) = who.groups
        resp = rbac.http(method, path, headers=headers)
    assert (resp.status_code == 403) is (not allowed), (why, resp.status_code, resp.text)
    if not allowed and not ask.resource.startswith("/"):
        status = resp.json()
        assert status["reason"] == "Forbidden" and status["details"]["kind"] == ask.plural, status
        where = f'in the namespace "{ask.namespace}"' if ask.namespace else "at the cluster scope"
        sub = f"/{ask.subresource}" if ask.subresource else ""
        said = f'User "{who.user}" cannot {ask.verb} resource "{ask.plural}{sub}" in API group "{ask.group}" {where}'
        assert said in status["message"], status["message"]
        if reason:  # RBAC's resolution errors, in kubectl's answer and the 403 alike
            assert status["message"].endswith(f"{said}: {reason}"), (status["message"], reason)


def _claims(token: str) -> dict[str, Any]:
    body = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))


def test_service_account_tokens_live_and_die_with_what_they_name(rbac: Served, tmp_path: Path) -> None:
    rbac.kubectl("create", "serviceaccount", "short", "-n", "team-a")
    token = token_for(
        rbac, "team-a", "short", "--duration=20m", "--audience=https://kubernetes.default.svc.cluster.local"
    )
    claims = _claims(token)
    assert claims["sub"] == "system:serviceaccount:team-a:short" and claims["exp"] - claims["iat"] == 1200
    assert claims["kubernetes.io"]["serviceaccount"]["name"] == "short"
    kc = kubeconfig_with(rbac, token, tmp_path / "short")
    who = kubectl_as(rbac, kc, "auth", "whoami", "-o", "json")
    info = json.loads(who.stdout)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:team-a:short"
    assert info["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:team-a",
        "system:authenticated",
    ]
    assert info["extra"]["authentication.kubernetes.io/credential-id"] == [f"JTI={claims['jti']}"]
    # too short, and an audience the API server does not take
    r = rbac.kubectl("create", "token", "short", "-n", "team-a", "--duration=5m", check=False)
    assert (
        "spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"
        in r.stderr
    )
    other = token_for(rbac, "team-a", "short", "--audience=vault")
    assert rbac.http("GET", "/api/v1/namespaces/team-a/pods", token=other).status_code == 401
    assert (
        rbac.kubectl("create", "token", "nobody", "-n", "team-a", check=False)
        .stderr.strip()
        .endswith('serviceaccounts "nobody" not found')
    )
    # a token bound to a pod: the pod in its user's extra, and gone with the pod
    rbac.twin.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "holder", "namespace": "team-a"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "serviceAccountName": "short"},
        }
    )
    bound = token_for(rbac, "team-a", "short", "--bound-object-kind=Pod", "--bound-object-name=holder")
    pod_uid = rbac.twin.get("Pod", "holder", namespace="team-a")["metadata"]["uid"]
    assert _claims(bound)["kubernetes.io"]["pod"] == {"name": "holder", "uid": pod_uid}
    review = rbac.http(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": bound}},
    ).json()
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["extra"]["authentication.kubernetes.io/pod-uid"] == [pod_uid]
    rbac.kubectl("delete", "pod", "holder", "-n", "team-a", "--wait=false")
    assert rbac.http("GET", "/api/v1/namespaces/team-a/pods", token=bound).status_code == 401
    # the GKE API takes no Kubernetes token
    gke = rbac.http("GET", "/v1/projects/p/locations/-/clusters", token=token)
    assert gke.status_code == 401 and gke.json()["error"]["status"] == "UNAUTHENTICATED"
    # deleted, then made again under the same name: the old token names the old uid
    rbac.kubectl("delete", "serviceaccount", "short", "-n", "team-a")
    assert kubectl_as(rbac, kc, "auth", "whoami").returncode != 0
    rbac.kubectl("create", "serviceaccount", "short", "-n", "team-a")
    assert (
        rbac.http("GET", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token).status_code == 401
    )
    assert (
        rbac.http(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token, json={}
        ).status_code
        == 401
    )
    # the issuer's keys verify what it signs
    jwks = rbac.http("GET", "/openid/v1/jwks", token=token_for(rbac, "team-a", "short")).json()
    assert jwks["keys"][0]["kid"] == json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))["kid"]


def test_impersonation_needs_the_impersonate_verb(rbac: Served) -> None:
    runner = _token(rbac, "team-a", "runner")
    headers = {"Impersonate-User": "alice"}
    r = rbac.http("GET", "/api/v1/namespaces/team-b/pods", token=runner, headers=headers)
    assert r.status_code == 403 and r.json()["message"] == (
        'users "alice" is forbidden: User "system:serviceaccount:team-a:runner" cannot impersonate resource "users" '
        'in API group "" at the cluster scope'
    )
    rbac.kubectl(
        "create",
        "clusterrole",
        "impersonate-alice",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=alice",
    )
    rbac.kubectl(
        "create",
        "clusterrolebinding",
        "runner-as-alice",
        "--clusterrole=impersonate-alice",
        "--serviceaccount=team-a:runner",
    )
    assert (
        rbac.http("GET", "/api/v1/namespaces/team-b/pods", token=runner, headers=headers).status_code == 200
    )
    # alice's own rights, not the runner's: team-a is the runner's, not alice's
    assert (
        rbac.http("GET", "/api/v1/namespaces/team-a/pods", token=runner, headers=headers).status_code == 403
    )
    bob = rbac.http(
        "GET", "/api/v1/namespaces/team-b/pods", token=runner, headers={"Impersonate-User": "bob"}
    )
    assert bob.status_code == 403 and 'users "bob" is forbidden' in bob.json()["message"]
    group = rbac.http(
        "GET",
        "/api/v1/namespaces/team-b/pods",
        token=runner,
        headers={**headers, "Impersonate-Group": "observers"},
    )
    assert group.status_code == 403 and 'groups "observers" is forbidden' in group.json()["message"]
    # a group without a user: the API server's 400
    lone = rbac.http("GET", "/api/v1/pods", headers={"Impersonate-Group": "observers"})
    assert lone.status_code == 400 and "without impersonating a user" in lone.json()["message"]
    # the admin impersonates anyone; the impersonated ServiceAccount gets its groups, anonymous its own
    who = rbac.http(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        headers={"Impersonate-User": "system:serviceaccount:team-a:idle"},
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    ).json()["status"]["userInfo"]
    assert who["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:team-a",
        "system:authenticated",
    ]
    anon = rbac.http(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        headers={"Impersonate-User": "system:anonymous"},
        json={},
    )
    assert anon.status_code == 403  # system:basic-user is for the authenticated only
    assert rbac.kubectl("get", "pods", "-n", "team-b", "--as=alice").returncode == 0
    r = rbac.kubectl("get", "secrets", "-n", "team-b", "--as=alice", check=False)
    assert (
        'secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "team-b"'
        in r.stderr
    )


def test_rbac_writes_grant_only_what_the_writer_holds(rbac: Served, tmp_path: Path) -> None:
    rbac.kubectl("create", "serviceaccount", "lead", "-n", "team-b")
    rbac.kubectl(
        "create",
        "role",
        "rbac-editor",
        "-n",
        "team-b",
        "--verb=get,list,create,update,patch,delete",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io",
    )
    rbac.kubectl(
        "create",
        "rolebinding",
        "lead-rbac",
        "-n",
        "team-b",
        "--role=rbac-editor",
        "--serviceaccount=team-b:lead",
    )
    rbac.kubectl(
        "create",
        "rolebinding",
        "lead-view",
        "-n",
        "team-b",
        "--clusterrole=view",
        "--serviceaccount=team-b:lead",
    )
    kc = kubeconfig_with(rbac, token_for(rbac, "team-b", "lead"), tmp_path / "lead")
    # what the lead holds may be granted, and a role within it made
    ok = kubectl_as(
        rbac, kc, "create", "rolebinding", "x-view", "-n", "team-b", "--clusterrole=view", "--user=x"
    )
    assert ok.returncode == 0, ok.stderr
    ok = kubectl_as(rbac, kc, "create", "role", "pods-only", "-n", "team-b", "--verb=get", "--resource=pods")
    assert ok.returncode == 0, ok.stderr
    # what it does not: cluster-admin, secrets, an aggregation
    r = kubectl_as(
        rbac,
        kc,
        "create",
        "rolebinding",
        "x-admin",
        "-n",
        "team-b",
        "--clusterrole=cluster-admin",
        "--user=x",
    )
    assert r.returncode != 0
    assert (
        'rolebindings.rbac.authorization.k8s.io "x-admin" is forbidden: user "system:serviceaccount:team-b:lead" '
        '(groups=["system:serviceaccounts" "system:serviceaccounts:team-b" "system:authenticated"]) is attempting '
        "to grant RBAC permissions not currently held:\n"
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}'
    ) in r.stderr, r.stderr
    r = kubectl_as(rbac, kc, "create", "role", "secrets", "-n", "team-b", "--verb=get", "--resource=secrets")
    assert r.returncode != 0 and '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}' in r.stderr, (
        r.stderr
    )
    # nor by editing a role it may update
    role = yaml.safe_load(
        kubectl_as(rbac, kc, "get", "role", "pods-only", "-n", "team-b", "-o", "yaml").stdout
    )
    role["rules"][0]["resources"] = ["secrets"]
    r = subprocess.run(
        ["kubectl", "replace", "-f", "-"],
        env=dict(os.environ, KUBECONFIG=kc),
        input=yaml.safe_dump(role),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode != 0 and "attempting to grant RBAC permissions not currently held" in r.stderr, (
        r.stderr
    )
    # with the bind verb on cluster-admin, the binding is allowed without holding it (BindingAuthorized)
    rbac.kubectl(
        "create",
        "role",
        "bind-admin",
        "-n",
        "team-b",
        "--verb=bind",
        "--resource=clusterroles",
        "--resource-name=cluster-admin",
    )
    rbac.kubectl(
        "create",
        "rolebinding",
        "lead-bind",
        "-n",
        "team-b",
        "--role=bind-admin",
        "--serviceaccount=team-b:lead",
    )
    ok = kubectl_as(
        rbac,
        kc,
        "create",
        "rolebinding",
        "x-admin",
        "-n",
        "team-b",
        "--clusterrole=cluster-admin",
        "--user=x",
    )
    assert ok.returncode == 0, ok.stderr


def test_can_i_list_shows_what_the_bindings_grant(rbac: Served, tmp_path: Path) -> None:
    kc = kubeconfig_with(rbac, _token(rbac, "team-a", "runner"), tmp_path / "runner")
    out = kubectl_as(rbac, kc, "auth", "can-i", "--list", "-n", "team-a").stdout
    rows = {tuple(line.split()) for line in out.splitlines()[1:]}
    assert ("pods", "[]", "[]", "[get", "list", "watch]") in rows
    assert ("pods/log", "[]", "[]", "[get", "list", "watch]") in rows
    assert ("configmaps", "[]", "[settings]", "[get", "update]") in rows
    assert ("workloads.kueue.x-k8s.io", "[]", "[]", "[get", "list", "watch]") in rows
    assert ("*.kueue.x-k8s.io/status", "[]", "[]", "[get]") in rows
    assert not any(r[0].startswith("secrets") for r in rows)
    assert not any("*.*" in r[0] for r in rows)
    elsewhere = kubectl_as(rbac, kc, "auth", "can-i", "--list", "-n", "team-b").stdout
    assert "configmaps" not in elsewhere and "workloads.kueue.x-k8s.io" in elsewhere
    admin = rbac.kubectl("auth", "can-i", "--list").stdout
    assert "*.*" in admin.splitlines()[1]


def test_a_labelled_cluster_role_joins_the_aggregated_ones(rbac: Served) -> None:
    assert rbac.kubectl(
        "auth", "can-i", "list", "localqueues.kueue.x-k8s.io", "-n", "team-b", "--as=alice", check=False
    ).stdout.startswith("no")
    rbac.kubectl(
        "apply",
        "-f",
        "-",
        input=f"""
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata:
  name: kueue-queues-view
  labels: {{{RBAC}/aggregate-to-view: "true"}}
rules: [{{apiGroups: [kueue.x-k8s.io], resources: [localqueues], verbs: [get, list, watch]}}]
""",
    )
    for _ in range(50):
        view = json.loads(rbac.kubectl("get", "clusterrole", "view", "-o", "json").stdout)
        if {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["localqueues"],
            "verbs": ["get", "list", "watch"],
        } in view["rules"]:
            break
        time.sleep(0.05)
    else:
        pytest.fail("view did not aggregate the labelled role")
    assert (
        rbac.kubectl(
            "auth", "can-i", "list", "localqueues.kueue.x-k8s.io", "-n", "team-b", "--as=alice"
        ).stdout.strip()
        == "yes"
    )
    admin_rules = json.loads(rbac.kubectl("get", "clusterrole", "admin", "-o", "json").stdout)["rules"]
    assert {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["localqueues"],
        "verbs": ["get", "list", "watch"],
    } in admin_rules
    # only cluster-admin's authority may set an aggregationRule
    rbac.kubectl("create", "serviceaccount", "editor", "-n", "team-b")
    rbac.kubectl(
        "create", "clusterrolebinding", "editor-crs", "--clusterrole=edit", "--serviceaccount=team-b:editor"
    )
    rbac.kubectl("create", "clusterrole", "cr-writer", "--verb=create", "--resource=clusterroles")
    rbac.kubectl(
        "create",
        "clusterrolebinding",
        "editor-crw",
        "--clusterrole=cr-writer",
        "--serviceaccount=team-b:editor",
    )
    agg = {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "sneaky"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
    }
    r = rbac.http("POST", f"/apis/{RBAC}/v1/clusterroles", token=_token(rbac, "team-b", "editor"), json=agg)
    assert r.status_code == 403 and r.json()["message"] == (
        'clusterroles.rbac.authorization.k8s.io "sneaky" is forbidden: must have cluster-admin privileges to use '
        "the aggregationRule"
    ), r.text


def _raw(served: Served, token: str, path: str) -> str:
    """One SPDY port-forward upgrade request, sent by hand; the status line and body that come back."""
    host, port = served.url.removeprefix("https://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=served.ca)
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        ctx.wrap_socket(raw, server_hostname=host) as s,
    ):
        s.sendall(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nConnection: Upgrade\r\n"
            "Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\nContent-Length: 0\r\n\r\n".encode()
        )
        data = b""
        while chunk := s.recv(65536):  # the refusal closes the connection
            data += chunk
    return data.decode(errors="replace")


def test_port_forward_needs_create_on_pods_portforward(rbac: Served) -> None:
    out = _raw(rbac, _token(rbac, "team-a", "idle"), "/api/v1/namespaces/team-a/pods/p1/portforward")
    assert out.startswith("HTTP/1.1 403"), out
    status = json.loads(out.split("\r\n\r\n", 1)[1])
    assert status["message"] == (
        'pods "p1" is forbidden: User "system:serviceaccount:team-a:idle" cannot create resource '
        '"pods/portforward" in API group "" in the namespace "team-a"'
    )
    assert _raw(rbac, "not-a-token", "/api/v1/namespaces/team-a/pods/p1/portforward").startswith(
        "HTTP/1.1 401"
    )


def test_a_pod_the_kubelet_starts_finds_its_projected_token(rbac: Served) -> None:
    ex = ManualExecutor()
    rbac.twin.core.current().executors.insert(0, ex)
    try:
        add_node(rbac.twin, node("rbac-n1"))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "runner-pod", "namespace": "team-a", "labels": {"manual": "yes"}},
            "spec": {
                "serviceAccountName": "runner",
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "volumeMounts": [{"name": "vault-token", "mountPath": "/var/run/vault"}],
                    }
                ],
                "volumes": [
                    {
                        "name": "vault-token",
                        "projected": {
                            "sources": [
                                {
                                    "serviceAccountToken": {
                                        "audience": "vault",
                                        "expirationSeconds": 7200,
                                        "path": "token",
                                    }
                                }
                            ]
                        },
                    }
                ],
            },
        }
        rbac.kubectl("apply", "-f", "-", input=json.dumps(pod))
        key = ("team-a", "runner-pod")
        for _ in range(100):
            if key in ex.launches:
                break
            time.sleep(0.05)
        files = ex.launches[key].files
        sa_files = files["/var/run/secrets/kubernetes.io/serviceaccount"]
        assert sa_files["namespace"] == "team-a" and "BEGIN CERTIFICATE" in sa_files["ca.crt"]
        token = sa_files["token"]
        claims = _claims(token)
        stored = rbac.twin.get("Pod", "runner-pod", namespace="team-a")
        assert claims["kubernetes.io"]["pod"] == {"name": "runner-pod", "uid": stored["metadata"]["uid"]}
        assert claims["exp"] - claims["iat"] == 3607
        vault = _claims(files["/var/run/vault"]["token"])
        assert vault["aud"] == ["vault"] and vault["exp"] - vault["iat"] == 7200
        # the pod's token is the ServiceAccount's, with the pod in its extra
        who = rbac.http(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", token=token, json={}
        ).json()
        info = who["status"]["userInfo"]
        assert info["username"] == "system:serviceaccount:team-a:runner"
        assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["runner-pod"]
        assert rbac.http("GET", "/api/v1/namespaces/team-a/pods", token=token).status_code == 200
        assert rbac.http("GET", "/api/v1/namespaces/team-a/secrets", token=token).status_code == 403
        ex.move(key, PodRunState("Running", ready=True))
        rbac.kubectl("delete", "pod", "runner-pod", "-n", "team-a", "--wait=false")
        assert rbac.http("GET", "/api/v1/namespaces/team-a/pods", token=token).status_code == 401
    finally:
        rbac.twin.core.current().executors.remove(ex)
