"""``scheme.BUILT``: a controller's object of a built-in kind (a Pod KubeRay builds from a RayCluster's template)
validated as any write and kept as its defaulters filled it, not serialised again from the model. Same refusals
and same stored object as ``ADMIT``; the suite's ``check_writes`` names a writer whose object admission would
store otherwise."""

from __future__ import annotations

import pytest

from flexq.api.kinds import default_registry
from flexq.api.scheme import ADMIT, BUILT
from flexq.clock import VirtualClock
from flexq.errors import Invalid, InvalidWrite
from flexq.store import Store, clone


def _store(check: bool) -> Store:
    return Store(default_registry(), VirtualClock(), namespaces=["default"], check_writes=check)


def _pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"ray.io/node-type": "worker"}},
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.9.0",
                    "ports": [{"containerPort": 6379}],
                    "env": [{"name": "TPU_WORKER_ID", "value": "0"}],
                    "resources": {"limits": {"cpu": "2000m", "memory": "1.5Gi", "google.com/tpu": 4}},
                }
            ],
            "overhead": {"cpu": "0.25"},
        },
    }


def _stored(obj: dict) -> dict:
    out = clone(obj)
    for f in ("uid", "creationTimestamp", "resourceVersion", "name"):
        out["metadata"].pop(f, None)
    return out


@pytest.mark.parametrize("check", [False, True])
def test_a_built_pod_is_stored_as_admission_stores_it(check: bool) -> None:
    built, admitted = _store(check), _store(False)
    a = built.create(_pod("p"), admission=BUILT)
    b = admitted.create(_pod("p"), admission=ADMIT)
    assert _stored(a) == _stored(b)
    limits = a["spec"]["containers"][0]["resources"]
    assert limits["limits"] == {"cpu": "2", "memory": "1536Mi", "google.com/tpu": "4"}  # canonical
    assert limits["requests"] == limits["limits"]  # defaulted from the limits
    assert a["spec"]["overhead"] == {"cpu": "250m"}
    assert a["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"


def test_a_built_object_is_refused_as_an_admitted_one() -> None:
    bad = _pod("p")
    del bad["spec"]["containers"][0]["image"]
    with pytest.raises(Invalid) as built:
        _store(False).create(clone(bad), admission=BUILT)
    with pytest.raises(Invalid) as admitted:
        _store(False).create(clone(bad), admission=ADMIT)
    assert built.value.message == admitted.value.message


def test_check_writes_names_a_builder_whose_object_admission_would_store_otherwise() -> None:
    """A null the model drops (``exclude_none``) is kept by ``BUILT``: the check names the writer."""
    pod = _pod("p")
    pod["spec"]["containers"][0]["command"] = None
    store = _store(True)
    store.writer = "kuberay-raycluster ('default', 'c')"
    with pytest.raises(InvalidWrite, match=r"kuberay-raycluster .*\.spec\.containers\[0\]\.command"):
        store.create(pod, admission=BUILT)
    assert _store(False).create(_pod("q"), admission=BUILT)["metadata"]["name"] == "q"
