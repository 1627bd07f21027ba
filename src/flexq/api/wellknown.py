"""Well-known names (as k8s.io/api/core/v1 well_known_labels.go and well_known_taints.go keep them): labels,
annotations, taints and resources that more than one package reads or writes."""

from __future__ import annotations

# Kueue (pkg/controller/constants, pkg/workload)
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
QUEUE_NAME_ANNOTATION = "kueue.x-k8s.io/queue-name"  # the deprecated annotation form, still honoured
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
# a job's (and so its Workload's) annotations with this prefix become its ProvisioningRequests' parameters
PROVREQ_PREFIX = "provreq.kueue.x-k8s.io/"
# Kueue's Configuration: the ConfigMap its manager reads (config/components/manager), and its key
KUEUE_CONFIG_NAME = "kueue-manager-config"
KUEUE_CONFIG_NAMESPACE = "kueue-system"
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
# Cluster autoscaler / Kueue ProvisioningRequest integration (the pair a provisioned pod carries)
CONSUME_PROVISIONING_REQUEST = "autoscaling.x-k8s.io/consume-provisioning-request"
PROVISIONING_CLASS_NAME = "autoscaling.x-k8s.io/provisioning-class-name"
CLUSTER_AUTOSCALER_CONSUME_PR = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
# on a Node: the cluster autoscaler never removes it (cluster-autoscaler FAQ, "How can I prevent Cluster
# Autoscaler from scaling down a particular node?")
CLUSTER_AUTOSCALER_SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
CLUSTER_AUTOSCALER_PR_CLASS = "cluster-autoscaler.kubernetes.io/provisioning-class-name"

# GKE custom ComputeClasses: pod nodeSelector key, and the label + taint key binding a node pool to a class
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"

# KubeRay: every pod of one multi-host worker replica (one TPU slice) carries the replica's name
RAY_REPLICA_NAME_LABEL = "ray.io/worker-group-replica-name"

# Resources
RESOURCE_TPU = "google.com/tpu"
RESOURCE_GPU = "nvidia.com/gpu"

# Taints the node lifecycle controller and the scheduler give
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"

# Field names
OBJECT_NAME_FIELD = "metadata.name"  # metav1.ObjectNameField, the one field a node selector may match
# the twin's project store (flexq.gke.storage): a GKE node pool as the GKE API returns it is the ``spec`` of a
# ``GkeNodePool`` object labelled with its cluster's name
GKE_NODE_POOL_KIND = "GkeNodePool"
GKE_CLUSTER_LABEL = "gke.twin.flexq.dev/cluster"
# kube-apiserver's --event-ttl default: an Event goes an hour after its last write (the twin's default, and how far
# back a reader of a cluster's Events can see)
EVENT_TTL_SECONDS = 3600.0
