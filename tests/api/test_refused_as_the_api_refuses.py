"""What the API server refuses, refused: ``metav1.Condition``'s schema rules on Kueue's and the autoscaler's
status conditions, int32 fields and RFC 3339 times of core kinds — each naming the field and the reason, values
quoted as Go's ``%q`` quotes them, so that control characters and bidi overrides in what a client sent never come
back raw (to kubectl's terminal, or ``flexq simulate``'s)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from flexq import Twin
from flexq.api.goquote import go_quote
from flexq.errors import ApiError, BadRequest, Invalid

CQ = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "1"}]
"""
T0 = "2027-01-01T00:00:00Z"


def cond(**kw: Any) -> dict[str, Any]:
    return {
        "type": "Active",
        "status": "True",
        "reason": "Ready",
        "message": "m",
        "lastTransitionTime": T0,
    } | kw


@pytest.fixture(scope="module")
def twin() -> Any:
    t = Twin(clock="virtual")
    t.apply(CQ)
    t.advance(2)
    yield t
    t.close()


def refused(twin: Twin, conditions: list[dict[str, Any]]) -> Invalid:
    with pytest.raises(Invalid) as exc:
        twin.patch("clusterqueue", "team", {"status": {"conditions": conditions}}, subresource="status")
    return exc.value


@pytest.mark.parametrize(
    ("conditions", "field", "text"),
    [
        (
            [cond(reason="not a reason")],
            "status.conditions[0].reason",
            'Invalid value: "not a reason": status.conditions[0].reason in body should match '
            "'^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'",
        ),
        ([cond(reason="")], "status.conditions[0].reason", "in body should match"),
        (
            [cond(reason="R" * 1025)],
            "status.conditions[0].reason",
            "Too long: may not be more than 1024 bytes",
        ),
        (
            [cond(message="m" * 32769)],
            "status.conditions[0].message",
            "Too long: may not be more than 32768 bytes",
        ),
        (
            [{k: v for k, v in cond().items() if k != "lastTransitionTime"}],
            "status.conditions[0].lastTransitionTime",
            "Required value",
        ),
        (
            [cond(lastTransitionTime="yesterday")],
            "status.conditions[0].lastTransitionTime",
            'Invalid value: "yesterday": status.conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"',
        ),
        (
            [cond(observedGeneration=-1)],
            "status.conditions[0].observedGeneration",
            "Invalid value: -1: status.conditions[0].observedGeneration in body should be greater than or equal to 0",
        ),
        ([cond(type="has space")], "status.conditions[0].type", "in body should match"),
        ([cond(status="Maybe")], "status.conditions[0].status", 'Unsupported value: "Maybe"'),
        (
            [cond(), cond(status="False")],
            "status.conditions[1]",
            'Duplicate value: map[string]interface {}{"type":"Active"}',
        ),
    ],
    ids=[
        "reason-pattern",
        "reason-empty",
        "reason-long",
        "message-long",
        "no-time",
        "bad-time",
        "generation",
        "type-pattern",
        "status-enum",
        "duplicate-type",
    ],
)
def test_kueue_conditions_follow_metav1_condition(
    twin: Twin, conditions: list, field: str, text: str
) -> None:
    err = refused(twin, conditions)
    assert err.causes[0].field == field and text in err.causes[0].message, err.message
    assert err.message.startswith('ClusterQueue.kueue.x-k8s.io "team" is invalid: ')


def test_the_autoscalers_conditions_too(twin: Twin) -> None:
    twin.create(
        {
            "apiVersion": "autoscaling.x-k8s.io/v1",
            "kind": "ProvisioningRequest",
            "metadata": {"name": "pr", "namespace": "default"},
            "spec": {
                "provisioningClassName": "queued-provisioning.gke.io",
                "podSets": [{"podTemplateRef": {"name": "t"}, "count": 1}],
            },
        }
    )
    with pytest.raises(Invalid) as exc:
        twin.patch(
            "provisioningrequest",
            "pr",
            {"status": {"conditions": [cond(type="Provisioned", reason="no way")]}},
            "default",
            subresource="status",
        )
    assert exc.value.causes[0].field == "status.conditions[0].reason"


def event(**kw: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
    } | kw


@pytest.mark.parametrize(
    ("fields", "field", "text"),
    [
        (
            {"lastTimestamp": "not-a-time"},
            "lastTimestamp",
            'Invalid value: "not-a-time": parsing time "not-a-time" as "2006-01-02T15:04:05Z07:00": cannot parse '
            '"not-a-time" as "2006"',
        ),
        ({"firstTimestamp": "2027-02-30T25:00:00Z"}, "firstTimestamp", "hour out of range"),
        ({"firstTimestamp": "2027-01-01 00:00:00"}, "firstTimestamp", 'cannot parse " 00:00:00" as "T"'),
        ({"eventTime": "2027-01-01T00:00:00.123456Zjunk"}, "eventTime", 'extra text: "junk"'),
    ],
    ids=["time-word", "time-range", "time-space", "micro-extra"],
)
def test_core_numbers_and_times_are_go_typed(twin: Twin, fields: dict, field: str, text: str) -> None:
    """A built-in kind's time that does not parse ends the decode (``metav1.Time.UnmarshalJSON``): the API
    server's 400 with ``time.Parse``'s words (issue 48), not a validation error naming the field."""
    with pytest.raises(BadRequest) as exc:
        twin.create(event(**fields))
    assert exc.value.message.startswith('Event in version "v1" cannot be handled as a Event: parsing time ')
    assert text.removeprefix(f'Invalid value: "{fields[field]}": ') in exc.value.message, exc.value.message


@pytest.mark.parametrize("count", [10**30, 2**31, -(2**31) - 1])
def test_a_count_past_int32_does_not_decode(twin: Twin, count: int) -> None:
    """A number past its Go field's type fails to decode: the API server's 400 (``transformDecodeError``),
    before validation."""
    with pytest.raises(BadRequest) as exc:
        twin.create(event(count=count))
    assert exc.value.message == (
        'Event in version "v1" cannot be handled as a Event: json: cannot unmarshal number '
        f"{count} into Go struct field Event.count of type int32"
    )


def test_a_good_event_still_goes_in(twin: Twin) -> None:
    twin.create(
        event(
            count=3,
            firstTimestamp=T0,
            lastTimestamp="2027-01-01T00:00:01+02:00",
            eventTime="2027-01-01T00:00:00.000001Z",
        )
    )
    twin.delete("event", "e", "default")


HOSTILE = "\x1b[2J\x1b[31mevil\u202e\u2066"


def test_a_hostile_value_comes_back_quoted_as_go_quotes_it(twin: Twin) -> None:
    with pytest.raises(ApiError) as exc:
        twin.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": HOSTILE, "namespace": "default"}}
        )
    msg = exc.value.message
    assert go_quote(HOSTILE) in msg and go_quote(HOSTILE) == '"\\x1b[2J\\x1b[31mevil\\u202e\\u2066"'
    assert not any(c in msg for c in "\x1b\u202e\u2066")
    err = refused(twin, [cond(reason="bad" + HOSTILE)])
    assert "\x1b" not in err.message and "\\x1b[2J" in err.message
    with pytest.raises(ApiError) as exc2:
        twin.create(event(lastTimestamp=HOSTILE))
    assert "\x1b" not in exc2.value.message and "\\u202e" in exc2.value.message


def test_flexq_simulate_never_prints_a_hostile_name_raw(tmp_path: Path) -> None:
    from tests.simulate.conftest import write_study

    study = write_study(
        tmp_path / "study",
        {"trace": "trace.csv", "until": "1h"},
        files={"trace.csv": "submit,queue,kind,podsets,run\n0,q,Job,main:1:cpu=1,30\n"},
    )
    extra = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": HOSTILE}}
    (study / "queues.yaml").write_text((study / "queues.yaml").read_text() + "---\n" + yaml.safe_dump(extra))
    r = subprocess.run(
        [sys.executable, "-m", "flexq.cli", "simulate", str(study), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert not any(c in out for c in "\x1b\u202e\u2066"), out
    assert "\\x1b[2J" in out or "\\u001b[2J" in out, out
