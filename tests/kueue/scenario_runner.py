"""Runs declarative Kueue scenarios (YAML in → expected conditions/flavors/requests out).

A scenario file holds ``fixtures`` (named multi-document manifests) and ``scenarios``; each scenario
names the upstream Kueue test or source file it reproduces (``upstream``), lists fixtures and
manifests to start from (``given``), then ``steps``: ``apply`` (manifests), ``advance`` (seconds),
``status`` (merge into an object's status, e.g. a ProvisioningRequest's conditions, with
``lastTransitionTime`` filled in), ``spec`` (merge into spec), ``delete``, and ``expect`` blocks.
Objects are read back from a ``MinimalKueue`` (Kueue alone on a virtual clock).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from flexq.kueue.workload import parse_ts, ts
from flexq.semantics.conditions import find_condition
from flexq.testing.minimal_kueue import MinimalKueue

HERE = Path(__file__).parent / "scenarios"


def load(path: Path) -> tuple[dict, list[dict]]:
    doc = yaml.safe_load(path.read_text())
    return doc.get("fixtures") or {}, doc["scenarios"]


def all_scenarios() -> list[tuple[str, dict, dict]]:
    out = []
    for p in sorted(HERE.glob("*.yaml")):
        fixtures, scenarios = load(p)
        for s in scenarios:
            out.append((f"{p.stem}: {s['name']}", s, fixtures))
    return out


def _ns_name(ref: str) -> tuple[str, str]:
    return tuple(ref.split("/", 1)) if "/" in ref else ("default", ref)  # type: ignore[return-value]


class Runner:
    """Executes one scenario."""

    def __init__(self, scenario: dict, fixtures: dict) -> None:
        self.s, self.fixtures = scenario, fixtures
        self.k = MinimalKueue()

    def run(self) -> None:
        for g in self.s.get("given") or []:
            self.k.apply(self.fixtures.get(g, g))
            self.k.settle()
        for step in self.s.get("steps") or []:
            self.step(step)
        if "expect" in self.s:
            self.expect(self.s["expect"])

    def step(self, st: dict) -> None:
        if "refused" in st:  # the API (Kueue's webhooks) must refuse these manifests
            try:
                self.k.apply(st["refused"]["manifest"])
            except Exception as exc:  # any API error; its text is checked
                assert st["refused"]["error"] in str(exc), (str(exc), st["refused"]["error"])
            else:
                raise AssertionError("the manifest was accepted")
        if "apply" in st:
            self.k.apply(self.fixtures.get(st["apply"], st["apply"]))
        if "spec" in st or "status" in st or "delete" in st or "labels" in st:
            ref = st.get("object") or {}
            kind, name, ns = ref["kind"], ref["name"], ref.get("namespace")
            if kind in ("Workload", "Job", "RayJob", "LocalQueue", "ProvisioningRequest") and ns is None:
                ns = "default"
            name = self.resolve_workload(name, ns) if kind == "Workload" else self.prefix(name)
            if "delete" in st:
                self.k.store.delete(kind, name, ns)
            else:
                obj = self.k.get(kind, name, ns)
                if "spec" in st:
                    obj.setdefault("spec", {}).update(st["spec"])
                    obj = self.k.store.update(obj)
                if "labels" in st:
                    obj["metadata"].setdefault("labels", {}).update(st["labels"])
                    obj = self.k.store.update(obj)
                if "status" in st:
                    status = dict(st["status"])
                    for c in status.get("conditions") or []:
                        c.setdefault("lastTransitionTime", ts(self.k.now()))
                        c.setdefault("reason", c["type"])
                        c.setdefault("message", "")
                    obj.setdefault("status", {}).update(status)
                    self.k.store.update_status(obj)
        self.k.settle()
        if "advance" in st:
            self.k.advance(float(st["advance"]))
        if "expect" in st:
            self.expect(st["expect"])

    def resolve_workload(self, ref: str, ns: str | None) -> str:
        """A workload name, or ``<Kind>:<job>`` for the newest unfinished workload of that job."""
        if ":" not in ref:
            return ref
        kind, job = ref.split(":", 1)
        obj = self.k.get(kind, job, ns or "default")
        owned = [
            w
            for w in self.k.list("Workload", ns or "default")
            if any(r.get("uid") == obj["metadata"]["uid"] for r in w["metadata"].get("ownerReferences") or [])
        ]
        assert owned, f"no workload for {ref}"
        live = [w for w in owned if (find_condition(w, "Finished") or {}).get("status") != "True"] or owned
        return sorted(live, key=lambda w: (w["metadata"]["creationTimestamp"], w["metadata"]["name"]))[-1][
            "metadata"
        ]["name"]

    # expectations ------------------------------------------------------------------------------
    def expect(self, exp: dict) -> None:
        for ref, want in (exp.get("workloads") or {}).items():
            ns, name = _ns_name(ref)
            wl = self.k.get("Workload", self.resolve_workload(name, ns), ns)
            self.check_workload(ref, wl, want)
        if "workload_count" in exp:
            assert len(self.k.list("Workload")) == exp["workload_count"], [
                w["metadata"]["name"] for w in self.k.list("Workload")
            ]
        if "requests" in exp:
            got = {p["metadata"]["name"]: p for p in self.k.list("ProvisioningRequest")}
            for name, want in (exp["requests"] or {}).items():
                if name.endswith("*"):
                    prefix = self.prefix(name[:-1])
                    assert any(n.startswith(prefix) for n in got) is (want is not None), (name, sorted(got))
                    continue
                name = self.prefix(name)
                if want is None:
                    assert name not in got, (name, sorted(got))
                    continue
                assert name in got, (name, sorted(got))
                self.check_request(got[name], want)
        if "request_count" in exp:
            assert len(self.k.list("ProvisioningRequest")) == exp["request_count"], [
                p["metadata"]["name"] for p in self.k.list("ProvisioningRequest")
            ]
        for name, want in (exp.get("clusterQueues") or {}).items():
            self.check_queue(self.k.get("ClusterQueue", name), want)
        for ref, want in (exp.get("localQueues") or {}).items():
            ns, name = _ns_name(ref)
            self.check_queue(self.k.get("LocalQueue", name, ns), want)
        for ref, want in (exp.get("objects") or {}).items():
            kind, rest = ref.split("/", 1)
            ns, name = (
                _ns_name(rest)
                if kind not in ("AdmissionCheck", "ClusterQueue", "ResourceFlavor")
                else (None, rest)
            )
            obj = self.k.store.try_get(kind, name, ns)
            if want is None:
                assert obj is None, ref
                continue
            assert obj is not None, ref
            for path, v in want.items():
                assert dig(obj, path) == v, (ref, path, dig(obj, path), v)
        for ev in exp.get("events") or []:
            kind, name, reason, text = (ev + [""])[:4]
            if kind == "Workload":
                name = self.resolve_workload(name, "default")
            evs = [
                e
                for e in self.k.list("Event")
                if e["involvedObject"]["kind"] == kind
                and e["involvedObject"]["name"] == self.prefix(name)
                and e["reason"] == reason
            ]
            assert any(text in e["message"] for e in evs), (
                ev,
                [
                    (e["reason"], e["message"])
                    for e in self.k.list("Event")
                    if e["involvedObject"]["name"] == name
                ],
            )

    def prefix(self, name: str) -> str:
        """``{RayJob:job}`` in a name is replaced by that job's workload name."""
        if name.startswith("{") and "}" in name:
            ref, rest = name[1:].split("}", 1)
            return self.resolve_workload(ref, "default") + rest
        return name

    def check_workload(self, ref: str, wl: dict, want: dict) -> None:
        st = wl.get("status") or {}
        for key, v in want.items():
            if key[0].isupper():  # a condition: [status, reason, message-substring]
                c = find_condition(wl, key)
                if v is None:
                    assert c is None, (ref, key, c)
                    continue
                assert c is not None, (ref, key, st.get("conditions"))
                v = v if isinstance(v, list) else [v]
                assert c["status"] == str(v[0]), (ref, key, c)
                if len(v) > 1:
                    assert c["reason"] == v[1], (ref, key, c)
                if len(v) > 2:
                    assert v[2] in c["message"], (ref, key, c["message"], v[2])
            elif key == "flavors":
                psas = {p["name"]: p for p in (st.get("admission") or {}).get("podSetAssignments") or []}
                assert set(psas) >= set(v), (ref, psas)
                for ps, flv in v.items():
                    got = set(psas[ps]["flavors"].values())
                    assert got == ({flv} if isinstance(flv, str) else set(flv)), (
                        ref,
                        ps,
                        psas[ps]["flavors"],
                    )
            elif key == "admission":
                assert (st.get("admission") is not None) == bool(v), (ref, st.get("admission"))
            elif key == "resourceUsage":
                psas = {p["name"]: p for p in (st.get("admission") or {}).get("podSetAssignments") or []}
                for ps, usage in v.items():
                    assert psas[ps]["resourceUsage"] == usage, (ref, psas[ps])
            elif key == "counts":
                psas = {p["name"]: p for p in (st.get("admission") or {}).get("podSetAssignments") or []}
                assert {k: psas[k]["count"] for k in v} == v, (ref, psas)
            elif key == "checks":
                got = {c["name"]: c for c in st.get("admissionChecks") or []}
                assert set(got) == set(v), (ref, got)
                for name, w in v.items():
                    w = w if isinstance(w, list) else [w]
                    assert got[name]["state"] == w[0], (ref, got[name])
                    if len(w) > 1:
                        assert w[1] in got[name].get("message", ""), (ref, got[name])
            elif key == "check_details":
                got = {c["name"]: c for c in st.get("admissionChecks") or []}
                for name, fields in v.items():
                    for f, fv in fields.items():
                        assert dig(got[name], f) == fv, (ref, name, f, got[name])
            elif key == "requeueState":
                rs = st.get("requeueState") or {}
                for f, fv in (v or {}).items():
                    if f == "requeueAtIn":
                        assert rs.get("requeueAt") and parse_ts(rs["requeueAt"]) - self.k.now() == fv, (
                            ref,
                            rs,
                            self.k.now(),
                        )
                    else:
                        assert rs.get(f) == fv, (ref, rs)
                if v is None:
                    assert not st.get("requeueState"), (ref, st.get("requeueState"))
            elif key == "active":
                assert wl["spec"].get("active", True) is v, (ref, wl["spec"].get("active"))
            elif key == "priority":
                assert wl["spec"].get("priority") == v, (ref, wl["spec"])
            else:
                assert dig(wl, key) == v, (ref, key, dig(wl, key), v)

    def check_request(self, pr: dict, want: dict) -> None:
        for key, v in want.items():
            if key == "podSets":
                got = []
                for ps in pr["spec"]["podSets"]:
                    tpl = self.k.get("PodTemplate", ps["podTemplateRef"]["name"], pr["metadata"]["namespace"])
                    got.append([ps["podTemplateRef"]["name"], ps["count"], tpl])
                assert [g[1] for g in got] == [w[1] for w in v], (pr["spec"], v)
                for (tname, _c, _t), w in zip(got, v, strict=True):
                    assert tname.endswith("-" + w[0]), (tname, w)
            elif key == "templateNodeSelector":
                ps = pr["spec"]["podSets"][0]
                tpl = self.k.get("PodTemplate", ps["podTemplateRef"]["name"], pr["metadata"]["namespace"])
                assert tpl["template"]["spec"].get("nodeSelector") == v, tpl["template"]["spec"].get(
                    "nodeSelector"
                )
            elif key == "class":
                assert pr["spec"]["provisioningClassName"] == v
            elif key == "parameters":
                assert pr["spec"].get("parameters") == v, pr["spec"].get("parameters")
            else:
                assert dig(pr, key) == v, (key, dig(pr, key), v)

    def check_queue(self, q: dict, want: dict) -> None:
        st = q.get("status") or {}
        for key, v in want.items():
            if key == "Active":
                c = find_condition(q, "Active")
                v = v if isinstance(v, list) else [v]
                assert c is not None and c["status"] == str(v[0]), (q["metadata"]["name"], c)
                if len(v) > 1:
                    assert c["reason"] == v[1], c
                if len(v) > 2:
                    assert v[2] in c["message"], c
            elif key in ("usage", "reservation"):
                lst = st.get("flavorsUsage" if key == "usage" else "flavorsReservation") or []
                got = {f["name"]: {r["name"]: r["total"] for r in f["resources"]} for f in lst}
                for flv, res in v.items():
                    for r, total in res.items():
                        assert got[flv][r] == str(total), (key, got)
            elif key == "borrowed":
                got = {
                    f["name"]: {r["name"]: r.get("borrowed") for r in f["resources"]}
                    for f in st.get("flavorsReservation") or []
                }
                for flv, res in v.items():
                    for r, b in res.items():
                        assert got[flv][r] == str(b), got
            else:
                assert st.get(key) == v, (q["metadata"]["name"], key, st.get(key), v)


def dig(obj: Any, path: str) -> Any:
    """``a.b.0.c`` lookup (None when missing)."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return None
        elif isinstance(cur, dict):
            cur = cur.get(part)
        else:
            return None
    return cur
