"""The tutorial's files shipped with the CLI, envsubst, and the gcloud request bodies."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flexq.cli import tutorial

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "text, env, out",
    [
        ("a ${X} b", {"X": "1"}, "a 1 b"),
        ("$X$Y", {"X": "1", "Y": "2"}, "12"),
        ("${MISSING}-", {}, "-"),  # unset variables become empty, as with GNU envsubst
        ("$1 $ {X} $", {"X": "1"}, "$1 $ {X} $"),  # not variable references
        ("${X_Y}z $X_Yz", {"X_Y": "v"}, "vz "),
    ],
    ids=["braces", "adjacent", "unset", "not-vars", "underscores"],
)
def test_envsubst(text: str, env: dict, out: str) -> None:
    assert tutorial.envsubst(text, env) == out


def test_queue_yaml_matches_the_tutorial_after_envsubst() -> None:
    assert "${ONDEMAND_NODEPOOL}" in tutorial.read("dws-tpu-queue.yaml")  # shipped verbatim
    ours = list(yaml.safe_load_all(tutorial.queue_yaml()))
    theirs = list(yaml.safe_load_all((TESTS / "api/data/dws-tpu-queue.yaml").read_text()))
    assert ours == theirs
    assert [d["kind"] for d in ours] == ["ResourceFlavor"] * 3 + [
        "ClusterQueue",
        "LocalQueue",
        "AdmissionCheck",
        "ProvisioningRequestConfig",
    ]


def test_rayjob_and_train_script_match_the_tutorial() -> None:
    assert yaml.safe_load(tutorial.rayjob_yaml(1)) == yaml.safe_load(
        (TESTS / "api/data/rayjob-tpu-v6e-dws-1.yaml").read_text()
    )
    assert yaml.safe_load(tutorial.rayjob_yaml(2))["metadata"]["name"] == "rayjob-tpu-v6e-dws-2"
    assert tutorial.train_script() == (TESTS / "kuberay/data/train.py").read_text()
    assert 'print("Training Complete!")' in tutorial.train_script()


def test_gcloud_bodies() -> None:
    path, body = tutorial.create_cluster_request("proj")
    assert path == "/v1/projects/proj/locations/us-east5-b/clusters"
    assert body["cluster"]["addonsConfig"]["rayOperatorConfig"] == {"enabled": True}
    assert body["cluster"]["nodePools"][0]["config"]["machineType"] == "n2-standard-16"
    path, a = tutorial.create_node_pool_request("proj", dws=False)
    _, b = tutorial.create_node_pool_request("proj", dws=True)
    assert path == "/v1/projects/proj/locations/us-east5-b/clusters/tpu-cluster/nodePools"
    assert (a["nodePool"]["name"], b["nodePool"]["name"]) == ("on-demand-pool", "dws-pool")
    assert "flexStart" not in a["nodePool"]["config"] and "queuedProvisioning" not in a["nodePool"]
    assert b["nodePool"]["config"]["flexStart"] is True and b["nodePool"]["queuedProvisioning"] == {
        "enabled": True
    }
    assert a["nodePool"]["placementPolicy"] == {"tpuTopology": "4x4"}
    # the two bodies do not share mutable parts
    a["nodePool"]["config"]["oauthScopes"].append("x")
    assert (
        "x"
        not in tutorial.create_node_pool_request("proj", dws=False)[1]["nodePool"]["config"]["oauthScopes"]
    )


def test_init_writes_the_published_files_and_beside_them_the_v1beta2_queue(tmp_path) -> None:
    """Issue 34: `flexq tutorial init` writes the files as published and the queue file for Kueue 0.20 and later
    (made by `flexq convert`'s conversion); `tutorial.sh` keeps the published `kubectl apply` line and applies the
    v1beta2 file instead where the cluster does not serve kueue.x-k8s.io/v1beta1."""
    from flexq.api.kueue_convert import convert_text
    from flexq.cli import tutorial_files

    lines = tutorial_files.init(tmp_path / "t")
    assert (
        sorted(p.name for p in (tmp_path / "t").iterdir())
        == [
            "cleanup.sh",
            "dws-tpu-queue.v1beta2.yaml",
            "dws-tpu-queue.yaml",
            "rayjob-tpu-v6e-dws.yaml",
            "train.py",
            "tutorial.sh",
        ]
        and len(lines) == 6
    )
    published = (tmp_path / "t" / "dws-tpu-queue.yaml").read_text()
    assert published == tutorial.read("dws-tpu-queue.yaml") and published.count("kueue.x-k8s.io/v1beta1") == 7
    v1beta2 = (tmp_path / "t" / "dws-tpu-queue.v1beta2.yaml").read_text()
    assert v1beta2.endswith(convert_text(published).text) and v1beta2.startswith(
        "# The tutorial's dws-tpu-queue"
    )
    script = (tmp_path / "t" / "tutorial.sh").read_text().splitlines()
    assert "envsubst < dws-tpu-queue.yaml | kubectl apply -f -" in script  # as published
    assert "kubectl api-versions | grep -qx kueue.x-k8s.io/v1beta1 || KUEUE_V1BETA2=1  # flexq" in script
    assert "  envsubst < dws-tpu-queue.v1beta2.yaml | kubectl apply -f -  # flexq" in script
