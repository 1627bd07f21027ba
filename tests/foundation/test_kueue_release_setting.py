"""Issue 34: the Kueue release is a twin's setting (``Twin(kueue=...)``, ``flexq up --kueue``), resolved once into a
profile the assembly hands to the registry and to Kueue's controllers; an unknown release is refused naming the
field; a restarted twin keeps the release its state ran, and one restarted on another release is upgraded as
``helm upgrade`` does it (the stored objects stay, the CRDs follow)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flexq import Twin
from flexq.api.kueue_versions import DEFAULT, V0_19_2, V0_20_7, resolve
from flexq.cli import tutorial
from flexq.errors import Invalid, NotFound


def _crd_versions(t: Twin) -> dict[str, tuple[bool, bool]]:
    crd = t.get("CustomResourceDefinition", "clusterqueues.kueue.x-k8s.io")
    return {v["name"]: (v["served"], v["storage"]) for v in crd["spec"]["versions"]}


def test_the_default_is_what_the_tutorials_unpinned_helm_install_gives_today() -> None:
    assert DEFAULT is V0_20_7 and DEFAULT.tag == "v0.20.7"
    assert resolve("v0.19.2") is V0_19_2 and resolve("0.20.7") is V0_20_7 and resolve(None) is DEFAULT
    t = Twin(clock="virtual")
    try:
        assert t.core.settings.kueue is V0_20_7
        assert _crd_versions(t) == {"v1beta2": (True, True), "v1beta1": (False, False)}
        with pytest.raises(
            NotFound, match='no matches for kind "ResourceFlavor" in version "kueue.x-k8s.io/v1beta1"'
        ):
            t.apply(tutorial.queue_yaml())
        assert t.list("ResourceFlavor") == []
    finally:
        t.close()


@pytest.mark.parametrize("bad", ["0.21.0", "0.20", "latest", 20, ""])
def test_an_unknown_release_is_refused_naming_the_field(bad: object) -> None:
    with pytest.raises(Invalid) as err:
        Twin(clock="virtual", kueue=bad)
    assert err.value.causes[0].field == "kueue" and err.value.causes[0].reason == "FieldValueNotSupported"
    assert 'supported values: "0.19.2", "0.20.7"' in str(err.value)


def test_two_twins_in_one_process_run_their_own_release() -> None:
    old, new = Twin(clock="virtual", kueue="0.19.2"), Twin(clock="virtual")
    try:
        old.apply(tutorial.queue_yaml())
        new.apply(tutorial.queue_yaml(api="v1beta2"))
        assert old.get("cq", "cluster-queue", api_version="kueue.x-k8s.io/v1beta1")["spec"][
            "admissionChecksStrategy"
        ]
        with pytest.raises(NotFound):
            new.get("cq", "cluster-queue", api_version="kueue.x-k8s.io/v1beta1")
        assert _crd_versions(old) == {"v1beta2": (True, True), "v1beta1": (True, False)}
    finally:
        old.close()
        new.close()


def test_a_restarted_twin_keeps_its_release_and_another_one_upgrades_it(tmp_path: Path) -> None:
    home = tmp_path / "state"
    t = Twin(clock="virtual", home=home, kueue="0.19.2")
    t.apply(tutorial.queue_yaml())  # the tutorial's v1beta1 objects, stored as v1beta2
    t.close()
    t = Twin(clock="virtual", home=home)  # no release asked for: the one the state ran
    try:
        assert t.core.settings.kueue is V0_19_2
        assert t.get("cq", "cluster-queue", api_version="kueue.x-k8s.io/v1beta1")["apiVersion"].endswith(
            "v1beta1"
        )
    finally:
        t.close()
    t = Twin(clock="virtual", home=home, kueue="0.20.7")  # `helm upgrade` to 0.20.7
    try:
        assert t.core.settings.kueue is V0_20_7
        assert _crd_versions(t) == {"v1beta2": (True, True), "v1beta1": (False, False)}
        cq = t.get("cq", "cluster-queue")  # the objects stay, served as v1beta2
        assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2" and cq["spec"]["resourceGroups"]
        with pytest.raises(NotFound):
            t.get("cq", "cluster-queue", api_version="kueue.x-k8s.io/v1beta1")
    finally:
        t.close()
    t = Twin(clock="virtual", home=home)
    try:
        assert t.core.settings.kueue is V0_20_7  # the state now runs 0.20.7
    finally:
        t.close()


def test_a_clusters_release_from_the_versions_it_serves() -> None:
    """A real cluster says which kueue.x-k8s.io versions it serves (discovery: every user may read it), not its
    release: still serving v1beta1 is 0.19 or older (kueue#14558 unserved it in 0.20), v1beta2 alone is 0.20 or
    newer; each maps to the newest modelled release that serves exactly those."""
    from flexq.api.kueue_versions import V0_19_2, V0_20_7, from_served

    assert from_served(["v1beta2", "v1beta1"]) is V0_19_2
    assert from_served(["v1beta1", "v1beta2"]) is V0_19_2
    assert from_served(["v1beta2"]) is V0_20_7
    assert from_served([]) is None and from_served(None) is None
    assert from_served(["v1alpha1"]) is None  # nothing modelled serves that: unknown, not a guess
