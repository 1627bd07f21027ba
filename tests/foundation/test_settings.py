"""Typed settings: the twin-wide knobs and one cluster's GKE identity, refused by name when unknown."""

from __future__ import annotations

import pytest

from flexq.errors import Invalid
from flexq.runtime import ClusterSettings, TwinSettings
from flexq.twin import Twin


def test_twin_refuses_an_unknown_setting_naming_it() -> None:
    with pytest.raises(Invalid) as err:
        Twin(clock="virtual", ray_dri="/tmp/x")
    assert "'ray_dri'" in str(err.value)
    assert [c.field for c in err.value.causes] == ["ray_dri"]


def test_twin_settings_are_typed_and_shared_by_its_clusters(tmp_path) -> None:
    t = Twin(clock="virtual", ray_dir=tmp_path)
    try:
        assert t.core.settings == TwinSettings(executor="simulated", clock="virtual", ray_dir=str(tmp_path))
        assert t.runtime.ctx.settings is t.core.settings
        assert t.runtime.settings == ClusterSettings()  # the cluster without GKE
    finally:
        t.close()


def test_cluster_settings_from_the_gke_keys() -> None:
    s = ClusterSettings.from_mapping({"gkeCluster": "c", "gkeProject": "p", "gkeLocation": "us-east5",
                                      "gkeVersion": "1.34.1-gke.1829001", "gkeNodeCidr": "10.0.0.0/20",
                                      "addons": ("RayOperator",)})
    assert (s.gke_cluster, s.gke_project, s.gke_location, s.gke_node_cidr) == ("c", "p", "us-east5", "10.0.0.0/20")
    assert s["addons"] == ["RayOperator"] and s["gkeVersion"] == "1.34.1-gke.1829001"
    with pytest.raises(Invalid, match="'gkeZone'"):
        ClusterSettings.from_mapping({"gkeZone": "x"})
    with pytest.raises(KeyError):
        s["nope"]
