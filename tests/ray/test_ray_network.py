"""Issue 17, acceptance 1: while the tutorial's RayJob trains on real Ray, every process of the twin's process tree
listens on loopback only, and Ray's servers refuse a request without the cluster's token.

The same run also checks Kueue's eviction of a training job (every Ray process stops within seconds, the resumed
job trains on a fresh cluster to the end).

Listeners are sampled (psutil) about once a second from the moment the RayJob is applied until it ends, over
the test process's whole process tree plus every process carrying the executor's owner marker, so servers
that live only while training runs (Ray Train's workers, JAX's distributed coordinator) are seen too.
"""

from __future__ import annotations

import contextlib
import json
import stat
import time
import urllib.error
import urllib.request

import psutil
import pytest

from flexq.kuberay import localproc
from flexq.testing.live_twin import describe, ray_executor, rayjob, status, tutorial_live_twin, wait_until

# one 5-node Ray cluster at a time (not ``heavy``: it runs beside the tutorial's two, tests/README.md)
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(1800)]

LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def _listeners(ex) -> dict[tuple[str, int], str]:
    """(address, port) -> process description, for every listening inet socket of the twin's processes."""
    procs: dict[int, psutil.Process] = {}
    me = psutil.Process()
    for p in [me, *me.children(recursive=True)]:
        procs[p.pid] = p
    for pid in localproc.owned_pids(ex._token + ":"):
        with contextlib.suppress(psutil.Error):
            procs.setdefault(pid, psutil.Process(pid))
    out: dict[tuple[str, int], str] = {}
    for p in procs.values():
        try:
            conns = p.net_connections(kind="inet")
            name = " ".join(p.cmdline())[:160] or p.name()
        except psutil.Error:
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN:
                out[(c.laddr.ip, c.laddr.port)] = f"pid {p.pid}: {name}"
    return out


def _http_status(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def _gcs_cluster_id(address: str, token: str | None):
    """``NodeInfoGcsService.GetClusterId`` over plain gRPC: the status code, and the id when it answers."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        metadata = [("authorization", f"Bearer {token}")] if token else []
        try:
            reply = stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), metadata=metadata, timeout=20)
        except grpc.RpcError as err:
            return err.code(), None
        return grpc.StatusCode.OK, reply.cluster_id


def _raylets(gcs: str, token: str) -> list[tuple[str, int]]:
    """(address, node manager port) of every alive node, from the GCS (asked with the token)."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    with grpc.insecure_channel(gcs) as channel:
        reply = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetAllNodeInfo(
            gcs_service_pb2.GetAllNodeInfoRequest(),
            metadata=[("authorization", f"Bearer {token}")],
            timeout=20,
        )
    return [(n.node_manager_address, n.node_manager_port) for n in reply.node_info_list if n.state == 0]


def _raylet_load(address: str, token: str | None):
    """``NodeManagerService.GetResourceLoad`` over plain gRPC: its status code."""
    import grpc
    from ray.core.generated import node_manager_pb2, node_manager_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = node_manager_pb2_grpc.NodeManagerServiceStub(channel)
        metadata = [("authorization", f"Bearer {token}")] if token else []
        try:
            stub.GetResourceLoad(node_manager_pb2.GetResourceLoadRequest(), metadata=metadata, timeout=20)
        except grpc.RpcError as err:
            return err.code()
        return grpc.StatusCode.OK


def _set_active(twin, active: bool) -> None:
    wl = twin.list("Workload", "default")[0]
    twin.patch("Workload", wl["metadata"]["name"], {"spec": {"active": active}}, "default")


def _evict_and_resume(twin, ex, first_cluster: str) -> None:
    """Issue 5: Kueue's eviction (here: the workload deactivated, so Kueue sets the RayJob's spec.suspend=true)
    stops every Ray process within seconds, and resuming starts a fresh Ray cluster that trains again (one real
    Ray cluster serves both this check and the network one: each start costs a minute on 2 cores)."""
    name = "rayjob-tpu-v6e-dws-1"
    t0 = time.monotonic()
    _set_active(twin, False)
    wait_until(
        lambda: not localproc.owned_pids(ex._token + ":"),
        60,
        "Ray processes to stop",
        step=0.2,
        detail=lambda: describe(twin),
    )
    print(f"\neviction -> every Ray process gone in {time.monotonic() - t0:.1f} s")
    wait_until(lambda: status(twin, name).get("jobDeploymentStatus") == "Suspended", 60, "Suspended")
    assert twin.get("RayJob", name, "default")["spec"]["suspend"] is True
    _set_active(twin, True)
    wait_until(
        lambda: status(twin, name).get("jobStatus") == "RUNNING",
        1200,
        "the job to run again",
        detail=lambda: describe(twin),
    )
    assert status(twin, name)["rayClusterName"] != first_cluster


def test_every_listener_is_loopback_and_ray_asks_for_its_token_while_the_tutorial_job_trains(tmp_path):
    twin = tutorial_live_twin(tmp_path)
    ex = ray_executor(twin)
    seen: dict[tuple[str, int], str] = {}
    checked = False
    try:
        mode = stat.S_IMODE(ex.token_file.stat().st_mode)
        assert mode == 0o600, oct(mode)
        token = ex.token_file.read_text().strip()
        assert len(token) == 64

        twin.apply(rayjob(1))
        deadline = time.monotonic() + 1500
        while status(twin, "rayjob-tpu-v6e-dws-1").get("jobDeploymentStatus") not in ("Complete", "Failed"):
            assert time.monotonic() < deadline, "the RayJob did not end in time\n" + describe(twin)
            seen.update(_listeners(ex))
            st = status(twin, "rayjob-tpu-v6e-dws-1")
            if not checked and st.get("jobStatus") == "RUNNING":
                cluster = st["rayClusterName"]
                head = next(
                    p
                    for p in twin.list("Pod", "default")
                    if p["metadata"]["name"].startswith(cluster + "-head")
                )
                ports = ex.poll(("default", head["metadata"]["name"])).ports
                dash = f"http://127.0.0.1:{ports[8265]}"
                # each cluster has its own token (derived from the executor's): the executor's own is refused
                master, token = token, ex.cluster_token("default", cluster)
                assert _http_status(dash + "/api/version", {"Authorization": f"Bearer {master}"}) == 403
                # the dashboard: public health check, the API refused without the token or with a wrong one
                assert _http_status(dash + "/api/gcs_healthz") == 200
                assert _http_status(dash + "/api/version") == 401
                assert _http_status(dash + "/api/version", {"Authorization": "Bearer " + "0" * 64}) == 403
                assert _http_status(dash + "/api/jobs/", ex.auth_headers("default", cluster)) == 200
                # the GCS (gRPC): refused without the token, answers with it
                code, _ = _gcs_cluster_id(f"127.0.0.1:{ports[6379]}", None)
                assert code.name == "UNAUTHENTICATED", code
                code, cluster_id = _gcs_cluster_id(f"127.0.0.1:{ports[6379]}", token)
                assert code.name == "OK" and cluster_id, code
                # every raylet (head and the 4 TPU hosts): on loopback, refused without the token
                raylets = _raylets(f"127.0.0.1:{ports[6379]}", token)
                assert len(raylets) == 5 and {a for a, _ in raylets} == {"127.0.0.1"}, raylets
                assert [_raylet_load(f"{a}:{p}", None).name for a, p in raylets] == ["UNAUTHENTICATED"] * 5
                assert _raylet_load(f"{raylets[0][0]}:{raylets[0][1]}", token).name == "OK"
                checked = True
                seen.update(_listeners(ex))
                _evict_and_resume(twin, ex, cluster)
            time.sleep(1.0)
        st = status(twin, "rayjob-tpu-v6e-dws-1")
        log = twin.logs("job/rayjob-tpu-v6e-dws-1")
        assert (st["jobDeploymentStatus"], st["jobStatus"]) == ("Complete", "SUCCEEDED"), log[-3000:]
        assert "Training Complete!" in log
        assert checked, "the job never showed RUNNING while it was watched"
    finally:
        twin.close()
    ray_listeners = {k: v for k, v in seen.items() if "ray" in v}
    wide = {f"{ip}:{port}": who for (ip, port), who in seen.items() if ip not in LOOPBACK}
    print(
        f"\n{len(seen)} listening sockets seen ({len(ray_listeners)} of Ray processes), "
        f"{len(wide)} beyond loopback"
    )
    for (ip, port), who in sorted(seen.items(), key=lambda kv: kv[1]):
        print(f"  {ip}:{port}  {who[:110]}")
    assert len(ray_listeners) >= 10, json.dumps({f"{k[0]}:{k[1]}": v for k, v in seen.items()}, indent=1)
    assert not wide, json.dumps(wide, indent=1)
