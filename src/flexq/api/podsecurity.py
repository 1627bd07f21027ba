"""Pod Security admission (the built-in ``PodSecurity`` plugin): a namespace labelled
``pod-security.kubernetes.io/enforce=baseline|restricted`` refuses the pods that break that level of the Pod
Security Standards, with kube-apiserver's message::

    pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false
    (container "c" must set securityContext.allowPrivilegeEscalation=false), ...

Checks (``k8s.io/pod-security-admission/policy``), reported in the order of their IDs as the plugin reports them:
baseline — host namespaces, privileged containers, capabilities beyond the default set, hostPath volumes,
host ports, an ``Unconfined`` seccomp profile, an ``Unmasked`` /proc, sysctls outside the safe set; restricted
adds — volume types other than configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim,
projected and secret, ``allowPrivilegeEscalation`` not false, ``runAsNonRoot`` not true, ``runAsUser: 0``, a
seccomp profile other than ``RuntimeDefault``/``Localhost``, capabilities not dropping ``ALL`` or adding
other than ``NET_BIND_SERVICE`` (the restricted seccomp and capability checks replace the baseline ones).

Only pods are refused, on create (a pod's spec does not change afterwards in a way these checks read), and
whoever creates them: a Job's or KubeRay's pods in such a namespace are refused as upstream's are (the
controllers record ``FailedCreate``). Not modelled: the ``warn`` and ``audit`` modes, the warnings upstream
gives for workload objects (Deployments, Jobs) whose template would be refused, and the SELinux, AppArmor and
Windows checks (the twin runs Linux pods without either). ``enforce-version`` only names the version in the
message: every version is judged by the latest standard. Pure; no flexq imports but ``flexq.errors``.
"""

from __future__ import annotations

from typing import Any

from flexq.errors import Cause, Forbidden, Invalid

ENFORCE = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
LEVELS = ("privileged", "baseline", "restricted")

_BASELINE_CAPS = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
_SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
_RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)


def _quote(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _plural(one: str, many: str, n: int) -> str:
    return one if n == 1 else many


def _containers(spec: dict) -> list[dict]:
    out = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        out += [c for c in spec.get(key) or () if isinstance(c, dict)]
    return out


def _sc(obj: dict) -> dict:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else {}


def _who(names: list[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_quote(names)}"


# -- the checks: (id, level, replaces) -> (reason, detail) or None ------------------------------------------
def _allow_privilege_escalation(spec: dict) -> tuple[str, str] | None:
    bad = [
        c.get("name", "") for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False
    ]
    if not bad:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_who(bad)} must set securityContext.allowPrivilegeEscalation=false",
    )


def _added(c: dict) -> list[str]:
    caps = _sc(c).get("capabilities")
    return [str(a) for a in (caps.get("add") or ())] if isinstance(caps, dict) else []


def _capabilities_baseline(spec: dict) -> tuple[str, str] | None:
    bad, caps = [], []
    for c in _containers(spec):
        extra = [a for a in _added(c) if a not in _BASELINE_CAPS]
        if extra:
            bad.append(c.get("name", ""))
            caps += [a for a in extra if a not in caps]
    if not bad:
        return None
    return (
        "non-default capabilities",
        f"{_who(bad)} must not include {_quote(caps)} in securityContext.capabilities.add",
    )


def _capabilities_restricted(spec: dict) -> tuple[str, str] | None:
    no_drop, adding, caps = [], [], []
    for c in _containers(spec):
        sc_caps = _sc(c).get("capabilities")
        drop = (sc_caps.get("drop") or ()) if isinstance(sc_caps, dict) else ()
        if "ALL" not in drop:
            no_drop.append(c.get("name", ""))
        extra = [a for a in _added(c) if a != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c.get("name", ""))
            caps += [a for a in extra if a not in caps]
    details = []
    if no_drop:
        details.append(f'{_who(no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_who(adding)} must not include {_quote(caps)} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def _host_namespaces(spec: dict) -> tuple[str, str] | None:
    on = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return ("host namespaces", ", ".join(on)) if on else None


def _volumes(spec: dict) -> list[tuple[str, str]]:
    """(name, type) of each volume: its one source key besides ``name``."""
    out = []
    for v in spec.get("volumes") or ():
        if isinstance(v, dict):
            kinds = [k for k in v if k != "name"]
            out.append((str(v.get("name", "")), kinds[0] if kinds else ""))
    return out


def _host_path_volumes(spec: dict) -> tuple[str, str] | None:
    bad = [n for n, t in _volumes(spec) if t == "hostPath"]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)}") if bad else None


def _host_ports(spec: dict) -> tuple[str, str] | None:
    bad, ports = [], []
    for c in _containers(spec):
        used = [str(p["hostPort"]) for p in c.get("ports") or () if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(c.get("name", ""))
            ports += [p for p in used if p not in ports]
    if not bad:
        return None
    verb = _plural("uses", "use", len(bad))
    return "hostPort", f"{_who(bad)} {verb} {_plural('hostPort', 'hostPorts', len(ports))} {', '.join(ports)}"


def _privileged(spec: dict) -> tuple[str, str] | None:
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("privileged") is True]
    return ("privileged", f"{_who(bad)} must not set securityContext.privileged=true") if bad else None


def _proc_mount(spec: dict) -> tuple[str, str] | None:
    bad, values = [], []
    for c in _containers(spec):
        mount = _sc(c).get("procMount")
        if mount not in (None, "Default"):
            bad.append(c.get("name", ""))
            if mount not in values:
                values.append(str(mount))
    if not bad:
        return None
    return "procMount", f"{_who(bad)} must not set securityContext.procMount to {_quote(values)}"


def _restricted_volumes(spec: dict) -> tuple[str, str] | None:
    bad = [(n, t) for n, t in _volumes(spec) if t not in _RESTRICTED_VOLUMES]
    if not bad:
        return None
    names, types = [n for n, _ in bad], list(dict.fromkeys(t for _, t in bad))
    return "restricted volume types", (
        f"{_plural('volume', 'volumes', len(names))} {_quote(names)} {_plural('uses', 'use', len(names))} "
        f"{_plural('restricted volume type', 'restricted volume types', len(types))} {_quote(types)}"
    )


def _run_as_non_root(spec: dict) -> tuple[str, str] | None:
    pod = _sc(spec).get("runAsNonRoot")
    details = []
    if pod is False:
        details.append("pod must not set securityContext.runAsNonRoot=false")
    explicit, implicit = [], []
    for c in _containers(spec):
        value = _sc(c).get("runAsNonRoot")
        if value is False:
            explicit.append(c.get("name", ""))
        elif value is None and pod is not True:
            implicit.append(c.get("name", ""))
    if explicit:
        details.append(f"{_who(explicit)} must not set securityContext.runAsNonRoot=false")
    if pod is None and implicit:
        details.append(f"pod or {_who(implicit)} must set securityContext.runAsNonRoot=true")
    return ("runAsNonRoot != true", "; ".join(details)) if details else None


def _run_as_user(spec: dict) -> tuple[str, str] | None:
    details = ["pod must not set runAsUser=0"] if _sc(spec).get("runAsUser") == 0 else []
    bad = [c.get("name", "") for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if bad:
        details.append(f"{_who(bad)} must not set runAsUser=0")
    return ("runAsUser=0", "; ".join(details)) if details else None


def _seccomp_type(obj: dict) -> Any:
    profile = _sc(obj).get("seccompProfile")
    return profile.get("type") if isinstance(profile, dict) else None


def _seccomp_baseline(spec: dict) -> tuple[str, str] | None:
    details = []
    if _seccomp_type(spec) == "Unconfined":
        details.append('pod must not set securityContext.seccompProfile.type to "Unconfined"')
    bad = [c.get("name", "") for c in _containers(spec) if _seccomp_type(c) == "Unconfined"]
    if bad:
        details.append(f'{_who(bad)} must not set securityContext.seccompProfile.type to "Unconfined"')
    return ("seccompProfile", "; ".join(details)) if details else None


def _seccomp_restricted(spec: dict) -> tuple[str, str] | None:
    ok = ("RuntimeDefault", "Localhost")
    pod = _seccomp_type(spec)
    details = []
    if pod is not None and pod not in ok:
        details.append(f'pod must not set securityContext.seccompProfile.type to "{pod}"')
    explicit, values, implicit = [], [], []
    for c in _containers(spec):
        value = _seccomp_type(c)
        if value is None:
            if pod is None:
                implicit.append(c.get("name", ""))
        elif value not in ok:
            explicit.append(c.get("name", ""))
            if value not in values:
                values.append(str(value))
    if explicit:
        details.append(
            f"{_who(explicit)} must not set securityContext.seccompProfile.type to {_quote(values)}"
        )
    if implicit:
        details.append(
            f'pod or {_who(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"'
        )
    return ("seccompProfile", "; ".join(details)) if details else None


def _sysctls(spec: dict) -> tuple[str, str] | None:
    bad = [
        str(s.get("name", ""))
        for s in _sc(spec).get("sysctls") or ()
        if isinstance(s, dict) and s.get("name") not in _SAFE_SYSCTLS
    ]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


# (check id, the lowest level it applies at, the check id it replaces at restricted), in the order of the ids
_CHECKS = (
    ("allowPrivilegeEscalation", "restricted", _allow_privilege_escalation, ""),
    ("capabilities_baseline", "baseline", _capabilities_baseline, ""),
    ("capabilities_restricted", "restricted", _capabilities_restricted, "capabilities_baseline"),
    ("hostNamespaces", "baseline", _host_namespaces, ""),
    ("hostPathVolumes", "baseline", _host_path_volumes, ""),
    ("hostPorts", "baseline", _host_ports, ""),
    ("privileged", "baseline", _privileged, ""),
    ("procMount", "baseline", _proc_mount, ""),
    ("restrictedVolumes", "restricted", _restricted_volumes, ""),
    ("runAsNonRoot", "restricted", _run_as_non_root, ""),
    ("runAsUser", "restricted", _run_as_user, ""),
    ("seccompProfile_baseline", "baseline", _seccomp_baseline, ""),
    ("seccompProfile_restricted", "restricted", _seccomp_restricted, "seccompProfile_baseline"),
    ("sysctls", "baseline", _sysctls, ""),
)


def _failing(level: str, spec: dict) -> list[tuple[str, tuple[str, str]]]:
    """(check id, (reason, detail)) of each check of ``level`` the pod spec fails, in the plugin's order."""
    if level not in ("baseline", "restricted"):
        return []
    active = [c for c in _CHECKS if c[1] == "baseline" or level == "restricted"]
    replaced = {c[3] for c in active if c[3]}
    out = []
    for check_id, _, check, _ in active:
        if check_id not in replaced:
            found = check(spec)
            if found is not None:
                out.append((check_id, found))
    return out


def violations(level: str, spec: dict) -> list[str]:
    """``reason (detail)`` for each check of ``level`` the pod spec fails, in the plugin's order."""
    return [f"{reason} ({detail})" if detail else reason for _, (reason, detail) in _failing(level, spec)]


MODE_LABELS = (ENFORCE, "pod-security.kubernetes.io/audit", "pod-security.kubernetes.io/warn")


def parse_level(value: str) -> tuple[str, str]:
    """``api.ParseLevel``: (the level, "" or the error). A value that is not a level is evaluated as the most
    restrictive one, ``restricted`` (a typo must not open a namespace: ``enforce=Restricted`` is not privileged)."""
    if value in LEVELS:
        return value, ""
    return "restricted", "must be one of " + ", ".join(LEVELS)


def label_errors(labels: dict) -> list[tuple[str, str, str]]:
    """``PolicyToEvaluate``'s errors: (label, value, why) for each mode label whose level does not parse."""
    out = []
    for key in MODE_LABELS:
        if key in labels:
            _, why = parse_level(str(labels[key]))
            if why:
                out.append((key, str(labels[key]), why))
    return out


def admit_namespace(op: str, ns: dict, old: dict | None, reader: Any, name: str) -> None:
    """``ValidateNamespace``: a namespace is created only with valid Pod Security labels, and updated with
    invalid ones only when they did not change (422, ``metadata.labels[<label>]: Invalid value``)."""
    if op not in ("CREATE", "UPDATE"):
        return
    labels = (ns.get("metadata") or {}).get("labels") or {}
    errs = label_errors(labels)
    if not errs:
        return
    if op == "UPDATE":
        before = ((old or {}).get("metadata") or {}).get("labels") or {}
        if all(before.get(k) == labels.get(k) for k in MODE_LABELS):
            return  # the policy did not change: an old invalid label is evaluated as restricted, not refused
    causes = [
        Cause(f"metadata.labels[{key}]", "FieldValueInvalid", f'Invalid value: "{value}": {why}')
        for key, value, why in errs
    ]
    parts = [f"{c.field}: {c.message}" for c in causes]
    detail = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    raise Invalid(f'Namespace "{name}" is invalid: {detail}', causes=causes, kind="Namespace", name=name)


def _ephemeral_added(pod: dict, old: dict | None) -> bool:
    """Whether an update adds an ephemeral container (the ``pods/ephemeralcontainers`` subresource: a plain pod
    update cannot), which ``isSignificantPodUpdate`` makes the plugin evaluate the pod again for."""

    def names(obj: dict | None) -> set[Any]:
        spec = (obj or {}).get("spec")
        items = spec.get("ephemeralContainers") if isinstance(spec, dict) else None
        return {c.get("name") for c in items or () if isinstance(c, dict)}

    return bool(names(pod) - names(old))


def admit(op: str, pod: dict, old: dict | None, reader: Any, name: str) -> None:
    """The plugin's validating admission of a pod: refused (Forbidden) on create, or on an update that adds an
    ephemeral container, in a namespace whose ``enforce`` level it breaks (a level that does not parse is
    enforced as ``restricted:latest``)."""
    if op != "CREATE" and not (op == "UPDATE" and _ephemeral_added(pod, old)):
        return
    ns = (pod.get("metadata") or {}).get("namespace") or ""
    namespace = reader.peek("Namespace", ns) if ns else None
    labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    if ENFORCE not in labels:
        return
    level, bad = parse_level(str(labels[ENFORCE]))
    if level not in ("baseline", "restricted"):
        return
    spec = pod.get("spec")
    found = violations(level, spec if isinstance(spec, dict) else {})
    if found:
        version = "latest" if bad else (labels.get(ENFORCE_VERSION) or "latest")
        raise Forbidden(
            f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": {", ".join(found)}',
            kind="pods",
            name=name,
        )
