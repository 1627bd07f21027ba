"""Mistakes of configuration, which come alone (a run whose jobs cannot start says nothing about capacity): pods
the kubelet cannot start (``FailedMount``, ``CreateContainerConfigError``, ``InvalidImageName``: what the
manifests lack, as objects to add) and the fallback on with no queue opted in. Must not import flexq.http."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from flexq.fallback.model import OPT_IN_LABEL
from flexq.simulate.causes.evidence import (
    option,
    plural,
    primary,
    to_hours,
)
from flexq.simulate.run_result import RunResult

CONFIG_CODES = ("FailedMount", "CreateContainerConfigError", "InvalidImageName", "FallbackNotOptedIn")


_MISSING = re.compile(r'(configmap|secret) "([^"]+)" not found')


_NO_KEY = re.compile(r"couldn't find key (\S+) in (ConfigMap|Secret) ([^/\s]+)/(\S+)")


def pods_cannot_start(run: RunResult, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Jobs whose pods the kubelet could not start (a missing ConfigMap or Secret, an env reference, an image
    reference): one cause per thing missing, with the kubelet's own words and the fix."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r.get("start_errors"):
            what = next(iter(sorted(r["start_errors"], key=lambda k: (-r["start_errors"][k], k))))
            groups[(what, r["namespace"])].append(r)
    out = []
    for (what, ns), hit in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        code, _, message = what.partition(": ")
        events = sum(sum(r["start_errors"].values()) for r in hit)
        lost = [r for r in hit if primary(r) == code]
        evictions = sum(r["evictions"] for r in hit)
        state = "ContainerCreating" if code == "FailedMount" else code
        options: list[dict[str, Any]] = []
        missing, no_key = _MISSING.search(message), _NO_KEY.search(message)
        if missing is not None:
            kind = "ConfigMap" if missing.group(1) == "configmap" else "Secret"
            name = missing.group(2)
            how = (
                f"kubectl create configmap {name} --from-file=... --dry-run=client -o yaml"
                if kind == "ConfigMap"
                else f"kubectl create secret generic {name} --from-file=... --dry-run=client -o yaml"
            )
            title = f'pods never started: {kind.lower()} "{name}" not found'
            options.append(
                option(
                    f"create {kind} {name} in namespace {ns}: add it to the study's manifests ({how} > "
                    f"{name}.yaml)",
                    {
                        "kind": "object",
                        "value": _stub(kind, name, ns, run.refs.get(f"{kind}/{ns}/{name}", [])),
                    },
                )
            )
        elif no_key is not None:
            kind, name = no_key.group(2), no_key.group(4)
            title = f"pods never started: {kind} {name} has no key {no_key.group(1)}"
            options.append(
                option(
                    f"add the key {no_key.group(1)} to {kind} {name} in namespace {ns} (the study's manifests)",
                    {
                        "kind": "object",
                        "value": _stub(
                            kind,
                            name,
                            ns,
                            sorted({no_key.group(1), *run.refs.get(f"{kind}/{ns}/{name}", [])}),
                        ),
                    },
                )
            )
        else:
            title = f"pods never started: {code}"
        out.append(
            {
                "code": code,
                "title": title,
                "config": True,
                "jobsLost": len(lost),
                "jobsDelayed": len(hit) - len(lost),
                "waitHours": to_hours(sum(r["wait_censored"] for r in hit if r["started"] is None)),
                "evidence": (
                    f"{plural(len(hit), 'job')}' pods stayed Pending ({state}): the kubelet reported {code}: "
                    f"{message} ({plural(events, 'Event')})"
                    + (
                        f"; Kueue evicted them {evictions} times in all while they waited"
                        if evictions
                        else ""
                    )
                    + "; no capacity change can start them"
                ),
                "fix": options[0]["change"]
                if options
                else (
                    "fix the image reference in the jobs' template (the kubelet cannot parse it)"
                    if code == "InvalidImageName"
                    else "fix the jobs' template"
                ),
                "options": options,
            }
        )
    return out


def _stub(kind: str, name: str, ns: str, keys: list[str]) -> dict[str, Any]:
    """The smallest object of ``kind`` that lets the kubelet start the pods (a what-if's stand-in for yours)."""
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": ns},
        "data": dict.fromkeys(keys, ""),
    }


def fallback_idle(
    run: RunResult, hit: list[dict[str, Any]], lost: list[dict[str, Any]], wait: float, flavor: str
) -> dict[str, Any]:
    """flexq's fallback is on in this variant but no LocalQueue the jobs use opted in: it never acted."""
    queues = sorted({f"{r['namespace']}/{r['queue']}" for r in hit})
    return {
        "code": "FallbackNotOptedIn",
        "title": "flexq's fallback is on but no LocalQueue opted in",
        "config": True,
        "jobsLost": len(lost),
        "jobsDelayed": len(hit) - len(lost),
        "waitHours": to_hours(wait),
        "evidence": (
            f"settings.fallback is on, yet it acted 0 times: it acts only on LocalQueues labelled {OPT_IN_LABEL}: "
            f'"true", and none of {", ".join(queues)} is; {plural(len(hit), "job")} waited {to_hours(wait)} h on '
            f"refused capacity on {flavor}"
        ),
        "fix": f'label the LocalQueue(s) {", ".join(queues)} with {OPT_IN_LABEL}: "true"',
        "options": [
            option(
                f'label the LocalQueue(s) {", ".join(queues)} with {OPT_IN_LABEL}: "true"',
                {"kind": "fallback", "value": True},
            )
        ],
    }
