"""REST semantics over HTTP: field validation warnings, dry runs, status subresources, versions, collections."""

from __future__ import annotations

from tests.http.conftest import Served

CM = "/api/v1/namespaces/default/configmaps"
CQ = "/apis/kueue.x-k8s.io/{v}/clusterqueues"


def test_warn_drops_unknown_fields_with_a_warning(served: Served) -> None:
    r = served.http(
        "POST",
        CM,
        json={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "warned"},
            "data": {"a": "1"},
            "bogus": True,
        },
    )
    assert r.status_code == 201
    assert (
        'unknown field \\"bogus\\"' in r.headers["warning"] or 'unknown field "bogus"' in r.headers["warning"]
    )
    assert "bogus" not in served.http("GET", f"{CM}/warned").json()
    r = served.http(
        "POST",
        f"{CM}?fieldValidation=Ignore",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}, "bogus": 1},
    )
    assert r.status_code == 201 and "warning" not in r.headers


def test_dry_run_changes_nothing(served: Served) -> None:
    r = served.http(
        "POST",
        f"{CM}?dryRun=All",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}},
    )
    assert r.status_code == 201 and r.json()["metadata"]["name"] == "dry"
    assert served.http("GET", f"{CM}/dry").status_code == 404
    served.twin.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}})
    assert served.http("DELETE", f"{CM}/keep?dryRun=All").status_code == 200
    assert served.http("GET", f"{CM}/keep").status_code == 200


def test_versions_and_status_subresource(served: Served) -> None:
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "verq"},
        "spec": {"cohort": "team", "resourceGroups": []},
    }
    assert served.http("POST", CQ.format(v="v1beta1"), json=body).status_code == 201
    v1 = served.http("GET", CQ.format(v="v1beta1") + "/verq").json()
    v2 = served.http("GET", CQ.format(v="v1beta2") + "/verq").json()
    assert v1["spec"]["cohort"] == "team" and v2["spec"]["cohortName"] == "team"
    r = served.http(
        "PATCH",
        CQ.format(v="v1beta2") + "/verq/status",
        json={"status": {"pendingWorkloads": 7}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["status"]["pendingWorkloads"] == 7  # (Kueue's controller owns this field and rewrites it)
    # a status write through the main resource is ignored, as for every kind with a status subresource
    r = served.http(
        "PATCH",
        CQ.format(v="v1beta2") + "/verq",
        json={"spec": {"cohortName": "team-2"}, "status": {"pendingWorkloads": 99}},
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert r.status_code == 200 and r.json()["spec"]["cohortName"] == "team-2"
    assert (r.json().get("status") or {}).get("pendingWorkloads") != 99


def test_collections_across_namespaces_and_deletecollection(served: Served) -> None:
    served.http(
        "POST",
        "/api/v1/namespaces",
        json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    )
    for ns in ("default", "other"):
        served.twin.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"c-{ns}", "namespace": ns, "labels": {"sweep": "yes"}},
            }
        )
    names = {
        (i["metadata"]["namespace"], i["metadata"]["name"])
        for i in served.http("GET", "/api/v1/configmaps?labelSelector=sweep%3Dyes").json()["items"]
    }
    assert names == {("default", "c-default"), ("other", "c-other")}
    r = served.http("DELETE", "/api/v1/namespaces/other/configmaps?labelSelector=sweep%3Dyes")
    assert r.status_code == 200 and [i["metadata"]["name"] for i in r.json()["items"]] == ["c-other"]
    left = served.http("GET", "/api/v1/configmaps?labelSelector=sweep%3Dyes").json()["items"]
    assert [i["metadata"]["name"] for i in left] == ["c-default"]


def test_table_list_with_objects(served: Served) -> None:
    served.twin.create(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tbl"}, "data": {"x": "y"}}
    )
    r = served.http(
        "GET",
        f"{CM}?fieldSelector=metadata.name%3Dtbl&includeObject=Object",
        headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
    )
    t = r.json()
    assert t["kind"] == "Table" and t["rows"][0]["cells"][:2] == ["tbl", 1]
    assert t["rows"][0]["object"]["data"] == {"x": "y"}
