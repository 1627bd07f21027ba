"""The background twin ``flexq up`` starts: ``python -m flexq.cli.daemon --home DIR``.

Owns: building a live ``Twin`` whose state lives in ``DIR`` (``state.db``, pod logs), serving it with
``flexq.http.server.serve`` (which writes ``server.json``, ``pid`` and ``kubeconfig`` once it listens and
removes them at exit) until SIGTERM/SIGINT, with its ETAs refreshed in the background (``flexq.eta.service``:
the dashboard's and ``/metrics``' ETAs), with an owner-only umask (``FLEXQ_HOME`` is ``0700``, its files
``0600``), and then closing the twin, which stops its controllers and every
Ray process its executor started. Logs go to stderr, which ``flexq up`` points at ``DIR/flexq.log``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from flexq.store.private import private_home


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m flexq.cli.daemon")
    p.add_argument("--home", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--executor", choices=["ray", "simulated"], default="ray")
    p.add_argument("--kueue", default=None, help="the Kueue release (default: the state's, else the newest)")
    p.add_argument("--eta-period", type=float, default=60.0, help="seconds between ETA refreshes (0: no ETA)")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    log = logging.getLogger("flexq.daemon")
    home = Path(args.home)
    # everything this process writes is owner-only (the state, pod logs, Ray's session files it starts)
    os.umask(0o077)
    private_home(home)

    from flexq import Twin
    from flexq.errors import InputError, Invalid
    from flexq.http.server import serve
    from flexq.twin import executor_note

    # Ray's temp dirs stay in the executor's default short temp path (unix socket paths are limited to 107 bytes).
    try:
        extra = {"kueue": args.kueue} if args.kueue else {}
        twin = Twin(clock="real", home=home, executor=args.executor, **extra)
    except (
        InputError,
        Invalid,
    ) as exc:  # a state file that cannot be read: said in one line, not a traceback
        log.error("cannot start the twin: %s", exc)
        return 1
    note = executor_note(args.executor)
    log.info("twin started (home %s, Kueue %s); %s", home, twin.core.settings.kueue.tag, note)
    service = None
    if args.eta_period > 0:
        from flexq.eta.service import EtaService

        service = EtaService(twin, period=args.eta_period).start()
    try:
        code = serve(twin.core, home, args.host, args.port, extra={"executor_note": note})
    finally:
        log.info("stopping the twin")
        if service is not None:
            service.stop()
        twin.close()
        log.info("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
