"""The durations GKE's cluster autoscaler and DWS (queued provisioning) keep, written once.

Owns the constants the twin's autoscaler (``flexq.gke.autoscaler``) and ProvisioningRequest controller
(``flexq.gke.provisioning``) act on, and the ETA's fast forward run (``flexq.forecast.fast``) reads, so the two
cannot drift apart:

- ``SCALE_DOWN_UNNEEDED_SECONDS``: a node unneeded this long is removed (``--scale-down-unneeded-time=10m``,
  research/cloud.md §1.5);
- ``SCALE_DOWN_DELAY_AFTER_ADD``: no scale-down of a node group this soon after it grew
  (``--scale-down-delay-after-add=10m``);
- ``FAILED_SCALE_UP_BACKOFF_SECONDS``: a node group whose scale-up failed is not tried again before this
  (the autoscaler's initial back-off);
- ``GRANT_RETRY_SECONDS``: a DWS grant (or a check-capacity request) that finds no room looks again after this;
- ``BOOKING_SECONDS``: a provisioned request's capacity is held this long for its pods (``BookingDuration``);
- ``DWS_MAX_WAIT_SECONDS``: a queued request not provisioned by then fails (``WaitTimeExceeded``; the DWS
  queue limit, GKE's default ``ValidUntilSeconds``);
- ``MAX_RUN_SECONDS``: DWS nodes are removed after this (``DefaultMaxRunDuration``);
- ``TERMINAL_TTL_SECONDS``: a finished request is garbage-collected after this.

Pure: constants only. Must not import anything in flexq.
"""

from __future__ import annotations

__all__ = [
    "SCALE_DOWN_UNNEEDED_SECONDS",
    "SCALE_DOWN_DELAY_AFTER_ADD",
    "FAILED_SCALE_UP_BACKOFF_SECONDS",
    "GRANT_RETRY_SECONDS",
    "BOOKING_SECONDS",
    "DWS_MAX_WAIT_SECONDS",
    "MAX_RUN_SECONDS",
    "TERMINAL_TTL_SECONDS",
]

SCALE_DOWN_UNNEEDED_SECONDS = 600.0
SCALE_DOWN_DELAY_AFTER_ADD = 600.0
FAILED_SCALE_UP_BACKOFF_SECONDS = 300.0
GRANT_RETRY_SECONDS = 60.0
BOOKING_SECONDS = 600.0
DWS_MAX_WAIT_SECONDS = 7 * 86400.0
MAX_RUN_SECONDS = 7 * 86400.0
TERMINAL_TTL_SECONDS = 7 * 86400.0
