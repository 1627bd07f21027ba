"""How a ProvisioningRequest's conditions become its admission check's state (``syncCheckStates`` in
``pkg/controller/admissionchecks/provisioning/controller.go``), as data: ``CHECK_STATE_TABLE``, whose first
matching ``Row`` wins, and the ``Outcome`` it gives (Retry with backoff or Rejected past ``backoffLimitCount``,
Ready, Pending with a message, ...). ``kueue.provisioning.ProvisioningController`` applies it.

Pure: data and one predicate.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["CHECK_STATE_TABLE", "Outcome", "Row"]


class Outcome(enum.Enum):
    """What a matched row of ``CHECK_STATE_TABLE`` does to the admission check's state."""

    RETRY = "retry"  # Retry with backoff (message: prefix + cause), or Rejected past backoffLimitCount
    REJECT_WHILE_RUNNING = "reject-while-running"  # Rejected (cause's message) while active and not finished
    KEEP = "keep"  # leave the check as it is
    READY = "ready"  # Ready with the consume-provisioning-request podSetUpdates (cause's message)
    PENDING_WITH_MESSAGE_OF = "pending-with-message-of"  # Pending with ``message_of``'s message, when present
    PENDING = "pending"  # Pending, message cleared


@dataclass(frozen=True)
class Row:
    """One row: when every condition in ``true`` is True, none in ``not_true`` is, and the workload's
    admission is ``admitted`` (None: either), the ``outcome`` applies."""

    true: tuple[str, ...]
    outcome: Outcome
    not_true: tuple[str, ...] = ()
    admitted: bool | None = None
    cause: str = ""  # the condition whose message the check takes
    prefix: str = ""  # for RETRY
    message_of: str = ""  # for PENDING_WITH_MESSAGE_OF: a condition of any status

    def matches(self, true: dict[str, dict], admitted: bool) -> bool:
        return (
            all(t in true for t in self.true)
            and not any(t in true for t in self.not_true)
            and (self.admitted is None or self.admitted == admitted)
        )


# ``syncCheckStates``: ProvisioningRequest conditions → admission check state; the first matching row wins.
CHECK_STATE_TABLE: tuple[Row, ...] = (
    Row(("Failed",), Outcome.RETRY, cause="Failed", prefix="Retrying after failure: "),
    Row(
        ("BookingExpired",),
        Outcome.RETRY,
        not_true=("CapacityRevoked",),
        admitted=False,
        cause="BookingExpired",
        prefix="Retrying after booking expired: ",
    ),
    Row(("CapacityRevoked",), Outcome.REJECT_WHILE_RUNNING, cause="CapacityRevoked"),
    Row(("BookingExpired",), Outcome.KEEP),  # admitted: the booking was used
    Row(("Provisioned",), Outcome.READY, cause="Provisioned"),
    Row(("Accepted",), Outcome.PENDING_WITH_MESSAGE_OF, message_of="Provisioned"),
    Row((), Outcome.PENDING),
)
