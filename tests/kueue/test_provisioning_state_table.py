"""The ProvisioningRequest condition → admission check state table is data: its first matching row decides,
in Kueue's ``syncCheckStates`` precedence."""

from __future__ import annotations

import pytest

from flexq.kueue.provisioning_states import CHECK_STATE_TABLE, Outcome


def _first(true: set[str], admitted: bool) -> tuple[Outcome, str]:
    row = next(r for r in CHECK_STATE_TABLE if r.matches({t: {} for t in true}, admitted))
    return row.outcome, row.cause or row.message_of


@pytest.mark.parametrize(
    ("true", "admitted", "want"),
    [
        ({"Failed", "Provisioned"}, True, (Outcome.RETRY, "Failed")),
        ({"BookingExpired"}, False, (Outcome.RETRY, "BookingExpired")),
        ({"BookingExpired", "CapacityRevoked"}, False, (Outcome.REJECT_WHILE_RUNNING, "CapacityRevoked")),
        ({"BookingExpired"}, True, (Outcome.KEEP, "")),
        ({"BookingExpired", "Provisioned"}, True, (Outcome.KEEP, "")),
        ({"CapacityRevoked", "Provisioned"}, True, (Outcome.REJECT_WHILE_RUNNING, "CapacityRevoked")),
        ({"Provisioned", "Accepted"}, False, (Outcome.READY, "Provisioned")),
        ({"Accepted"}, False, (Outcome.PENDING_WITH_MESSAGE_OF, "Provisioned")),
        (set(), False, (Outcome.PENDING, "")),
    ],
)
def test_first_matching_row_decides(true: set[str], admitted: bool, want: tuple[Outcome, str]) -> None:
    assert _first(true, admitted) == want


def test_the_last_row_matches_everything() -> None:
    assert CHECK_STATE_TABLE[-1].matches({}, False) and CHECK_STATE_TABLE[-1].matches({"X": {}}, True)
