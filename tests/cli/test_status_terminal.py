"""``flexq status`` in a real terminal (a pty) against a served live twin (real clock, simulated executor, real
HTTPS) running the tutorial: ``-w`` prints a block only when a row's state, plan, reason or ETA bucket changes
(not each time a DWS wait's "queued for Ns" ticks), only a waiting job has an ETA cell, and at 80 columns no
figure is cut (issue 50)."""

from __future__ import annotations

import itertools
import os
import pty
import re
import select
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flexq import Twin
from flexq.cli import tutorial as T
from flexq.http.server import Server
from tests.eta.helpers import TRAIN, rayjob
from tests.waiting import wait_for

PROJECT = "watch-project"
DWS_WAIT = 20  # seconds a DWS request waits in this twin's cloud
PROFILE = {
    "apiVersion": "twin.flexq.dev/v1alpha1",
    "kind": "CapacityProfile",
    "metadata": {"name": "default"},
    "spec": {"defaults": {"provisionTime": {"fixed": "1s"}, "queueWait": {"fixed": f"{DWS_WAIT}s"}}},
}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _states(twin: Twin) -> dict[str, str]:
    from flexq.semantics.workloads import workload_state

    return {
        w["metadata"]["ownerReferences"][0]["name"]: workload_state(w)
        for w in twin.list("Workload", "default")
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Twin, str]]:
    home = tmp_path_factory.mktemp("watch-twin")
    twin = Twin(clock="real", home=home, executor="simulated")
    server = Server(twin.core, home).start()
    kubeconfig = server.write_files()["kubeconfig"]
    try:
        twin.core.project.create(PROFILE)

        def done() -> bool:
            return all(o["spec"].get("status") == "DONE" for o in twin.core.project.list("GkeOperation"))

        twin.gke("POST", *T.create_cluster_request(PROJECT))
        wait_for(done, what="the cluster")
        for dws in (False, True):
            path, body = T.create_node_pool_request(PROJECT, dws=dws)
            body["nodePool"]["autoscaling"]["maxNodeCount"] = 8
            twin.gke("POST", path, body)
            wait_for(done, what="a node pool")
        twin.apply(T.queue_yaml(api="v1beta2"))
        twin.apply(TRAIN)
        twin.create(rayjob(1, run=3600))  # plan A: the on-demand quota, running for an hour
        wait_for(lambda: _states(twin).get("rayjob-tpu-v6e-dws-1") == "Running", what="job 1 running")
        yield twin, kubeconfig
    finally:
        server.stop()
        twin.close()


class Terminal:
    """``python -m flexq.cli ARGS`` on a pty of ``columns`` columns; what it wrote, read as it comes."""

    def __init__(self, argv: list[str], columns: int) -> None:
        env = dict(
            os.environ,
            COLUMNS=str(columns),
            LINES="60",
            PYTHONPATH=os.pathsep.join(sys.path),
            TERM="xterm-256color",
        )
        self.pid, self.fd = pty.fork()
        if (
            self.pid == 0
        ):  # the child: flexq on a terminal, where Ctrl-C interrupts (a shell's background job,
            # ``nohup ... &`` included, ignores SIGINT, and execve would pass that on: the watch never ended)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(sys.executable, [sys.executable, "-m", "flexq.cli", *argv], env)
        self.chunks: list[bytes] = []
        self.status: int | None = None

    def read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:
                    return
                if not data:
                    return
                self.chunks.append(data)

    def finish(self, timeout: float = 60) -> int:
        """Its exit code, once it ends; one that has not ended ``timeout`` s after its output stopped is killed
        (and the test fails on the code, -9, instead of waiting for ever)."""
        self.read(timeout)
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    @property
    def plain(self) -> str:
        return ANSI.sub("", b"".join(self.chunks).decode("utf-8", "replace")).replace("\r", "")


@pytest.mark.slow
def test_watch_prints_a_dws_wait_once_and_only_a_waiting_job_has_an_eta(served) -> None:
    """Job 2 waits DWS_WAIT s for DWS while ``flexq status -w`` polls twice a second: before, every poll was a
    new block ("queued for 1s", "queued for 2s", ...: ~2 x DWS_WAIT blocks); now one when it arrives, one when its
    ETA's bucket or its reason moves, one when it runs. When it runs, its row has no ETA cell (before, the
    forecast made while it waited still said "in ...")."""
    twin, kc = served
    term = Terminal(
        ["status", "-w", "--interval", "0.5", "--eta-replicas", "1", "--kubeconfig", kc], columns=250
    )
    try:
        try:
            term.read(8)  # the first table, with the first forecast
            twin.create(rayjob(2, run=3600))  # the on-demand quota is taken: it goes to DWS
            wait_for(
                lambda: _states(twin).get("rayjob-tpu-v6e-dws-2") == "Running",
                DWS_WAIT + 60,
                "job 2 running",
            )
            term.read(4)
        finally:
            os.kill(term.pid, signal.SIGINT)
        assert term.finish() == 130
        text = term.plain
        blocks = re.split(r"\n(?=[^\n]*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ  \d+ changed)", text)
        updates = blocks[1:]
        queued = [b for b in updates if "DWSQueued" in b]
        assert queued, text  # it did wait for DWS, and the watch saw it
        # each block says something the one before did not: the wait ticking ("queued for Ns", the WAITED
        # column) is no change. Which changes a loaded machine shows (the ETA arriving a poll after the job,
        # the request's "provisioned" a poll before it runs) varies; one block per poll (before: ~2 x DWS_WAIT)
        # does not
        said = [_without_ticks(b) for b in queued]
        assert all(a != b for a, b in itertools.pairwise(said)), f"a block that only ticked:\n{text}"
        assert len(queued) <= 4, f"{len(queued)} blocks while job 2 waited for DWS:\n{text}"
        assert len(updates) <= 8, f"{len(updates)} blocks:\n{text}"
        running = [b for b in updates if re.search(r"dws-2 .*Running", b)]
        assert running, text
        for block in running:
            row = next(line for line in block.splitlines() if "dws-2" in line)
            assert not re.search(r"\bin \d|not within", row), row  # no ETA on a running job's row
    finally:  # the next test counts the rows: job 2 goes whatever this one found
        twin.delete("rayjob", "rayjob-tpu-v6e-dws-2", "default")
        wait_for(lambda: "rayjob-tpu-v6e-dws-2" not in _states(twin), 60, "job 2 gone")


def _without_ticks(block: str) -> str:
    """A watch block without its time stamp, its wait figures and its table drawing: what it says."""
    rows = [line for line in block.splitlines()[1:] if "│" in line]
    text = " ".join(" ".join(rows).replace("│", " ").split())
    return re.sub(r"queued for \d+s|\b\d+s\b", "", text)


NUMBER = re.compile(r"(?<![\w.,])\$?\d[\d,]*(?:\.\d+)?(?![\w,])")


def _numbers(text: str) -> set[str]:
    """The numbers in the table rows of ``text``."""
    return set(NUMBER.findall("\n".join(line for line in text.splitlines() if "│" in line)))


def _at(columns: int, argv: list[str]) -> str:
    term = Terminal(argv, columns=columns)
    assert term.finish(240) == 0, term.plain
    return term.plain


@pytest.mark.slow
def test_status_at_80_columns_cuts_no_figure(served) -> None:
    """At 80 columns rich used to cut cells with "…" (a cost, a wait, an ETA); now text folds, columns are left
    out (said in the caption), and every figure is whole: each row's wait, cost and ETA on its first line."""
    twin, kc = served
    twin.create(rayjob(3, run=3600))  # waits for DWS: an ETA, a long WHY
    wait_for(lambda: _states(twin).get("rayjob-tpu-v6e-dws-3") == "QuotaReserved", 60, "job 3 waiting")
    try:
        argv = ["status", "--eta-replicas", "1", "--kubeconfig", kc]
        narrow = _at(80, argv)
        assert "…" not in narrow, narrow
        assert all(len(line) <= 80 for line in narrow.splitlines()), narrow
        rows = [line for line in narrow.splitlines() if re.search(r"│ rayjob-tpu-v6e-dws-\d", line)]
        assert len(rows) == 2, narrow
        for row in rows:  # each row's first line ends with its wait and its whole cost
            assert re.search(r"│ +\d+(?:d\d\dh|h\d\dm|m\d\ds|s) │", row), row
            assert re.search(r"│ +\$\d{1,3}(?:,\d{3})*\.\d\d │$", row), row
        assert re.search(r"│ in \d+(?:h\d\dm|m\d\ds|s) +│", rows[1]), rows[1]  # the ETA, whole
    finally:
        twin.delete("rayjob", "rayjob-tpu-v6e-dws-3", "default")


@pytest.mark.slow
def test_simulate_summary_at_80_columns_cuts_no_figure(tmp_path) -> None:
    """The planner's summary tables (eleven columns of figures) at 80 columns: before, "4,915.…"; now whole."""
    root = Path(__file__).resolve().parents[2]
    argv = ["simulate", str(root / "examples/tutorial-week"), "--until", "2d", "-j", "1"]
    argv += ["--no-progress", "--no-what-if", "--no-plots", "--out"]
    narrow = _at(80, [*argv, str(tmp_path / "a")])
    wide = _at(250, [*argv, str(tmp_path / "b")])
    assert "…" not in narrow, narrow
    assert _numbers(narrow) <= _numbers(wide), (sorted(_numbers(narrow) - _numbers(wide)), narrow)
    assert "left out at 80 columns" in narrow  # what did not fit is said, not cut
    for cost in re.findall(r"\b\d[\d,]*\.\d\d\b", wide.split("Variants, best first")[1].split("\n\n")[0])[:4]:
        assert cost in narrow, (cost, narrow)
