"""The dashboard cache answers at once from what its poller last read from a (fake, loopback) dashboard."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from flexq.kuberay.dashboard import DashboardCache


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/api/jobs/job-1":
            body = {"status": "RUNNING", "submission_id": "job-1"}
        elif self.path.startswith("/api/cluster_status"):
            body = {"result": True, "data": {"clusterStatus": "Node status\nActive:\n 1 headgroup\n"}}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_dashboard_cache_never_blocks_and_follows_the_dashboard():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    addr = {"c": f"127.0.0.1:{server.server_address[1]}"}
    cache = DashboardCache(lambda ns, c: addr.get(c))
    try:
        assert cache.job_info("default", "c", "job-1") is None  # first question: nothing known yet
        deadline = time.monotonic() + 10
        while cache.job_info("default", "c", "job-1") is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cache.job_info("default", "c", "job-1")["status"] == "RUNNING"
        while cache.cluster_status("default", "c") is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "headgroup" in cache.cluster_status("default", "c")
        assert cache.job_info("default", "other", "job-1") is None  # no such cluster
        del addr["c"]  # the cluster went away: answers are dropped
        while cache.job_info("default", "c", "job-1") is not None and time.monotonic() < deadline + 5:
            time.sleep(0.1)
        assert cache.job_info("default", "c", "job-1") is None
    finally:
        cache.close()
        server.shutdown()
