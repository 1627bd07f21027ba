"""The ETA reads Kueue 0.19.2's legacy reasons too (issue 48: UnadmittedWorkloadsObservability is off there, so a
job no flavor fits says ``Pending``, not ``ExceedsMaxQuota``/``NoMatchingFlavor``): it is still said to never start,
not given a time."""

from __future__ import annotations

from flexq import Twin
from flexq.eta import EtaConfig, estimate, fmt_eta, state_from_twin
from tests.eta.helpers import rayjob, tutorial_cluster, unrunnable


def test_a_job_no_flavor_fits_is_said_so_on_0_19_2() -> None:
    twin = Twin(clock="virtual", seed=5, kueue="0.19.2")
    try:
        tutorial_cluster(twin, dws_max=16)
        twin.create(rayjob(1))
        twin.create(unrunnable())
        twin.advance(120)
        wl = next(w for w in twin.list("workload", "default") if "too-big" in w["metadata"]["name"])
        reason = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")["reason"]
        assert reason == "Pending"  # 0.19.2's word
        fc = estimate(state_from_twin(twin), EtaConfig(replicas=2, workers=1, horizon=86400.0))
    finally:
        twin.close()
    j = fc.find("too-big")
    assert j is not None and j.cannot and j.median is None, j and j.reasoning
    assert fmt_eta(j, fc.horizon) == "never (no flavor fits)"


def test_a_real_clusters_release_is_read_from_what_it_serves(tmp_path) -> None:
    """Through the Kubernetes API (the reader of a real cluster), a cluster running Kueue 0.19.2 is forecast with
    0.19.2's rules (before: "" — taken as the default 0.20.7, whose retry evicts at once, kueue#18785)."""
    from kubernetes import client, config

    from flexq.cli.kubeclient import fetch_cluster_state
    from flexq.http.server import Server

    twin = Twin(clock="real", home=tmp_path, executor="simulated", kueue="0.19.2")
    server = Server(twin.core, tmp_path).start()
    try:
        kc = server.write_files()["kubeconfig"]
        api = config.new_client_from_config(config_file=str(kc))
        try:
            st = fetch_cluster_state(api, node_pools=[])
        finally:
            api.close()
        assert isinstance(api, client.ApiClient)
    finally:
        server.stop()
        twin.close()
    assert st.kueue_version == "0.19.2", st.notes
    assert any("Kueue taken as 0.19.2" in n for n in st.notes), st.notes
