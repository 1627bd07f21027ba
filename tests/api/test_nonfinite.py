"""NaN and Infinity: JSON cannot carry them, so no API server ever receives one. The twin's entry points refuse
them by field (``Twin.create``/``apply``/``patch``, the GKE API), and its copies of stored objects (an orjson
round trip, which would write them as ``null``) rely on that."""

from __future__ import annotations

import pytest

from flexq import Twin
from flexq.api.decode import check_decoded, nonfinite_path
from flexq.api.jsoncopy import clone
from flexq.cli import tutorial
from flexq.errors import BadRequest, CloudError

NAN, INF = float("nan"), float("inf")


def _cm(value: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "annotations": {"a": "b"}},
        "data": {"k": value},
    }


def test_the_path_of_the_first_non_finite_float() -> None:
    assert nonfinite_path({"a": [1, {"b": 2.5}], "c": None}) is None
    assert nonfinite_path({"spec": {"xs": [1.0, {"y": -INF}]}}) == ("spec.xs[1].y", -INF)
    path, value = nonfinite_path([{"a": NAN}])  # type: ignore[misc]
    assert path == "[0].a" and value != value
    with pytest.raises(BadRequest, match=r"metadata\.name: Invalid value: inf.*unsupported value"):
        check_decoded({"metadata": {"name": INF}})


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_twin_create_apply_and_patch_refuse_non_finite_floats_by_field(twin: Twin, bad: float) -> None:
    with pytest.raises(BadRequest, match=r"^data\.k: Invalid value"):
        twin.create(_cm(bad))
    with pytest.raises(BadRequest, match=r"data\.k: Invalid value"):
        twin.apply(_cm(bad))
    assert twin.try_get("ConfigMap", "cm") is None  # nothing stored on refusal
    twin.create(_cm("v"))
    with pytest.raises(BadRequest, match=r"^metadata\.annotations\.a: Invalid value"):
        twin.patch("ConfigMap", "cm", {"metadata": {"annotations": {"a": bad}}})
    assert twin.get("ConfigMap", "cm")["metadata"]["annotations"] == {"a": "b"}


def test_gke_api_refuses_non_finite_floats_by_field() -> None:
    twin = Twin(clock="virtual")
    try:
        path, body = tutorial.create_cluster_request("proj-nan", {"CLUSTER_NAME": "c1"})
        body["cluster"]["nodePools"][0]["initialNodeCount"] = NAN
        with pytest.raises(CloudError) as err:
            twin.gke("POST", path, body)
        assert err.value.code == 400
        assert "cluster.nodePools[0].initialNodeCount" in str(err.value)
        assert twin.gke("GET", path).get("clusters", []) == []
    finally:
        twin.close()


def test_clone_copies_json_data_exactly() -> None:
    obj = {"a": [1, -0.0, 2.5e-300, None, True, "é", {"b": []}], "big": 2**80, "s": "\ud800"}
    out = clone(obj)  # past 64 bits and lone surrogates: orjson refuses them, the Python walk copies
    assert out == obj and out is not obj and out["a"][6] is not obj["a"][6]
    assert type(out["a"][0]) is int and type(out["a"][4]) is bool
