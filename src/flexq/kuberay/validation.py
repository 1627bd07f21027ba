"""KubeRay's own RayJob checks, run by its controller (``utils/validation.go``), not by a webhook.

Owns ``validate_rayjob``: ``ValidateRayJobMetadata``, ``ValidateRayJobSpec`` (with the parts of
``ValidateRayClusterSpec`` a tutorial user can trip over) and ``ValidateRayJobStatus``, in upstream's order and
with upstream's messages. A failure puts the RayJob in ``ValidationFailed`` with a Warning event whose reason
is ``InvalidRayJobMetadata``, ``InvalidRayJobSpec`` or ``InvalidRayJobStatus``. Feature gates are taken at
their KubeRay defaults (``RayJobDeletionPolicy`` on). Pure; imports only ``yaml``, this package and
``flexq.api.jsoncopy`` (the spec checks are remembered per stored spec).
"""

from __future__ import annotations

import functools
import json
import re

import yaml

from flexq.api.jsoncopy import ByIdentity

MAX_RAYCLUSTER_NAME = 53
MAX_RAYJOB_NAME = MAX_RAYCLUSTER_NAME - 6  # utils.MaxRayJobNameLength
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_AUTOSCALER_V2_ENV = "RAY_enable_autoscaler_v2"
POLICIES = ("DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone")


class SpecRefused(Exception):
    """One failed check: ``reason`` is the event reason, ``str(self)`` upstream's message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@functools.lru_cache(maxsize=256)
def runtime_env_text(text: str) -> str:
    """``runtimeEnvYAML`` as compact JSON (parsed once per distinct text: every reconcile checks it)."""
    return json.dumps(yaml.safe_load(text), separators=(",", ":"))


def runtime_env(text: str) -> object:
    """``runtimeEnvYAML`` parsed (a fresh object; raises yaml.YAMLError)."""
    try:
        return json.loads(runtime_env_text(text))
    except TypeError:  # YAML that is not JSON (a timestamp...): parsed as it is
        return yaml.safe_load(text)


def validate_rayjob(rj: dict) -> SpecRefused | None:
    """The first failed check of ``validateRayJob``, or None."""
    try:
        _metadata(rj.get("metadata") or {})
    except SpecRefused as err:
        return err
    spec_err: SpecRefused | None = _spec_outcome(rj.get("spec") or {})
    if spec_err is not None:
        return spec_err
    try:
        _status(rj)
    except SpecRefused as err:
        return err
    return None


def _spec_error_of(spec: dict) -> SpecRefused | None:
    try:
        _spec({"spec": spec})
    except SpecRefused as err:
        return err
    return None


# the spec checks depend on the spec alone, which every reconcile of a RayJob checks again: remembered for the
# stored spec (a status write keeps the same spec object)
_spec_outcome = ByIdentity(_spec_error_of, size=1024)


def _metadata(meta: dict) -> None:
    name = meta.get("name", "")
    if name in _VALID_NAMES:  # checked before (every reconcile of a RayJob checks its name again)
        return
    _check_name(name)
    if len(_VALID_NAMES) >= 4096:
        _VALID_NAMES.clear()
    _VALID_NAMES.add(name)


_VALID_NAMES: set[str] = set()


def _check_name(name: str) -> None:
    if len(name) > MAX_RAYJOB_NAME:
        raise SpecRefused(
            "InvalidRayJobMetadata",
            "The RayJob metadata is invalid: RayJob name should be no more "
            f"than {MAX_RAYJOB_NAME} characters",
        )
    if not _DNS1035.match(name) or len(name) > 63:
        raise SpecRefused(
            "InvalidRayJobMetadata",
            f"The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: [{_DNS1035_MSG}]",
        )


def _spec_error(message: str) -> SpecRefused:
    return SpecRefused("InvalidRayJobSpec", message)


def _spec(rj: dict) -> None:
    spec = rj.get("spec") or {}
    suspend, shutdown = bool(spec.get("suspend")), bool(spec.get("shutdownAfterJobFinishes"))
    mode = spec.get("submissionMode") or "K8sJobMode"
    backoff = spec.get("backoffLimit")
    if suspend and not shutdown:
        raise _spec_error(
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not "
            "allowed to be suspended"
        )
    if (spec.get("ttlSecondsAfterFinished") or 0) < 0:
        raise _spec_error(
            "The RayJob spec is invalid: TTLSecondsAfterFinished must be a non-negative integer"
        )
    _deletion(spec)
    selector = spec.get("clusterSelector") or {}
    if suspend and selector:
        raise _spec_error(
            "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation"
        )
    if spec.get("rayClusterSpec") is None and not selector:
        raise _spec_error("The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set")
    if selector:
        if not selector.get("ray.io/cluster"):
            raise _spec_error("cluster name in ClusterSelector should not be empty")
        if mode == "SidecarMode":
            raise _spec_error("ClusterSelector is not supported in SidecarMode")
        if backoff is not None and backoff > 0:
            raise _spec_error(
                "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode"
            )
    if mode == "InteractiveMode" and backoff is not None and backoff > 0:
        raise _spec_error("The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode")
    if mode == "SidecarMode":
        if spec.get("submitterPodTemplate") is not None:
            raise _spec_error("Currently, SidecarMode doesn't support SubmitterPodTemplate")
        if spec.get("submitterConfig") is not None:
            raise _spec_error("Currently, SidecarMode doesn't support SubmitterConfig")
        head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
        if (head.get("spec") or {}).get("restartPolicy") not in (None, "", "Never"):
            raise _spec_error("restartPolicy for head Pod should be Never or unset when using SidecarMode")
    if spec.get("rayClusterSpec") is not None:
        try:
            _cluster_spec(spec["rayClusterSpec"])
        except SpecRefused as err:
            raise _spec_error(f"The RayJob spec is invalid: {err}") from None
    try:
        runtime_env(spec.get("runtimeEnvYAML") or "")
    except yaml.YAMLError as err:
        raise _spec_error(
            f"failed to unmarshal RuntimeEnvYAML: {spec.get('runtimeEnvYAML')}: {err}"
        ) from None
    for field in ("activeDeadlineSeconds", "preRunningDeadlineSeconds"):
        if spec.get(field) is not None and spec[field] <= 0:
            raise _spec_error(f"The RayJob spec is invalid: {field} must be a positive integer")
    if backoff is not None and backoff < 0:
        raise _spec_error("The RayJob spec is invalid: backoffLimit must be a positive integer")


def _deletion(spec: dict) -> None:
    """``validateDeletionConfiguration`` (the rule-level TTL ordering checks are left out)."""
    shutdown = bool(spec.get("shutdownAfterJobFinishes"))
    if not shutdown and (spec.get("ttlSecondsAfterFinished") or 0) > 0:
        raise _spec_error(
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot "
            "have TTLSecondsAfterFinished"
        )
    strategy = spec.get("deletionStrategy")
    if strategy is None:
        return
    legacy = strategy.get("onSuccess") is not None or strategy.get("onFailure") is not None
    rules = strategy.get("deletionRules") or []
    if rules and shutdown:
        raise _spec_error(
            "The RayJob spec is invalid: spec.shutdownAfterJobFinishes and "
            "spec.deletionStrategy.deletionRules are mutually exclusive"
        )
    if rules and legacy:
        raise _spec_error(
            "The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and "
            "deletionRules simultaneously"
        )
    selector = bool(spec.get("clusterSelector"))
    if legacy:
        on_ok, on_fail = strategy.get("onSuccess"), strategy.get("onFailure")
        if on_ok is None or on_fail is None:
            raise _spec_error(
                "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when "
                "using the legacy deletion policy fields of DeletionStrategy"
            )
        for label, pol in (("OnSuccess", on_ok), ("OnFailure", on_fail)):
            if not pol.get("policy"):
                raise _spec_error(
                    f"the DeletionPolicyType field of DeletionStrategy.{label} cannot be unset when "
                    "DeletionStrategy is enabled"
                )
        for label, pol in (("success", on_ok), ("failure", on_fail)):
            if selector and pol["policy"] in ("DeleteCluster", "DeleteWorkers"):
                raise _spec_error(
                    f"the ClusterSelector mode doesn't support DeletionStrategy={pol['policy']} on {label}"
                )
        if shutdown and "DeleteNone" in (on_ok["policy"], on_fail["policy"]):
            raise _spec_error(
                "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion "
                "policy is 'DeleteNone'"
            )
        return
    if not rules:
        raise _spec_error(
            "The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and "
            "onFailure, OR the deletionRules field (cannot be empty)"
        )
    for i, rule in enumerate(rules):
        cond = rule.get("condition") or {}
        if (cond.get("jobStatus") is None) == (cond.get("jobDeploymentStatus") is None):
            raise _spec_error(
                f"deletionRules[{i}]: exactly one of JobStatus and JobDeploymentStatus must be set"
            )
        if (cond.get("ttlSeconds") or 0) < 0:
            raise _spec_error(f"deletionRules[{i}]: TTLSeconds must be non-negative")
        if rule.get("policy") not in POLICIES:
            raise _spec_error(f"deletionRules[{i}]: unknown deletion policy {rule.get('policy')}")
        if selector and rule["policy"] in ("DeleteCluster", "DeleteWorkers"):
            raise _spec_error(
                f"deletionRules[{i}]: DeletionPolicyType '{rule['policy']}' not supported when "
                "ClusterSelector is set"
            )


def _env_value(container: dict, name: str) -> str | None:
    for e in container.get("env") or []:
        if e.get("name") == name:
            return str(e.get("value", ""))
    return None


def _cluster_spec(spec: dict) -> None:
    """The checks of ``ValidateRayClusterSpec`` that a RayJob's cluster can fail (messages as upstream)."""
    head = spec.get("headGroupSpec") or {}
    containers = ((head.get("template") or {}).get("spec") or {}).get("containers") or []
    if not containers:
        raise SpecRefused("", "headGroupSpec should have at least one container")
    _group_params("Head", head)
    autoscaling = bool(spec.get("enableInTreeAutoscaling"))
    v2 = autoscaling and (
        ((spec.get("autoscalerOptions") or {}).get("version") == "v2")
        or _env_value(containers[0], _AUTOSCALER_V2_ENV) in ("1", "true")
    )
    for g in spec.get("workerGroupSpecs") or []:
        name = g.get("groupName", "")
        if not ((g.get("template") or {}).get("spec") or {}).get("containers"):
            raise SpecRefused("", "workerGroupSpec should have at least one container")
        lo, hi = g.get("minReplicas"), g.get("maxReplicas")
        if lo is not None and lo < 0:
            raise SpecRefused("", f"worker group {name} has negative minReplicas {lo}")
        if hi is not None and hi < 0:
            raise SpecRefused("", f"worker group {name} has negative maxReplicas {hi}")
        if lo is not None and hi is not None and lo > hi:
            raise SpecRefused("", f"worker group {name} has minReplicas {lo} greater than maxReplicas {hi}")
        _group_params(name, g)
        idle = g.get("idleTimeoutSeconds")
        if idle is not None:
            if idle < 0:
                raise SpecRefused(
                    "", f"worker group {name}: idleTimeoutSeconds must be non-negative, got {idle}"
                )
            if not v2:
                raise SpecRefused(
                    "",
                    f"worker group {name}: idleTimeoutSeconds is set, but autoscaler v2 is not "
                    "enabled. Please set .spec.autoscalerOptions.version to 'v2' (or set "
                    f"{_AUTOSCALER_V2_ENV} environment variable to 'true' in the head pod if using "
                    "KubeRay < 1.4.0)",
                )
        if g.get("suspend") and autoscaling:
            raise SpecRefused("", f"worker group {name} cannot be suspended with Autoscaler enabled")
    if not autoscaling:
        value = _env_value(containers[0], _AUTOSCALER_V2_ENV)
        if value in ("1", "true"):
            raise SpecRefused(
                "",
                f"environment variable {_AUTOSCALER_V2_ENV} cannot be set to '{value}' when "
                "enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use "
                "autoscaler v2",
            )


def _group_params(name: str, group: dict) -> None:
    params = group.get("rayStartParams") or {}
    if any(params.get(k) for k in ("num-cpus", "num-gpus", "memory", "resources")) and group.get("resources"):
        raise SpecRefused(
            "",
            f"resource fields should not be set in both rayStartParams and Resources for {name} "
            "group; please use only one",
        )
    if "labels" in params:
        raise SpecRefused(
            "",
            f"rayStartParams['labels'] is not supported for {name} group; please use the top-level "
            "Labels field instead",
        )


def _status(rj: dict) -> None:
    st = rj.get("status") or {}
    mode = (rj.get("spec") or {}).get("submissionMode") or "K8sJobMode"
    if st.get("jobDeploymentStatus") == "Waiting" and mode != "InteractiveMode":
        raise SpecRefused(
            "InvalidRayJobStatus",
            "The RayJob status is invalid: JobDeploymentStatus cannot be "
            "`Waiting` when SubmissionMode is not InteractiveMode",
        )
