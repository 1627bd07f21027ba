"""A simulated twin writes only the Events its readers read (``engine.READ_EVENTS``): every result is the same as
with every Event written, the fallback (which reads the capacity Events) on, and far fewer writes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from flexq.runtime.controller import EventRecorder
from flexq.simulate import engine, load_study, run_one
from flexq.simulate.results import csv_text
from flexq.store import Store

ROOT = Path(__file__).resolve().parents[2]
READ_EVENTS = engine.READ_EVENTS


def _run(monkeypatch: pytest.MonkeyPatch, reasons: frozenset[str] | None) -> tuple[str, dict, int, set[str]]:
    monkeypatch.setattr(engine, "READ_EVENTS", reasons)
    study = load_study(ROOT / "examples" / "tutorial-week", variants=["tutorial"])
    study.variants[0] = dataclasses.replace(study.variants[0], settings={"fallback": True})
    study.until = 3 * 86400.0
    writes = [0]
    written: set[str] = set()
    setup = engine.Sim.setup

    def seen(ev: Any) -> None:
        writes[0] += 1
        written.add(ev.object.get("reason"))

    def observed(self: Any) -> None:
        setup(self)
        self.twin.store.watch(seen, ["Event"])

    monkeypatch.setattr(engine.Sim, "setup", observed)
    res = run_one(study, "tutorial", 0)
    rest = {k: v for k, v in dataclasses.asdict(res).items() if k not in ("jobs", "steps")}
    return csv_text([res]), rest, writes[0], written


def test_the_events_nobody_reads_change_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    jobs_all, rest_all, events_all, _ = _run(monkeypatch, None)
    jobs_read, rest_read, events_read, reasons = _run(monkeypatch, READ_EVENTS)
    assert jobs_read == jobs_all and rest_read == rest_all
    assert 0 < events_read < events_all / 4, (events_read, events_all)
    # every recorder of the twin honours the reasons read (Kueue's too: it records through the cluster's)
    assert reasons <= READ_EVENTS, sorted(reasons - READ_EVENTS)


def test_a_recorder_with_reasons_writes_only_those(twin: Any) -> None:
    store: Store = twin.store
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u"}, "kind": "Pod", "apiVersion": "v1"}
    rec = EventRecorder(store, "test", reasons=frozenset({"FailedScaleUp"}))
    rec.record(pod, "Normal", "Scheduled", "assigned")
    rec.record(pod, "Warning", "FailedScaleUp", "no capacity")
    rec.record(pod, "Warning", "FailedScaleUp", "no capacity")
    got = [
        (e["reason"], e["count"])
        for e in store.list("Event", "default")
        if e["source"]["component"] == "test"
    ]
    assert got == [("FailedScaleUp", 2)]
