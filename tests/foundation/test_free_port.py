"""``localproc.free_port`` across processes: a port one process handed out (to a Ray it is about to start) is
never handed out by another until the first releases it or ends — two twins on one machine starting Ray side by
side never race for one port (one's dashboard would answer for the other's cluster)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from flexq.kuberay import localproc

HOLD = """
import sys, time
from flexq.kuberay import localproc
localproc._port_range = lambda: ({p}, {p})
print(localproc.free_port(), flush=True)
time.sleep(60)
"""


def _one_port_range(monkeypatch, port: int) -> None:
    monkeypatch.setattr(localproc, "_port_range", lambda: (port, port))


def test_a_port_another_process_holds_is_not_handed_out_until_it_ends(monkeypatch) -> None:
    port = localproc.free_port()
    localproc.release_ports([port])
    child = subprocess.Popen([sys.executable, "-c", HOLD.format(p=port)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert int(child.stdout.readline()) == port  # the child holds it (not bound: Ray would bind it later)
        assert localproc.port_is_free(port)
        _one_port_range(monkeypatch, port)
        other = localproc.free_port()
        assert other != port
        localproc.release_ports([other])
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    # the lock went with the killed process
    again = localproc.free_port()
    assert again == port
    # handed out once per process too, until released
    assert localproc.free_port() != port
    localproc.release_ports([again])
    assert localproc.free_port() == port
    localproc.release_ports([port])


def test_ports_come_from_below_the_ephemeral_range() -> None:
    low, high = localproc._port_range()
    ports = [localproc.free_port() for _ in range(20)]
    try:
        assert len(set(ports)) == 20
        assert all(low <= p <= high for p in ports), (low, high, ports)
        ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]
        assert high < int(ephemeral)
    finally:
        localproc.release_ports(ports)
