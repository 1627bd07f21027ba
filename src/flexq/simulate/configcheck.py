"""Preflight: the mistakes of configuration a run would only show as lost jobs, found before anything runs.

A week simulated on a study whose RayJob mounts a ConfigMap no manifest provides "loses" every job, and the
capacity figures of that run mean nothing. So before the first run, for every variant, on the objects as the
API holds them once the manifests are applied (``flexq.simulate.engine`` builds each variant's twin):

- a job template that mounts a ConfigMap, Secret or PersistentVolumeClaim (or takes an env value from a
  ConfigMap or Secret) that no manifest provides (the kubelet would keep the pods in ``ContainerCreating``
  with ``FailedMount``, or ``CreateContainerConfigError``); an image reference the kubelet cannot parse;
- ``${VAR}`` placeholders left in a manifest or a template (``envsubst`` was not run): the hint says to run
  it, or to set the values in the study's ``env``; shell lines (``command``, ``args``, a RayJob's
  ``entrypoint``, ``env`` values, ConfigMap data) keep their ``${HOME}``;
- flexq's fallback on (``settings: {fallback: ...}``) while no LocalQueue the traffic uses is labelled
  ``fallback.flexq.dev/enabled: "true"``: it would never act (refused; a warning when only some are);
- a queue name no LocalQueue has, a priority class that does not exist (the engine's own checks).

Each finding names the file, the document or template and the field. ``PreflightError`` carries them all;
its first line is the first finding. Must not import flexq.http.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from flexq.errors import ApiError, InputError
from flexq.fallback.model import OPT_IN_LABEL
from flexq.semantics.pods import image_reference_error
from flexq.simulate.inputs import parse_yaml_all

__all__ = [
    "PreflightError",
    "pod_refs",
    "placeholder_findings",
    "reference_findings",
    "fallback_findings",
]

_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# where a ${VAR} is a shell's or a script's, not a placeholder: left as written
_SHELL_FIELDS = frozenset({"command", "args", "entrypoint", "runtimeEnvYAML", "env", "lifecycle"})
_DATA_FIELDS = frozenset({"data", "stringData", "binaryData"})
MAX_FINDINGS = 20


class PreflightError(InputError):
    """Every finding of the preflight (``findings``); the message is the first, ``str()`` all of them."""

    def __init__(self, findings: list[InputError]) -> None:
        first = findings[0]
        super().__init__(first.message, source=first.source, line=first.line, field=first.field)
        self.findings = findings

    def __str__(self) -> str:
        lines = [InputError.__str__(f) for f in self.findings[:MAX_FINDINGS]]
        if len(self.findings) > MAX_FINDINGS:
            lines.append(f"... and {len(self.findings) - MAX_FINDINGS} more")
        head = (
            f"{len(self.findings)} mistakes of configuration, found before running anything:\n"
            if len(self.findings) > 1
            else ""
        )
        return head + "\n".join(lines)


def _strings(obj: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(field path, text) of every string in ``obj`` except those of shell lines and scripts."""
    if isinstance(obj, str):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k in _SHELL_FIELDS:
                continue
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _strings(v, f"{path}[{i}]")


def _unexpanded(obj: Any) -> list[tuple[str, str]]:
    """(field, first placeholder) of each string still holding a ``${VAR}``."""
    out = []
    for path, text in _strings(obj):
        m = _BRACED.search(text)
        if m is not None:
            out.append((path, m.group(0)))
    return out


_HINT = (
    "run envsubst on the file first (envsubst < in.yaml > out.yaml, as the tutorial does), or set it in the "
    "study: env: {{NAME}: ...}"
)


def placeholder_findings(manifests: list[Any], env: dict[str, str]) -> list[InputError]:
    """``${VAR}``s left in the manifests (after the study's ``env``): each names the file, the document and
    the field."""
    out = []
    for m in manifests:
        try:
            docs = parse_yaml_all(m.text, m.source)
        except InputError:
            continue  # said by the loader
        for i, doc in enumerate(docs):
            if not isinstance(doc, dict):
                continue
            kind = doc.get("kind")
            body = {
                k: v for k, v in doc.items() if not (kind in ("ConfigMap", "Secret") and k in _DATA_FIELDS)
            }
            name = (
                (doc.get("metadata") or {}).get("name", "?") if isinstance(doc.get("metadata"), dict) else "?"
            )
            for path, ph in _unexpanded(body):
                out.append(
                    InputError(
                        f"{ph} is not expanded in {kind}/{name} (env has no {ph[2:-1]}): "
                        + _HINT.replace("{NAME}", ph[2:-1]),
                        source=m.source,
                        field=f"document {i + 1}: {path}",
                    )
                )
                break  # one per document
    return out


def _pod_templates(obj: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(path, pod template) of a Job or RayJob."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Job":
        t = spec.get("template")
        return [("spec.template", t)] if isinstance(t, dict) else []
    if obj.get("kind") != "RayJob":
        return []
    rc = spec.get("rayClusterSpec") or {}
    out = []
    head = (rc.get("headGroupSpec") or {}).get("template")
    if isinstance(head, dict):
        out.append(("spec.rayClusterSpec.headGroupSpec.template", head))
    for i, g in enumerate(rc.get("workerGroupSpecs") or []):
        if isinstance(g, dict) and isinstance(g.get("template"), dict):
            out.append((f"spec.rayClusterSpec.workerGroupSpecs[{i}].template", g["template"]))
    return out


def _refs(tspec: dict[str, Any]) -> Iterator[tuple[str, str, str, str | None]]:
    """(field, kind, name, key) of every ConfigMap, Secret and PersistentVolumeClaim a pod spec needs."""
    for i, vol in enumerate(tspec.get("volumes") or []):
        if not isinstance(vol, dict):
            continue
        base = f"spec.volumes[{i}]"
        cm, sec, pvc = vol.get("configMap"), vol.get("secret"), vol.get("persistentVolumeClaim")
        if isinstance(cm, dict) and not cm.get("optional"):
            yield f"{base}.configMap.name", "ConfigMap", str(cm.get("name") or ""), None
        if isinstance(sec, dict) and not sec.get("optional"):
            yield f"{base}.secret.secretName", "Secret", str(sec.get("secretName") or ""), None
        if isinstance(pvc, dict):
            yield (
                f"{base}.persistentVolumeClaim.claimName",
                "PersistentVolumeClaim",
                str(pvc.get("claimName") or ""),
                None,
            )
        for j, src in enumerate((vol.get("projected") or {}).get("sources") or []):
            for kind, key in (("ConfigMap", "configMap"), ("Secret", "secret")):
                ref = (src or {}).get(key)
                if isinstance(ref, dict) and not ref.get("optional"):
                    yield f"{base}.projected.sources[{j}].{key}.name", kind, str(ref.get("name") or ""), None
    for group in ("initContainers", "containers"):
        for ci, c in enumerate(tspec.get(group) or []):
            if not isinstance(c, dict):
                continue
            for k, ref in enumerate(c.get("envFrom") or []):
                for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                    r = (ref or {}).get(key)
                    if isinstance(r, dict) and not r.get("optional"):
                        yield (
                            f"spec.{group}[{ci}].envFrom[{k}].{key}.name",
                            kind,
                            str(r.get("name") or ""),
                            None,
                        )
            for k, env in enumerate(c.get("env") or []):
                vf = (env or {}).get("valueFrom") or {}
                for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                    r = vf.get(key)
                    if isinstance(r, dict) and not r.get("optional"):
                        yield (
                            f"spec.{group}[{ci}].env[{k}].valueFrom.{key}.name",
                            kind,
                            str(r.get("name") or ""),
                            str(r.get("key") or ""),
                        )


def pod_refs(obj: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(kind, name, key) of every ConfigMap and Secret the pod templates of a Job or RayJob need."""
    return [
        (kind, name, key)
        for _path, tmpl in _pod_templates(obj)
        for _fld, kind, name, key in _refs(tmpl.get("spec") or {})
        if kind != "PersistentVolumeClaim"
    ]


def _howto(kind: str, name: str, ns: str) -> str:
    if kind == "ConfigMap":
        return (
            f"add ConfigMap {name} (namespace {ns}) to the study's manifests, e.g. kubectl create configmap "
            f"{name} -n {ns} --from-file=FILE --dry-run=client -o yaml > {name}.yaml"
        )
    if kind == "Secret":
        return (
            f"add Secret {name} (namespace {ns}) to the study's manifests, e.g. kubectl create secret generic "
            f"{name} -n {ns} --from-file=FILE --dry-run=client -o yaml > {name}.yaml"
        )
    return (
        "the twin does not serve PersistentVolumeClaims, so no manifest can provide it: drop the volume from the "
        "template for the study (storage does not change how the jobs queue)"
    )


def reference_findings(twin: Any, jobs: list[Any], build: Any) -> list[InputError]:
    """For one job of each (template, namespace): the objects its pods need that the applied manifests do not
    provide, the image references the kubelet cannot parse, the ``${VAR}``s left in it."""
    out: list[InputError] = []
    seen: set[tuple[str, str, str]] = set()
    for job in jobs:
        key = (job.kind, job.template_source or job.kind, job.namespace)
        if key in seen or job.kind == "Workload":
            continue
        seen.add(key)
        try:
            obj = build(job)
        except InputError as exc:
            out.append(exc)
            continue
        src = job.template_source or job.source
        for path, ph in _unexpanded(obj):
            out.append(
                InputError(
                    f"{ph} is not expanded in the {job.kind} template (the jobs' own are NAME, JOB_ID, QUEUE and "
                    f"NAMESPACE): " + _HINT.replace("{NAME}", ph[2:-1]),
                    source=src,
                    field=path,
                )
            )
            break
        missing: dict[tuple[str, str], list[str]] = {}
        for tpath, tmpl in _pod_templates(obj):
            tspec = tmpl.get("spec") or {}
            for fld, kind, name, k in _refs(tspec):
                where = f"{tpath}.{fld}"
                found = None
                if kind != "PersistentVolumeClaim":
                    try:
                        found = twin.store.try_get(kind, name, job.namespace)
                    except ApiError:
                        found = None
                if found is None:
                    missing.setdefault((kind, name), []).append(where)
                elif (
                    k is not None
                    and k not in (found.get("data") or {})
                    and k not in (found.get("binaryData") or {})
                ):
                    out.append(
                        InputError(
                            f"{kind} {name!r} has no key {k!r}: the kubelet would say CreateContainerConfigError",
                            source=src,
                            field=where.replace(".name", ".key"),
                        )
                    )
            for group in ("initContainers", "containers"):
                for ci, c in enumerate(tspec.get(group) or []):
                    why = image_reference_error(str((c or {}).get("image") or ""))
                    if why is not None:
                        out.append(
                            InputError(
                                f"the kubelet cannot pull this image ({why}): InvalidImageName",
                                source=src,
                                field=f"{tpath}.spec.{group}[{ci}].image",
                            )
                        )
        for (kind, name), wheres in missing.items():
            more = f" and {len(wheres) - 1} more" if len(wheres) > 1 else ""
            out.append(
                InputError(
                    f"{kind} {name!r} in namespace {job.namespace!r}: no manifest provides it, so the kubelet "
                    f"would never start these pods; {_howto(kind, name, job.namespace)}",
                    source=src,
                    field=wheres[0] + more,
                )
            )
    return out


def fallback_findings(
    setting: Any, local_queues: dict[str, bool], used: set[str], variant: str, source: str
) -> tuple[list[InputError], list[str]]:
    """(refusals, warnings) for flexq's fallback: on, but no LocalQueue the traffic uses opted in (refused: it
    would never act), or only some (a warning naming the others)."""
    if not setting or (isinstance(setting, dict) and setting.get("all_queues")):
        return [], []
    off = sorted(q for q in used if not local_queues.get(q))
    if not off:
        return [], []
    label = f'{OPT_IN_LABEL}: "true"'
    if len(off) == len(used):
        return [
            InputError(
                f"flexq's fallback is on, but no LocalQueue the jobs use ({', '.join(off)}) "
                f"is labelled {label}, so it would never act: add the label to those LocalQueues' metadata.labels "
                "in the manifests, or set fallback: {all_queues: true}",
                source=source,
                field="settings.fallback",
            )
        ], []
    return [], [
        f"{source} (settings.fallback): flexq's fallback is on in variant {variant!r}, but the LocalQueue(s) "
        f"{', '.join(off)} are not labelled {label}: it will not act on their jobs"
    ]
