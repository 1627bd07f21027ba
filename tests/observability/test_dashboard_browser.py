"""The dashboard in a real browser (headless Chromium driven by Selenium) against a served live twin running the
tutorial (real clock, simulated training): it loads with the token, shows both tutorial jobs with their plans,
updates by itself when a job finishes, opens a workload's page; no JavaScript errors in the console.
Screenshots go to ``$FLEXQ_TEST_ARTIFACTS`` (else the test's tmp dir)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.http.server import Server

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
PROJECT = "demo-project"
RUN_SECONDS = 25


def wait_for(pred, timeout: float = 120.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def _ops_done(twin: Twin) -> bool:
    return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, Server]]:
    home = tmp_path_factory.mktemp("twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    server.write_files()
    try:
        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(lambda: _ops_done(twin), what="the cluster")
        for dws in (False, True):
            twin.gke("POST", *T.create_node_pool_request(PROJECT, dws=dws))
            wait_for(lambda: _ops_done(twin), what="a node pool")
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "jax-train-script"},
                "data": {"train.py": T.train_script()},
            }
        )
        yield twin, server
    finally:
        server.stop()
        twin.close()


def submit(twin: Twin, job_id: int) -> None:
    twin.apply(
        T.rayjob_yaml(job_id).replace(
            'kueue.x-k8s.io/elastic-job: "true"',
            f'kueue.x-k8s.io/elastic-job: "true"\n    twin.flexq.dev/run-seconds: "{RUN_SECONDS}"',
        )
    )


def test_dashboard_needs_the_token(live: tuple[Twin, Server]) -> None:
    _, server = live
    ca = str(server.creds.ca_cert)
    s = requests.Session()
    s.trust_env = False
    r = s.get(server.url + "/dashboard/", verify=ca, allow_redirects=False, timeout=20)
    assert r.status_code == 303 and r.headers["location"] == "/dashboard/login"
    assert (
        s.get(
            server.url + "/dashboard/part/overview", verify=ca, allow_redirects=False, timeout=20
        ).status_code
        == 303
    )
    r = s.post(server.url + "/dashboard/login", data={"token": "not-the-token"}, verify=ca, timeout=20)
    assert r.status_code == 401 and "not the twin" in r.text and "flexq_dashboard" not in s.cookies
    r = s.post(server.url + "/dashboard/login", data={"token": server.creds.token}, verify=ca, timeout=20)
    assert r.status_code == 200 and "Workloads" in r.text
    cookie = next(c for c in s.cookies if c.name == "flexq_dashboard")
    assert cookie.path == "/dashboard" and cookie.secure and cookie.has_nonstandard_attr("HttpOnly")
    assert cookie.value != server.creds.token  # a session, not the token
    # a login session cannot mint login codes (only the bearer token can), nor log in after logout
    assert s.post(server.url + "/dashboard/login-codes", verify=ca, timeout=20).status_code == 405
    s.get(server.url + "/dashboard/logout", verify=ca, timeout=20)
    fresh = requests.Session()
    fresh.cookies.set("flexq_dashboard", cookie.value, path="/dashboard")
    assert (
        fresh.get(server.url + "/dashboard/", verify=ca, allow_redirects=False, timeout=20).status_code == 303
    )
    # a one-time code: works once
    auth = {"Authorization": f"Bearer {server.creds.token}"}
    code = s.post(server.url + "/dashboard/login-codes", verify=ca, headers=auth, timeout=20).json()
    assert code["expiresInSeconds"] == 60 and code["code"] != server.creds.token
    once = requests.Session()
    r = once.post(server.url + "/dashboard/login", data={"code": code["code"]}, verify=ca, timeout=20)
    assert r.status_code == 200 and 'http-equiv="refresh"' in r.text
    assert once.get(server.url + "/dashboard/", verify=ca, timeout=20).status_code == 200
    again = requests.Session()
    r = again.post(server.url + "/dashboard/login", data={"code": code["code"]}, verify=ca, timeout=20)
    assert r.status_code == 401 and "has been used or has expired" in r.text and not again.cookies
    # the cookie opens the dashboard only, not the API
    assert s.get(server.url + "/api/v1/namespaces", verify=ca, timeout=20).status_code == 401
    assert s.get(server.url + "/metrics", verify=ca, timeout=20).status_code == 401
    assert "Content-Security-Policy" in s.get(server.url + "/dashboard/", verify=ca, timeout=20).headers
    # /metrics takes the bearer token, per cluster as every Kubernetes path does
    auth = {"Authorization": f"Bearer {server.creds.token}"}
    for path in ("/metrics", "/clusters/tpu-cluster/metrics"):
        r = s.get(server.url + path, verify=ca, headers=auth, timeout=20)
        assert r.status_code == 200 and "kueue_cluster_queue_status{" in r.text, path
    r = s.get(server.url + "/clusters/tpu-cluster/metrics", verify=ca, headers=auth, timeout=20)
    assert 'flexq_nodes{pool="default-pool"' in r.text


@pytest.mark.slow
@pytest.mark.skipif(
    not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)),
    reason="Debian's chromium and chromium-driver are not installed",
)
def test_dashboard_in_chromium(live: tuple[Twin, Server], tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    twin, server = live
    shots = Path(os.environ.get("FLEXQ_TEST_ARTIFACTS") or tmp_path) / "dashboard"
    shots.mkdir(parents=True, exist_ok=True)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--ignore-certificate-errors",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        submit(twin, 1)
        submit(twin, 2)
        # `flexq dashboard`'s way in: an owner-only page that posts a one-time login code
        from flexq.cli.observe import dashboard_login

        page, _ = dashboard_login(server.home)
        assert server.creds.token not in page.read_text() and page.stat().st_mode & 0o777 == 0o600
        driver.get(page.as_uri())
        wait_for(lambda: driver.current_url.rstrip("/").endswith("/dashboard"), 30, "the login")

        def rows() -> list[dict[str, str]]:  # read in one script: the page swaps its rows as the twin changes
            return driver.execute_script(
                "return Array.from(document.querySelectorAll('tr.wl')).map(r => ({job: r.dataset.job, "
                "state: r.dataset.state, plan: r.querySelector('td.plan').innerText, "
                "cost: r.querySelector('td.cost').innerText}));"
            )

        def plans() -> dict[str, str]:
            return {r["job"]: r["plan"] for r in rows()}

        def states() -> dict[str, str]:
            return {r["job"]: r["state"] for r in rows()}

        wait_for(
            lambda: len(plans()) == 2 and all("tpu-group=" in p for p in plans().values()),
            90,
            "both jobs placed (the page updating itself)",
        )
        p = plans()
        assert "tpu-group=on-demand" in p["RayJob/rayjob-tpu-v6e-dws-1"]
        assert "tpu-group=dws" in p["RayJob/rayjob-tpu-v6e-dws-2"]
        assert "head=default-cpu" in p["RayJob/rayjob-tpu-v6e-dws-1"]
        driver.save_screenshot(str(shots / "1-both-jobs-placed.png"))
        body = driver.find_element(By.TAG_NAME, "body").text
        for heading in ("ClusterQueues", "LocalQueues", "ProvisioningRequests", "Node pools", "Cost so far"):
            assert heading in body
        assert driver.find_elements(By.CSS_SELECTOR, ".bar .fill")  # usage bars per flavor and resource
        # quotas as kubectl prints them (the API server's canonical form), not "cpu 32/1e+09" (issue 50)
        labels = driver.execute_script(
            "return Array.from(document.querySelectorAll('.bar .label')).map(l => l.innerText);"
        )
        # dws-tpu-queue.yaml's quotas, as `kubectl get clusterqueue -o yaml` on GKE prints them (Quantity.String())
        want = {"cpu 10", "memory 20Gi", "google.com/tpu 0", "cpu 40", "memory 75Gi", "google.com/tpu 16"}
        want |= {"cpu 1G", "memory 1000000000Gi", "google.com/tpu 1G"}
        got = {f"{lab.split(' ')[0]} {lab.rpartition('/')[2]}" for lab in labels}
        assert got == want, (sorted(got ^ want), labels)
        assert not any("e+" in lab for lab in labels), labels
        assert "dws-prov-1" in driver.find_element(By.ID, "provisioning").text
        # no reload from here on: the page follows the twin by itself
        wait_for(lambda: states().get("RayJob/rayjob-tpu-v6e-dws-1") == "Succeeded", 120, "job 1 to finish")
        driver.save_screenshot(str(shots / "2-job-1-finished.png"))
        wait_for(lambda: states().get("RayJob/rayjob-tpu-v6e-dws-2") == "Succeeded", 120, "job 2 to finish")
        driver.save_screenshot(str(shots / "3-both-finished.png"))
        costs = {r["job"]: float(r["cost"].lstrip("$").replace(",", "")) for r in rows()}
        assert costs["RayJob/rayjob-tpu-v6e-dws-1"] > 0 and costs["RayJob/rayjob-tpu-v6e-dws-2"] > 0, costs
        href = driver.execute_script(
            "return document.querySelector('tr.wl[data-job=\"RayJob/rayjob-tpu-v6e-dws-2\"] a').href;"
        )
        driver.get(href)
        wait_for(lambda: driver.find_elements(By.ID, "conditions"), 30, "the workload page")
        text = driver.find_element(By.TAG_NAME, "body").text
        assert "QuotaReserved" in text and "Admitted" in text and "Finished" in text
        assert (
            "ProvisioningRequestCreated" in text
            or "QuotaReserved" in driver.find_element(By.ID, "events").text
        )
        driver.save_screenshot(str(shots / "4-workload-page.png"))
        errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert not errors, errors
        assert (shots / "1-both-jobs-placed.png").stat().st_size > 10_000
    finally:
        driver.quit()


def test_dashboard_command_url(live: tuple[Twin, Server], capsys: pytest.CaptureFixture[str]) -> None:
    from flexq.cli.main import main

    _, server = live
    assert main(["dashboard", "--home", str(server.home), "--print-url"]) == 0
    out = capsys.readouterr().out
    page = server.home / "dashboard-login.html"
    assert f"{server.url}/dashboard/" in out and str(page) in out.replace("\n", "")
    assert server.creds.token not in out and server.creds.token not in page.read_text()
    assert page.stat().st_mode & 0o777 == 0o600 and 'name="code"' in page.read_text()
    assert shutil.which("true") is not None  # keep the module importable where no browser is installed


def test_status_output_and_watch(live: tuple[Twin, Server]) -> None:
    """``flexq status -o yaml`` and ``-w -o json`` through the Kubernetes API of the served twin: the coded reason
    in each row, and -w printing the rows that change (a job submitted while it follows)."""
    import argparse
    import io
    import json

    import yaml
    from rich.console import Console

    from flexq.cli import observe

    twin, server = live
    kubeconfig = str(server.kubeconfig_path())
    out = io.StringIO()
    console, err = Console(file=out, width=200), Console(file=io.StringIO())
    args = argparse.Namespace(
        kubeconfig=kubeconfig,
        context=None,
        namespace="default",
        all_namespaces=False,
        output="yaml",
        watch=False,
        interval=0.2,
    )
    assert observe.cmd_status(args, console, err) == 0
    docs = yaml.safe_load(out.getvalue()) or []
    assert all("reason" in d for d in docs)
    out.truncate(0)
    out.seek(0)
    doc = T.rayjob_yaml(7).replace(
        "kueue.x-k8s.io/queue-name: user-queue", "kueue.x-k8s.io/queue-name: nowhere"
    )

    def sleep_and_submit(_: float) -> None:
        if not twin.try_get("rayjob", "rayjob-tpu-v6e-dws-7", "default"):
            twin.apply(doc)
        wait_for(
            lambda: any(
                "dws-7" in w["metadata"]["name"] and w.get("status", {}).get("conditions")
                for w in twin.list("workload", "default")
            ),
            30,
            "the workload's status",
        )

    args.output, args.watch = "json", True
    assert observe.cmd_status(args, console, err, sleep=sleep_and_submit, rounds=2) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines() if line.strip()]
    mine = [d for d in lines if d["job"] == "RayJob/rayjob-tpu-v6e-dws-7"]
    assert mine and mine[-1]["reason"]["code"] == "Misconfigured"
    assert "nowhere" in mine[-1]["reason"]["detail"] and mine[-1]["reason"]["action"]
    twin.delete("rayjob", "rayjob-tpu-v6e-dws-7", "default")
