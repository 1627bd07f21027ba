"""flexq's fallback on the virtual twin with the tutorial's config: detection, the move, steering, the return."""

from __future__ import annotations

from tests.fallback.conftest import H, stockout_profile, submit

from flexq.fallback.policy import ANN_MOVE, ANN_MOVED


def _workload(twin, job: str) -> dict | None:
    wls = [w for w in twin.list("workload", "default")
           if w["metadata"]["ownerReferences"][0]["name"] == job]
    return max(wls, key=lambda w: w["metadata"]["creationTimestamp"]) if wls else None


def _flavor(wl: dict | None) -> str | None:
    for psa in ((wl or {}).get("status") or {}).get("admission", {}).get("podSetAssignments", []):
        if psa["name"] == "tpu-group":
            return next(iter(psa["flavors"].values()))
    return None


def _events(twin, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in twin.list("Event", "default")
            if e["involvedObject"]["name"] == name and e["reason"].startswith("Fallback")]


def test_stockout_moves_a_waiting_job_to_dws_and_it_finishes(make_twin):
    twin = make_twin(stockout_profile("2h"))
    submit(twin, 1)
    twin.advance(30)
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    twin.advance(15 * 60)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    moved = job["metadata"]["annotations"].get(ANN_MOVED, "")
    assert "on-demand stocked out" in moved and "moved to dws" in moved, moved
    reasons = [r for r, _ in _events(twin, "rayjob-tpu-v6e-dws-1")]
    assert "FallbackEvicting" in reasons and "FallbackMoved" in reasons
    wl = _workload(twin, "rayjob-tpu-v6e-dws-1")
    assert _flavor(wl) == "dws"
    twin.advance(H)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert job["status"]["jobDeploymentStatus"] == "Complete", job["status"]


def test_without_stockout_nothing_changes(make_twin):
    twin = make_twin(None)
    submit(twin, 1)
    twin.advance(H)
    job = twin.get("rayjob", "rayjob-tpu-v6e-dws-1", "default")
    assert ANN_MOVE not in (job["metadata"].get("annotations") or {})
    assert _flavor(_workload(twin, "rayjob-tpu-v6e-dws-1")) == "on-demand"
    assert not _events(twin, "rayjob-tpu-v6e-dws-1")
