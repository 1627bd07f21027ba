"""Cases of Kueue v0.19.2 ``TestReconcile`` (pkg/controller/admissionchecks/provisioning/controller_test.go),
ported by name.

Each case stores upstream's objects (the base Workload ``ns/wl`` with pod sets ps1 (4 × 1 cpu) and ps2
(4 × 1M memory), quota reserved in ``q1`` (ps1: cpu flv1 count 4; ps2: flv2 count 3) and the checks
``check1`` and ``not-provisioning`` Pending; flavors ``flv1`` (label f1l1=v1, a toleration) and ``flv2``
(label f2l1=v1); the AdmissionCheck ``check1`` of the provisioning controller with ``config1``: class
``class1``, parameter p1=v1, retry 3 × 60 s up to 1800 s) in a minimal Kueue, runs the provisioning
controller's reconcile once for ``ns/wl``, as upstream's test calls ``Reconcile`` once, and compares the
workload's check states, the ProvisioningRequests and PodTemplates, and the events. Owner references carry
the workload's UID (upstream's fake client matches them by name only).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flexq.kueue.provisioning import ProvisioningController
from flexq.testing.minimal_kueue import MinimalKueue

from .upstream_wrappers import NOW, ts

CONTROLLER = "kueue.x-k8s.io/provisioning-request"
MANAGED = {"kueue.x-k8s.io/managed": "true"}
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS = "autoscaling.x-k8s.io/provisioning-class-name"
TOLERATION = {"key": "f1t1k", "value": "f1t1v", "operator": "Equal", "effect": "NoSchedule"}


def flavors() -> list[dict]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "flv1"},
            "spec": {"nodeLabels": {"f1l1": "v1"}, "tolerations": [TOLERATION]},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "flv2"},
            "spec": {"nodeLabels": {"f2l1": "v1"}},
        },
    ]


def check1() -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "check1"},
        "spec": {
            "controllerName": CONTROLLER,
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": "config1",
            },
        },
    }


def config(retry: bool = True, managed: list[str] | None = None, limit: int = 3, **extra: Any) -> dict:
    spec: dict[str, Any] = {"provisioningClassName": "class1", "parameters": {"p1": "v1"}}
    if retry:
        spec["retryStrategy"] = {
            "backoffLimitCount": limit,
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 1800,
        }
    if managed:
        spec["managedResources"] = managed
    spec.update(extra)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "config1"},
        "spec": spec,
    }


def podset(name: str, **requests: str) -> dict:
    return {
        "name": name,
        "count": 4,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}],
            }
        },
    }


def states(check1_state: str = "Pending", **extra: Any) -> list[dict]:
    return [
        {"name": "check1", "state": check1_state, "message": "", "lastTransitionTime": ts(NOW), **extra},
        {"name": "not-provisioning", "state": "Pending", "message": "", "lastTransitionTime": ts(NOW)},
    ]


def base_workload(
    admitted: bool = False, conditions: list[dict] = (), checks: list[dict] | None = None
) -> dict:
    conds = [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "AdmittedByTest",
            "message": "Admitted by ClusterQueue q1",
            "lastTransitionTime": ts(NOW),
        }
    ]
    if admitted is not None:
        conds.append(
            {
                "type": "Admitted",
                "status": "True" if admitted else "False",
                "reason": "ByTest",
                "message": "Admitted by ClusterQueue q1",
                "lastTransitionTime": ts(NOW),
            }
        )
    for c in conditions:
        conds.append({"reason": "ByTest", "message": "", "lastTransitionTime": ts(NOW), **c})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"podSets": [podset("ps1", cpu="1"), podset("ps2", memory="1M")], "queueName": "lq"},
        "status": {
            "conditions": conds,
            "admission": {
                "clusterQueue": "q1",
                "podSetAssignments": [
                    {"name": "ps1", "flavors": {"cpu": "flv1"}, "resourceUsage": {"cpu": "4"}, "count": 4},
                    {"name": "ps2", "flavors": {"cpu": "flv2"}, "resourceUsage": {"cpu": "3M"}, "count": 3},
                ],
            },
            "admissionChecks": checks if checks is not None else states(),
        },
    }


def base_request(conditions: list[dict] = (), attempt: int = 1, params: dict | None = None) -> dict:
    name = f"wl-check1-{attempt}"
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1",
        "kind": "ProvisioningRequest",
        "metadata": {"name": name, "namespace": "ns", "labels": dict(MANAGED)},
        "spec": {
            "podSets": [
                {"podTemplateRef": {"name": f"ppt-{name}-ps1"}, "count": 4},
                {"podTemplateRef": {"name": f"ppt-{name}-ps2"}, "count": 3},
            ],
            "provisioningClassName": "class1",
            "parameters": params if params is not None else {"p1": "v1"},
        },
        "status": {
            "conditions": [
                {
                    "status": "True",
                    "reason": "ByTest",
                    "message": "By test",
                    "lastTransitionTime": ts(NOW),
                    **c,
                }
                for c in conditions
            ]
        },
    }


def base_templates(request: str = "wl-check1-1") -> list[dict]:
    def tpl(ps: str, requests: dict, selector: dict, tolerations: list | None) -> dict:
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": requests}}],
            "nodeSelector": selector,
        }
        if tolerations:
            spec["tolerations"] = tolerations
        return {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {"name": f"ppt-{request}-{ps}", "namespace": "ns", "labels": dict(MANAGED)},
            "template": {"spec": spec},
        }

    return [
        tpl("ps1", {"cpu": "1"}, {"f1l1": "v1"}, [TOLERATION]),
        tpl("ps2", {"memory": "1M"}, {"f2l1": "v1"}, None),
    ]


class Env:
    def __init__(
        self,
        workload: dict,
        *,
        configs: list[dict] = (),
        checks: list[dict] = (),
        flavors: list[dict] = (),
        requests: list[dict] = (),
        templates: list[dict] = (),
        gates: dict[str, bool] | None = None,
        unowned: list[dict] = (),
    ) -> None:
        self.mk = MinimalKueue(start=NOW, namespaces=("default", "kueue-system", "ns"))
        if gates:
            self.mk.cache.config.gates.update(gates)
        for o in [*flavors, *checks, *configs]:
            self.mk.store.create(copy.deepcopy(o), keep_status=True)
        self.wl = self.mk.store.create(copy.deepcopy(workload), keep_status=True)
        owner = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "name": "wl",
            "uid": self.wl["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        for o in [*templates, *requests]:
            o = copy.deepcopy(o)
            o["metadata"]["ownerReferences"] = [owner]
            self.mk.store.create(o, keep_status=True)
        for o in unowned:
            self.mk.store.create(copy.deepcopy(o), keep_status=True)
        ctrl = next(c for c in self.mk.controllers if isinstance(c, ProvisioningController))
        self.events_before = len(self._events())
        ctrl.reconcile(("ns", "wl"))

    def _events(self) -> list[dict]:
        return [e for e in self.mk.store.list("Event", "ns") if e["involvedObject"]["name"] == "wl"]

    def events(self) -> list[tuple[str, str, str]]:
        return [(e["type"], e["reason"], e["message"]) for e in self._events()[self.events_before :]]

    def workload(self) -> dict:
        return self.mk.store.get("Workload", "wl", "ns")

    def check_states(self) -> list[dict]:
        """``status.admissionChecks`` without transition times."""
        out = []
        for c in self.workload()["status"]["admissionChecks"]:
            c = {k: v for k, v in c.items() if k != "lastTransitionTime"}
            if not c.get("message"):
                c.pop("message", None)
            out.append(c)
        return out

    def requests(self) -> dict[str, dict]:
        return {p["metadata"]["name"]: p for p in self.mk.store.list("ProvisioningRequest", "ns")}

    def request_specs(self) -> dict[str, dict]:
        return {n: p["spec"] for n, p in self.requests().items()}

    def templates(self) -> dict[str, dict]:
        return {p["metadata"]["name"]: p for p in self.mk.store.list("PodTemplate", "ns")}


def pending(**extra: Any) -> list[dict]:
    """The base check states: check1 (with ``extra``) and not-provisioning, both Pending."""
    return [{"name": "check1", "state": "Pending", **extra}, {"name": "not-provisioning", "state": "Pending"}]


def check1_is(state: str, message: str = "", **extra: Any) -> list[dict]:
    c = {"name": "check1", "state": state, **extra}
    if message:
        c["message"] = message
    return [c, {"name": "not-provisioning", "state": "Pending"}]


STANDARD = dict(checks=[check1()], flavors=flavors(), configs=[config()])
CREATED = ("Normal", "ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-check1-1"')


def updated(frm: str, to: str, msg: str) -> tuple[str, str, str]:
    return (
        "Normal",
        "AdmissionCheckUpdated",
        f"Admission check check1 updated state from {frm} to {to} with message: {msg}",
    )


# -- cases ------------------------------------------------------------------------------------------------------
def test_missing_config():
    """TestReconcile "missing config"."""
    e = Env(base_workload(), checks=[check1()])
    assert e.check_states() == check1_is("Pending", "the check is not active")
    assert e.requests() == {}


def test_with_config():
    """TestReconcile "with config": the request and its PodTemplates (flavor labels and tolerations merged in),
    owned by the request."""
    e = Env(base_workload(), **STANDARD)
    assert e.check_states() == pending()
    assert e.request_specs() == {"wl-check1-1": base_request()["spec"]}
    req = e.requests()["wl-check1-1"]
    assert req["metadata"]["labels"] == MANAGED
    assert [(o["kind"], o["name"]) for o in req["metadata"]["ownerReferences"]] == [("Workload", "wl")]
    want = {t["metadata"]["name"]: t for t in base_templates()}
    got = e.templates()
    assert set(got) == set(want)
    for n, t in got.items():
        spec, wspec = t["template"]["spec"], want[n]["template"]["spec"]
        assert spec["containers"][0]["resources"] == wspec["containers"][0]["resources"]
        assert (spec.get("nodeSelector"), spec.get("tolerations")) == (
            wspec["nodeSelector"],
            wspec.get("tolerations"),
        )
        assert t["metadata"]["labels"] == MANAGED
        assert [(o["kind"], o["name"], o.get("controller")) for o in t["metadata"]["ownerReferences"]] == [
            ("ProvisioningRequest", "wl-check1-1", True)
        ]
    assert e.events() == [CREATED]


def test_with_only_zero_count_pod_sets():
    """TestReconcile "with only zero-count PodSets": no request is needed, the stale one is removed."""
    wl = base_workload()
    for ps in wl["spec"]["podSets"]:
        ps["count"] = 0
    for psa in wl["status"]["admission"]["podSetAssignments"]:
        psa["count"] = 0
    e = Env(wl, requests=[base_request()], **STANDARD)
    assert e.check_states() == check1_is("Ready", "the provisioning request is not needed")
    assert e.requests() == {}
    assert e.events() == [updated("Pending", "Ready", "the provisioning request is not needed")]


def test_workload_with_provreq_annotation():
    """TestReconcile "workload with provreq annotation": only ``provreq.kueue.x-k8s.io/`` annotations become
    parameters."""
    wl = base_workload(
        checks=[{"name": "check1", "state": "Pending", "message": "", "lastTransitionTime": ts(NOW)}]
    )
    wl["metadata"]["annotations"] = {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "0",
        "invalid-provreq-prefix/Foo1": "Bar1",
        "another-invalid-provreq-prefix/Foo2": "Bar2",
    }
    wl["spec"]["podSets"] = [podset("main")]
    wl["spec"]["podSets"][0]["count"] = 1
    wl["status"]["admission"] = {
        "clusterQueue": "q1",
        "podSetAssignments": [{"name": "main", "flavors": {}, "resourceUsage": {}, "count": 1}],
    }
    prc = config(retry=False)
    del prc["spec"]["parameters"]  # upstream's config has no class either; the API requires one
    e = Env(wl, checks=[check1()], configs=[prc])
    specs = e.request_specs()
    assert list(specs) == ["wl-check1-1"]
    assert specs["wl-check1-1"]["parameters"] == {"ValidUntilSeconds": "0"}
    assert specs["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-main"}, "count": 1}
    ]
    assert e.events() == [CREATED]


def test_remove_unnecessary_requests():
    """TestReconcile "remove unnecessary requests"."""
    stale = base_request()
    stale["metadata"]["name"] = "wl-check2"
    e = Env(base_workload(), requests=[stale], **STANDARD)
    assert "wl-check2" not in e.requests()
    assert e.check_states() == pending()
    assert e.events() == [CREATED]


def test_one_template_already_created():
    """TestReconcile "one template already created": it is kept and given to the request."""
    e = Env(base_workload(), templates=base_templates()[:1], **STANDARD)
    assert e.request_specs() == {"wl-check1-1": base_request()["spec"]}
    got = e.templates()
    assert set(got) == {"ppt-wl-check1-1-ps1", "ppt-wl-check1-1-ps2"}
    for t in got.values():
        assert [(o["kind"], o["name"]) for o in t["metadata"]["ownerReferences"]] == [
            ("ProvisioningRequest", "wl-check1-1")
        ]
    assert e.events() == [CREATED]


def test_request_out_of_sync():
    """TestReconcile "request out of sync": a request whose parameters differ from the config is replaced."""
    old = base_request(params={"p1": "v0"})
    old["spec"]["podSets"] = [{"podTemplateRef": {"name": "ppt-wl-check1-1-main"}, "count": 1}]
    e = Env(base_workload(), requests=[old], **STANDARD)
    assert e.request_specs() == {"wl-check1-1": base_request()["spec"]}
    assert e.events() == [CREATED]


def test_request_removed_on_workload_finished():
    """TestReconcile "request removed on workload finished"."""
    wl = base_workload(conditions=[{"type": "Finished", "status": "True"}])
    e = Env(wl, requests=[base_request()], templates=base_templates(), **STANDARD)
    assert e.requests() == {}


def test_request_removed_on_workload_evicted():
    """TestReconcile "request removed on workload evicted"."""
    wl = base_workload(conditions=[{"type": "Evicted", "status": "True", "reason": "Preempted"}])
    e = Env(wl, requests=[base_request()], templates=base_templates(), **STANDARD)
    assert e.requests() == {}


def test_request_removed_on_workload_evicted_by_admission_check():
    """TestReconcile "request removed on workload evicted by admission check"."""
    wl = base_workload(conditions=[{"type": "Evicted", "status": "True", "reason": "AdmissionCheck"}])
    e = Env(wl, requests=[base_request()], templates=base_templates(), **STANDARD)
    assert e.requests() == {}


def test_request_preserved_on_workload_evicted_when_cleanup_is_disabled():
    """TestReconcile "request preserved on workload evicted when cleanup is disabled"."""
    wl = base_workload(conditions=[{"type": "Evicted", "status": "True", "reason": "AdmissionCheck"}])
    e = Env(
        wl,
        requests=[base_request()],
        templates=base_templates(),
        gates={"CleanupProvisioningRequestsOnEviction": False},
        **STANDARD,
    )
    assert e.request_specs() == {"wl-check1-1": base_request()["spec"]}


def test_retry_count_preserved_but_request_cleaned_up():
    """TestReconcile "when retry count is preserved but provisioning request was cleaned up": attempt 2."""
    wl = base_workload(checks=states(retryCount=1))
    e = Env(wl, **STANDARD)
    assert e.check_states() == pending(retryCount=1)
    assert e.request_specs() == {"wl-check1-2": base_request(attempt=2)["spec"]}
    assert e.events() == [
        ("Normal", "ProvisioningRequestCreated", 'Created ProvisioningRequest: "wl-check1-2"')
    ]


def test_request_fails_and_is_retried():
    """TestReconcile "when request fails and is retried"."""
    e = Env(
        base_workload(),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(limit=2)],
        requests=[base_request([{"type": "Failed"}])],
        templates=base_templates(),
    )
    assert e.check_states() == check1_is("Retry", "Retrying after failure: By test", requeueAfterSeconds=60)
    assert e.events() == [updated("Pending", "Retry", "Retrying after failure: By test")]


def test_request_fails_and_there_is_no_retry():
    """TestReconcile "when request fails, and there is no retry"."""
    e = Env(
        base_workload(),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(limit=0)],
        requests=[base_request([{"type": "Failed"}])],
        templates=base_templates(),
    )
    assert e.check_states() == check1_is("Rejected", "By test")
    assert e.events() == [updated("Pending", "Rejected", "By test")]


def _consume(ps: str) -> dict:
    return {"name": ps, "annotations": {CONSUME: "wl-check1-1", CLASS: "class1"}}


def test_request_is_provisioned():
    """TestReconcile "when request is provisioned"."""
    e = Env(
        base_workload(),
        requests=[base_request([{"type": "Provisioned"}])],
        templates=base_templates(),
        **STANDARD,
    )
    assert e.check_states() == check1_is("Ready", "By test", podSetUpdates=[_consume("ps1"), _consume("ps2")])
    assert e.events() == [updated("Pending", "Ready", "By test")]


def test_no_request_is_needed():
    """TestReconcile "when no request is needed"."""
    e = Env(
        base_workload(),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(retry=False, managed=["example.org/gpu"])],
    )
    assert e.check_states() == check1_is("Ready", "the provisioning request is not needed")
    assert e.requests() == {}
    assert e.events() == [updated("Pending", "Ready", "the provisioning request is not needed")]


def test_request_needed_for_one_pod_set_resource_request():
    """TestReconcile "when request is needed for one PodSet (resource request)"."""
    e = Env(
        base_workload(),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(retry=False, managed=["memory"])],
    )
    assert e.check_states() == pending()
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps2"}, "count": 3}
    ]
    assert set(e.templates()) == {"ppt-wl-check1-1-ps2"}
    assert e.events() == [CREATED]


def test_request_needed_for_one_pod_set_resource_limit():
    """TestReconcile "when request is needed for one PodSet (resource limit)": a limit counts as a request, and
    the template gets it as a request."""
    wl = base_workload()
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] = {
        "example.com/gpu": "1"
    }
    e = Env(
        wl, checks=[check1()], flavors=flavors(), configs=[config(retry=False, managed=["example.com/gpu"])]
    )
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 4}
    ]
    tpl = e.templates()["ppt-wl-check1-1-ps1"]["template"]["spec"]["containers"][0]["resources"]
    assert tpl == {"requests": {"cpu": "1", "example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}


def test_request_removed_while_check_is_ready():
    """TestReconcile "when the request is removed while the check is ready; don't create the ProvReq and keep
    Ready state"."""
    e = Env(base_workload(checks=states("Ready")), **STANDARD)
    assert e.check_states() == check1_is("Ready")
    assert e.requests() == {}


def test_status_updated_from_the_request():
    """TestReconcile "workloads status gets updated based on the provisioning request"."""
    msg = "Provisioning Request wasn't provisioned. ETA: 2024-02-22T10:36:40Z"
    req = base_request(
        [
            {"type": "Failed", "status": "False", "message": ""},
            {"type": "Provisioned", "status": "False", "message": msg},
            {"type": "Accepted", "message": ""},
        ]
    )
    e = Env(base_workload(), requests=[req], templates=base_templates(), **STANDARD)
    assert e.check_states() == check1_is("Pending", msg)


PROVISIONED = [
    {"type": "Failed", "status": "False", "message": ""},
    {"type": "Provisioned", "message": ""},
    {"type": "Accepted", "message": ""},
]


def test_capacity_revoked_rejects_when_admitted_and_not_finished():
    """TestReconcile "workload sets AdmissionCheck status to Rejected when it is not finished and receives the
    provisioning request's CapacityRevoked condition"."""
    req = base_request([*PROVISIONED, {"type": "CapacityRevoked", "message": ""}])
    e = Env(base_workload(admitted=True), requests=[req], **STANDARD)
    assert e.check_states() == check1_is("Rejected")
    assert e.events() == [
        ("Normal", "AdmissionCheckUpdated", "Admission check check1 updated state from Pending to Rejected")
    ]


def test_capacity_revoked_rejects_when_not_admitted():
    """TestReconcile "workload sets AdmissionCheck status to Rejected when it is not admitted and receives the
    provisioning request's CapacityRevoked condition"."""
    req = base_request([*PROVISIONED, {"type": "CapacityRevoked", "message": ""}])
    e = Env(base_workload(admitted=False), requests=[req], **STANDARD)
    assert e.check_states() == check1_is("Rejected")
    assert e.events() == [
        ("Normal", "AdmissionCheckUpdated", "Admission check check1 updated state from Pending to Rejected")
    ]


def test_capacity_revoked_ignored_when_finished():
    """TestReconcile "workloads doesnt set AdmissionCheck status to Rejected when it is finished and receives the
    provisioning request's CapacityRevoked condition"."""
    req = base_request([*PROVISIONED, {"type": "CapacityRevoked", "message": ""}])
    wl = base_workload(conditions=[{"type": "Finished", "status": "True", "message": "Finished by test"}])
    e = Env(wl, requests=[req], **STANDARD)
    assert e.check_states() == pending()
    assert e.events() == []


def test_booking_expired_ignored_when_admitted():
    """TestReconcile "workload does nothing when admitted and receives the provisioning request's BookingExpired
    condition"."""
    req = base_request([*PROVISIONED, {"type": "BookingExpired", "message": ""}])
    e = Env(base_workload(admitted=True), requests=[req], **STANDARD)
    assert e.check_states() == pending()
    assert e.request_specs() == {"wl-check1-1": base_request()["spec"]}
    assert e.events() == []


def test_booking_expired_retries_when_not_admitted():
    """TestReconcile "workload retries the admission check when is not admitted and receives the provisioning
    request's BookingExpired condition"."""
    req = base_request([*PROVISIONED, {"type": "BookingExpired", "message": "Expired By test"}])
    e = Env(
        base_workload(admitted=False),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(limit=1)],
        requests=[req],
    )
    msg = "Retrying after booking expired: Expired By test"
    assert e.check_states() == check1_is("Retry", msg, requeueAfterSeconds=60)
    assert e.events() == [updated("Pending", "Retry", msg)]


def test_booking_expired_rejects_when_not_admitted_and_no_retry():
    """TestReconcile "workload rejects the admission check when is not admitted and receives the provisioning
    request's BookingExpired condition"."""
    req = base_request([*PROVISIONED, {"type": "BookingExpired", "message": ""}])
    e = Env(
        base_workload(admitted=False),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(limit=0)],
        requests=[req],
    )
    assert e.check_states() == check1_is("Rejected")
    assert e.events() == [
        ("Normal", "AdmissionCheckUpdated", "Admission check check1 updated state from Pending to Rejected")
    ]


EXISTS = (
    'Error creating ProvisioningRequest "wl-check1-1": provisioningrequests.autoscaling.x-k8s.io "wl-check1-1" '
    "already exists"
)


def test_existing_request_visible_in_the_cache():
    """TestReconcile "when the existing request is already visible in the cache": a request of the same name
    that the workload does not own; the collision is reported on the check and as a FailedCreate event."""
    other = base_request()
    other["spec"]["parameters"] = {}
    e = Env(base_workload(), unowned=[other], **STANDARD)
    assert e.check_states() == check1_is("Pending", EXISTS)
    assert e.events() == [("Warning", "FailedCreate", EXISTS)]


def test_previous_message_cleared_when_request_has_no_conditions():
    """TestReconcile "when the request has no conditions yet the previous check message is cleared"."""
    wl = base_workload(checks=states(message=EXISTS))
    e = Env(wl, requests=[base_request()], templates=base_templates(), **STANDARD)
    assert e.check_states() == pending()


def test_previous_message_cleared_when_request_is_provisioned():
    """TestReconcile "when the request is provisioned the previous check message is cleared"."""
    wl = base_workload(checks=states(message=EXISTS))
    req = base_request([{"type": "Provisioned", "reason": "Provisioned", "message": ""}])
    e = Env(wl, requests=[req], templates=base_templates(), **STANDARD)
    assert e.check_states() == check1_is("Ready", podSetUpdates=[_consume("ps1"), _consume("ps2")])
    assert e.events() == [
        ("Normal", "AdmissionCheckUpdated", "Admission check check1 updated state from Pending to Ready")
    ]


NODE_SELECTOR_UPDATES = {
    "nodeSelector": [{"key": "node-selector-key", "valueFromProvisioningClassDetail": "node-selector-value"}]
}


def test_provisioned_with_node_selector_from_class_details():
    """TestReconcile "when request is provisioned and has NodeSelector specified via ProvisioningClassDetail"."""
    req = base_request([{"type": "Provisioned"}])
    req["status"]["provisioningClassDetails"] = {"node-selector-value": "nodes-selector-xyz"}
    e = Env(
        base_workload(),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(podSetUpdates=NODE_SELECTOR_UPDATES)],
        requests=[req],
        templates=base_templates(),
    )
    sel = {"nodeSelector": {"node-selector-key": "nodes-selector-xyz"}}
    assert e.check_states() == check1_is(
        "Ready", "By test", podSetUpdates=[{**_consume("ps1"), **sel}, {**_consume("ps2"), **sel}]
    )
    assert e.events() == [updated("Pending", "Ready", "By test")]


def test_provisioned_with_node_selector_missing_from_class_details():
    """TestReconcile "when request is provisioned and has NodeSelector missing in the ProvisioningClassDetail": the
    detail is skipped, no (empty) nodeSelector is written."""
    req = base_request([{"type": "Provisioned"}])
    e = Env(
        base_workload(),
        checks=[check1()],
        flavors=flavors(),
        configs=[config(podSetUpdates=NODE_SELECTOR_UPDATES)],
        requests=[req],
        templates=base_templates(),
    )
    assert e.check_states() == check1_is("Ready", "By test", podSetUpdates=[_consume("ps1"), _consume("ps2")])


# -- podSetMergePolicy ---------------------------------------------------------------------------------------
MERGE_ASSIGNMENTS = [
    ("ps1", "flv1", "1", 1),
    ("ps2", "flv1", "1", 2),
    ("ps3", "flv2", "1M", 2),
    ("ps4", "flv2", "1M", 1),
    ("ps5", "flv2", "1M", 1),
]


def merge_workload(*podsets: dict) -> dict:
    wl = base_workload()
    wl["spec"]["podSets"] = list(podsets)
    wl["status"]["admission"]["podSetAssignments"] = [
        {"name": n, "flavors": {"cpu": f}, "resourceUsage": {"cpu" if q == "1" else "memory": q}, "count": c}
        for n, f, q, c in MERGE_ASSIGNMENTS
    ]
    return wl


def ps(name: str, count: int, priority_class: str | None = None, **requests: str) -> dict:
    p = podset(name, **requests)
    p["count"] = count
    if priority_class:
        p["template"]["spec"]["priorityClassName"] = priority_class
    return p


def merge_config(policy: str) -> dict:
    prc = config(retry=False, podSetMergePolicy=policy)
    del prc["spec"]["parameters"]
    return prc


def test_pod_set_merge_policy_identical_pod_templates():
    """TestReconcile "with podSetMergePolicy IdenticalPodTemplates": ps1+ps2 and ps3+ps4 merge (identical
    templates); ps5's priority class differs."""
    wl = merge_workload(
        ps("ps1", 2, cpu="1"),
        ps("ps2", 2, cpu="1"),
        ps("ps3", 2, "pc-100", memory="1M"),
        ps("ps4", 2, "pc-100", memory="1M"),
        ps("ps5", 1, "pc-200", memory="1M"),
    )
    e = Env(wl, checks=[check1()], flavors=flavors(), configs=[merge_config("IdenticalPodTemplates")])
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 3},
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps3"}, "count": 3},
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps5"}, "count": 1},
    ]
    tpls = e.templates()
    assert set(tpls) == {"ppt-wl-check1-1-ps1", "ppt-wl-check1-1-ps3", "ppt-wl-check1-1-ps5"}
    assert tpls["ppt-wl-check1-1-ps1"]["template"]["spec"]["nodeSelector"] == {"f1l1": "v1"}
    assert tpls["ppt-wl-check1-1-ps3"]["template"]["spec"]["priorityClassName"] == "pc-100"
    assert tpls["ppt-wl-check1-1-ps5"]["template"]["spec"]["priorityClassName"] == "pc-200"
    assert e.events() == [CREATED]


def test_pod_set_merge_policy_identical_workload_scheduling_requirements():
    """TestReconcile "with podSetMergePolicy IdenticalWorkloadSchedulingRequirements": priority classes and
    topology requests do not matter, ps5's node affinity does."""
    p3 = ps("ps3", 2, "pc-100", memory="1M")
    p3["topologyRequest"] = {"required": "default1"}
    p4 = ps("ps4", 2, "pc-200", memory="1M")
    p4["topologyRequest"] = {"required": "default2"}
    p5 = ps("ps5", 1, "pc-300", memory="1M")
    p5["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "type", "operator": "In", "values": ["two"]}]}
                ]
            }
        }
    }
    wl = merge_workload(ps("ps1", 2, "pc-100", cpu="1"), ps("ps2", 2, "pc-200", cpu="1"), p3, p4, p5)
    e = Env(
        wl,
        checks=[check1()],
        flavors=flavors(),
        configs=[merge_config("IdenticalWorkloadSchedulingRequirements")],
    )
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 3},
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps3"}, "count": 3},
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps5"}, "count": 1},
    ]
    assert e.events() == [CREATED]


def test_pod_set_merge_policy_but_no_pod_set_assignments():
    """TestReconcile "with podSetMergePolicy but no PodSetAssignments": the pod sets have no assignment
    (errInconsistentPodSetAssignments): nothing is created and the check is left as it was (not Ready)."""
    wl = merge_workload(ps("ps11", 2, "pc-100", cpu="1"), ps("ps22", 2, "pc-200", cpu="1"))
    e = Env(
        wl,
        checks=[check1()],
        flavors=flavors(),
        configs=[merge_config("IdenticalWorkloadSchedulingRequirements")],
    )
    assert e.requests() == {}
    assert e.templates() == {}
    assert e.check_states() == pending()
    assert e.events() == []


# -- TestReqIsNeeded, TestMergePodSetsSkipsZeroCounts (through one reconcile) --------------------------------
def _one_podset_workload(spec_count: int, admission_count: int | None, with_assignment: bool) -> dict:
    wl = base_workload(
        checks=[{"name": "check1", "state": "Pending", "message": "", "lastTransitionTime": ts(NOW)}]
    )
    wl["spec"]["podSets"] = [ps("ps", spec_count, cpu="1")]
    psa: dict[str, Any] = {"name": "ps", "flavors": {"cpu": "flv1"}, "resourceUsage": {"cpu": "1"}}
    if admission_count is not None:
        psa["count"] = admission_count
    wl["status"]["admission"]["podSetAssignments"] = [psa] if with_assignment else []
    return wl


def _run_cpu_managed(wl: dict) -> Env:
    return Env(wl, checks=[check1()], flavors=flavors(), configs=[config(retry=False, managed=["cpu"])])


def test_req_is_needed_positive_admitted_count():
    """TestReqIsNeeded "positive admitted count needs request"."""
    assert list(_run_cpu_managed(_one_podset_workload(1, 1, True)).requests()) == ["wl-check1-1"]


def test_req_is_needed_missing_admitted_count_falls_back_to_spec_count():
    """TestReqIsNeeded "missing admitted count falls back to spec count"."""
    assert list(_run_cpu_managed(_one_podset_workload(1, None, True)).requests()) == ["wl-check1-1"]


def test_req_is_needed_zero_admitted_count():
    """TestReqIsNeeded "zero admitted count does not need request"."""
    e = _run_cpu_managed(_one_podset_workload(1, 0, True))
    assert e.requests() == {}
    assert e.check_states() == [
        {"name": "check1", "state": "Ready", "message": "the provisioning request is not needed"}
    ]


def test_req_is_needed_zero_spec_count_does_not_require_assignment():
    """TestReqIsNeeded "zero spec count does not require assignment"."""
    e = _run_cpu_managed(_one_podset_workload(0, None, False))
    assert e.requests() == {}
    assert e.check_states() == [
        {"name": "check1", "state": "Ready", "message": "the provisioning request is not needed"}
    ]


def test_req_is_needed_missing_assignment_is_inconsistent():
    """TestReqIsNeeded "missing assignment returns inconsistency error": the reconcile changes nothing."""
    e = _run_cpu_managed(_one_podset_workload(1, None, False))
    assert e.requests() == {}
    assert e.check_states() == [{"name": "check1", "state": "Pending"}]


def test_req_is_needed_needed_podset_short_circuits_later_missing_assignment():
    """TestReqIsNeeded "needed podset short circuits later missing assignment": a request is needed, but
    ``mergePodSets`` then fails on ps2: nothing is created, the check stays Pending."""
    wl = _one_podset_workload(1, 1, True)
    wl["spec"]["podSets"] = [ps("ps1", 1, cpu="1"), ps("ps2", 1, cpu="1")]
    wl["status"]["admission"]["podSetAssignments"][0]["name"] = "ps1"
    e = _run_cpu_managed(wl)
    assert e.requests() == {}
    assert e.check_states() == [{"name": "check1", "state": "Pending"}]


def _counts_workload(spec: list[int], admitted: list[int]) -> dict:
    wl = _one_podset_workload(1, 1, True)
    wl["spec"]["podSets"] = [ps(f"ps{i}", c, cpu="1") for i, c in enumerate(spec)]
    wl["status"]["admission"]["podSetAssignments"] = [
        {"name": f"ps{i}", "flavors": {"cpu": "flv1"}, "resourceUsage": {"cpu": "1"}, "count": c}
        for i, c in enumerate(admitted)
    ]
    return wl


def test_merge_pod_sets_zero_spec_count():
    """TestMergePodSetsSkipsZeroCounts "zero spec count"."""
    e = _run_cpu_managed(_counts_workload([0, 2], [0, 2]))
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 2}
    ]


def test_merge_pod_sets_zero_admission_count_override():
    """TestMergePodSetsSkipsZeroCounts "zero admission count override"."""
    e = _run_cpu_managed(_counts_workload([1, 2], [0, 2]))
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 2}
    ]


def test_merge_pod_sets_zero_count_does_not_block_compatible_merging():
    """TestMergePodSetsSkipsZeroCounts "zero count does not block compatible merging"."""
    wl = _counts_workload([1, 2, 3], [0, 2, 3])
    prc = config(retry=False, managed=["cpu"], podSetMergePolicy="IdenticalPodTemplates")
    e = Env(wl, checks=[check1()], flavors=flavors(), configs=[prc])
    assert e.request_specs()["wl-check1-1"]["podSets"] == [
        {"podTemplateRef": {"name": "ppt-wl-check1-1-ps1"}, "count": 5}
    ]


# -- TestActiveOrLastPRForChecks (through one reconcile: the last attempt is kept, older ones removed) ------
def _active_or_last(requests: list[dict]) -> Env:
    check = check1()
    check["metadata"]["name"] = "check"
    wl = base_workload(
        checks=[
            {"name": "check", "state": "Pending", "message": "", "lastTransitionTime": ts(NOW)},
            {"name": "not-provisioning", "state": "Pending", "message": "", "lastTransitionTime": ts(NOW)},
        ]
    )
    wl["spec"]["podSets"] = [podset("main", cpu="1")]
    wl["status"]["admission"]["podSetAssignments"] = [
        {"name": "main", "flavors": {"cpu": "flv1"}, "resourceUsage": {"cpu": "4"}, "count": 4}
    ]
    prc = config(retry=False)
    return Env(wl, checks=[check], flavors=flavors(), configs=[prc], requests=requests)


def _attempt_request(attempt: int, failed: bool = False) -> dict:
    r = base_request([{"type": "Failed"}] if failed else [])
    name = f"wl-check-{attempt}"
    r["metadata"]["name"] = name
    r["spec"]["podSets"] = [{"podTemplateRef": {"name": f"ppt-{name}-main"}, "count": 4}]
    return r


def test_active_or_last_no_provisioning_requests():
    """TestActiveOrLastPRForChecks "no provisioning requests": the first attempt is created."""
    e = _active_or_last([])
    assert list(e.requests()) == ["wl-check-1"]


@pytest.mark.parametrize("order", ["1 then 2", "2 then 1"])
def test_active_or_last_two_provisioning_requests(order: str):
    """TestActiveOrLastPRForChecks "two provisioning requests; 1 then 2" / "2 then 1": attempt 2 is the active
    one whatever the listing order; attempt 1 (Failed) is removed and nothing new is created."""
    reqs = [_attempt_request(1, failed=True), _attempt_request(2)]
    e = _active_or_last(reqs if order == "1 then 2" else reqs[::-1])
    assert list(e.requests()) == ["wl-check-2"]
    assert [c for c in e.check_states() if c["name"] == "check"] == [{"name": "check", "state": "Pending"}]
