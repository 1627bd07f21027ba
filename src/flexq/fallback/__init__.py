"""flexq's stock-out-aware fallback: move waiting jobs to the next flavor when the cloud cannot provision theirs.

Upstream Kueue falls back to the next ResourceFlavor only when the first one's *quota* is used up (kueue#2560):
a job admitted on the ``on-demand`` flavor during a TPU stock-out waits with Pending pods for as long as the
stock-out lasts. This package watches what the cluster already says — the cluster autoscaler's ``FailedScaleUp``
/ ``NotTriggerScaleUp`` events naming a GCE capacity error on the pods of an admitted workload, failed
capacity-checking ProvisioningRequests — and acts only through public APIs:

One pass (``policy.FallbackPolicy.run_once``, over one ``view.ClusterView``) takes the steps its docstring numbers:
**evidence** (a flavor is stocked out when the pods of a workload admitted on it have carried a capacity error for
longer than the grace period; remembered per flavor with the cluster autoscaler's backoff, 5 minutes doubling to
30, in a ConfigMap, so a restart forgets nothing), **moves** (deactivate the workload, add ``<label> NotIn
[<value>]`` for the stocked-out flavor's node label to the suspended job's pod template — the user's own affinity
and tolerations kept — then delete the evicted Workload: Kueue admits a new one on the next flavor; the step
reached is kept in an annotation on the job), **hedge-backs** (back to plan A the moment it can take the job
first), **rescue** (jobs Kueue deactivated for a passing lack of capacity, requeued once it is back) and
**steering** (new workloads headed for a stocked-out flavor get the same restriction before they are admitted;
when the backoff expires one job goes through as a probe: if its pods get nodes the flavor is back, if not the
backoff doubles and the probe is moved too).

Each action is an Event on the job. The same ``FallbackPolicy`` runs inside the twin (``controller``, enabled
with the twin setting ``fallback=True``) and as a process against any cluster (``flexq fallback --kubeconfig``),
through the ``ClusterAPI`` seam (``api``: the twin's store, or the Kubernetes API).
"""
