"""Kubernetes semantics shared by every domain: one implementation of each rule.

Owns: the label selectors, node
selector requirements and required node affinity (``selectors``, after ``k8s.io/apimachinery/pkg/labels``
and ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``); tolerations and taints (``taints``, after
``k8s.io/api/core/v1`` ``Toleration.ToleratesTaint``); a pod's effective resource requests (``resources``,
after ``k8s.io/component-helpers/resource.PodRequests``); status conditions (``conditions``); owner references
(``owners``: the controller owner, ``metav1.GetControllerOf``); a Kueue Workload's state and its wait for
admission, as the CLI and the dashboard show them (``workloads``).

Pure: imports nothing in flexq but ``flexq.api`` (quantities) and ``flexq.clock``. The domains (kube, kueue, gke, kuberay) and
the faces use these; none of them writes its own copy.
"""
