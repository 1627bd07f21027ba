"""The kubelet's ServiceAccount token volumes: what a pod that talks to the API server finds in its files.

Owns ``token_files(pod, sa, mint, ca)``, called by the kubelet before a pod starts on a twin that serves its API:

- every ``projected`` volume mounted by a container, from its sources: ``serviceAccountToken`` (a token bound
  to the pod, for its ``audience`` — the API server's by default — valid ``expirationSeconds``, default 3600,
  at least 600), ``configMap`` items of ``kube-root-ca.crt`` (the API server's CA) and ``downwardAPI``'s
  ``metadata.namespace``;
- the ``kube-api-access`` volume the ServiceAccount admission plugin gives a pod whose ServiceAccount and spec do
  not turn ``automountServiceAccountToken`` off: ``token`` (3607 s, the API audience), ``ca.crt`` and
  ``namespace`` at ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container (as if the volume were
  in the spec: the stored pod keeps the spec it was given).

``mint(audience, seconds)`` signs a token for the pod's ServiceAccount bound to the pod (the TokenRequest the
kubelet makes). Tokens are minted when the pod starts and not refreshed (a real kubelet refreshes at 80 % of
their life). Pure; must not import the store, the runtime or other domains.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flexq.semantics.satokens import PROJECTED_EXPIRATION

__all__ = ["SA_MOUNT", "token_files"]

SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _projected(
    vol: Mapping[str, Any], pod: Mapping[str, Any], mint: Callable[[str | None, int], str], ca: str | None
) -> dict[str, str]:
    out: dict[str, str] = {}
    for src in (vol.get("projected") or {}).get("sources") or ():
        tok = src.get("serviceAccountToken")
        if isinstance(tok, Mapping) and tok.get("path"):
            out[str(tok["path"])] = mint(
                tok.get("audience") or None, int(tok.get("expirationSeconds") or 3600)
            )
        cm = src.get("configMap")
        if isinstance(cm, Mapping) and cm.get("name") == "kube-root-ca.crt" and ca is not None:
            for item in cm.get("items") or [{"key": "ca.crt", "path": "ca.crt"}]:
                if item.get("key") == "ca.crt":
                    out[str(item.get("path") or "ca.crt")] = ca
        dapi = src.get("downwardAPI")
        if isinstance(dapi, Mapping):
            for item in dapi.get("items") or ():
                if (item.get("fieldRef") or {}).get("fieldPath") == "metadata.namespace" and item.get("path"):
                    out[str(item["path"])] = str(pod["metadata"].get("namespace") or "")
    return out


def token_files(
    pod: Mapping[str, Any],
    sa: Mapping[str, Any] | None,
    mint: Callable[[str | None, int], str],
    ca: str | None,
) -> dict[str, dict[str, str]]:
    """``{mountPath: {file: content}}`` of the pod's token volumes (``sa`` its ServiceAccount, None if missing)."""
    if sa is None:
        return {}
    spec = pod.get("spec") or {}
    containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    volumes = {v.get("name"): v for v in spec.get("volumes") or () if isinstance(v, Mapping)}
    files: dict[str, dict[str, str]] = {}
    minted: dict[tuple[str | None, int], str] = {}

    def once(audience: str | None, seconds: int) -> str:
        if (audience, seconds) not in minted:
            minted[(audience, seconds)] = mint(audience, seconds)
        return minted[(audience, seconds)]

    contents: dict[str, dict[str, str]] = {}
    for c in containers:
        for mount in c.get("volumeMounts") or ():
            vol = volumes.get(mount.get("name"))
            if vol is None or not vol.get("projected"):
                continue
            if mount["name"] not in contents:
                contents[mount["name"]] = _projected(vol, pod, once, ca)
            files.setdefault(mount["mountPath"], {}).update(contents[mount["name"]])
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = sa.get("automountServiceAccountToken")
    taken = any(m.get("mountPath") == SA_MOUNT for c in containers for m in c.get("volumeMounts") or ())
    if automount is not False and not taken:
        default = {
            "token": once(None, PROJECTED_EXPIRATION),
            "namespace": str(pod["metadata"].get("namespace")),
        }
        if ca is not None:
            default["ca.crt"] = ca
        files[SA_MOUNT] = default
    return files
