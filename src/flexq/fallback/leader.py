"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` (and so
controller-runtime's manager) does it: several replicas of ``flexq fallback`` run, one acts.

``LeaseElector.try_acquire_or_renew`` is ``tryAcquireOrRenew``: read the Lease; create it (holding it) if there
is none; if another holder's record has not changed for ``lease_duration`` seconds (measured on this replica's
own clock from when it last saw the record change, as client-go does, so clocks need not agree) take it over
(``leaseTransitions`` + 1, ``acquireTime`` now); if this replica holds it, renew it (``renewTime`` now). Every
write carries the read ``resourceVersion``, so two replicas never both win one round (the loser gets a
Conflict). The leader that cannot renew within ``renew_deadline`` stops acting (``flexq fallback`` exits, as
controller-runtime's manager does on "leader election lost"); ``release`` gives the Lease up on a clean stop
(``ReleaseOnCancel``). Defaults: controller-runtime's (15 s lease, 10 s renew deadline, 2 s retry period).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from typing import Any

from flexq.clock import WallClock, parse_time_or_none
from flexq.errors import AlreadyExists, ApiError, Conflict, NotFound
from flexq.fallback.api import ClusterAPI

__all__ = ["LeaseElector", "LEASE_NAME", "micro_time", "parse_micro_time", "timing_error"]

log = logging.getLogger("flexq.fallback")
LEASE_NAME = "flexq-fallback"


def micro_time(epoch: float) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    import datetime as dt

    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


parse_micro_time = parse_time_or_none  # a Lease's MicroTime as epoch seconds (None if absent or unreadable)


def timing_error(
    lease_duration: float,
    renew_deadline: float,
    retry_period: float,
    names: tuple[str, str, str] = ("lease duration", "renew deadline", "retry period"),
) -> str | None:
    """client-go's rule for the three timings (``NewLeaderElector``): None when lease duration > renew deadline >
    retry period > 0, else what is needed, in ``names``."""
    if lease_duration > renew_deadline > retry_period > 0:
        return None
    return f"need {names[0]} > {names[1]} > {names[2]} > 0"


class LeaseElector:
    def __init__(
        self,
        api: ClusterAPI,
        namespace: str,
        name: str = LEASE_NAME,
        identity: str | None = None,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: Any = None,
    ) -> None:
        problem = timing_error(lease_duration, renew_deadline, retry_period)
        if problem is not None:
            raise ValueError(problem)
        self.api, self.namespace, self.name = api, namespace, name
        self.identity = identity or f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
        self.lease_duration, self.renew_deadline, self.retry_period = (
            lease_duration,
            renew_deadline,
            retry_period,
        )
        self.clock = clock or WallClock()
        self._observed: dict[str, Any] | None = None  # the last Lease spec seen
        self._observed_at = 0.0  # this replica's clock when the record last changed
        self.last_renew: float | None = None  # when this replica last held the Lease for sure

    @property
    def leading(self) -> bool:
        return self.last_renew is not None and self.clock.now() - self.last_renew < self.renew_deadline

    def try_acquire_or_renew(self) -> bool:
        """One round; True when this replica holds the Lease afterwards."""
        now = self.clock.now()
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(self.lease_duration),
            "renewTime": micro_time(now),
        }
        try:
            lease = self.api.get("Lease", self.name, self.namespace)
        except ApiError as exc:
            log.warning("cannot read the leader Lease: %s", exc)
            return self._held(now, False)
        if lease is None:
            first: dict[str, Any] = {**spec, "acquireTime": micro_time(now), "leaseTransitions": 0}
            obj = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": first,
            }
            try:
                self.api.create(obj)
            except (AlreadyExists, Conflict):
                return self._held(now, False)
            except ApiError as exc:
                log.warning("cannot create the leader Lease: %s", exc)
                return self._held(now, False)
            self._observe(first, now)
            log.info("%s became the leader (Lease %s/%s created)", self.identity, self.namespace, self.name)
            return self._held(now, True)
        old = dict(lease.get("spec") or {})
        if old != self._observed:
            self._observe(old, now)
        holder = old.get("holderIdentity") or ""
        duration = float(old.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > now:
            return self._held(now, False)  # someone else holds it and it has not expired
        new = dict(old)
        new.update(spec)
        if holder != self.identity:
            new["acquireTime"] = micro_time(now)
            new["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + (1 if holder else 0)
        lease = dict(lease)
        lease["spec"] = new
        try:
            self.api.replace(lease)
        except (Conflict, NotFound):
            return self._held(now, False)
        except ApiError as exc:
            log.warning("cannot update the leader Lease: %s", exc)
            return self._held(now, False)
        if holder != self.identity:
            log.info("%s became the leader (took the Lease over from %r)", self.identity, holder)
        self._observe(new, now)
        return self._held(now, True)

    def _observe(self, spec: dict[str, Any], now: float) -> None:
        self._observed, self._observed_at = dict(spec), now

    def _held(self, now: float, ok: bool) -> bool:
        if ok:
            self.last_renew = now
        return ok

    def release(self) -> None:
        """Give the Lease up (a clean stop): the next replica need not wait for it to expire."""
        if self.last_renew is None:
            return
        try:
            lease = self.api.get("Lease", self.name, self.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
                return
            lease = dict(lease)
            lease["spec"] = {
                **(lease.get("spec") or {}),
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": micro_time(self.clock.now()),
            }
            self.api.replace(lease)
        except ApiError as exc:
            log.info("could not release the leader Lease: %s", exc)
        self.last_renew = None
