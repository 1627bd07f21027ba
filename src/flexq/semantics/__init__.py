"""Kubernetes semantics shared by every domain: one implementation of each rule.

Owns: the label selectors, node
selector requirements and required node affinity (``selectors``, after ``k8s.io/apimachinery/pkg/labels``
and ``k8s.io/component-helpers/scheduling/corev1/nodeaffinity``); tolerations and taints (``taints``, after
``k8s.io/api/core/v1`` ``Toleration.ToleratesTaint``); a pod's effective resource requests (``resources``,
after ``k8s.io/component-helpers/resource.PodRequests``); status conditions (``conditions``).

Pure: imports nothing in flexq but ``flexq.api`` (quantities). The domains (kube, kueue, gke, kuberay) and
the faces use these; none of them writes its own copy.
"""
