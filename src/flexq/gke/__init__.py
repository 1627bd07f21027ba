"""The GKE and DWS twin: the GKE API (clusters, node pools, operations), the machine catalog and prices, the
capacity model, nodes, the cluster autoscaler, ProvisioningRequest classes and billing.

Layout: ``catalog``, ``capacity``, ``fit``, ``validation`` are pure; ``storage``/``backend``/``api`` are the GKE
API over a tiny storage interface; ``project``, ``nodes``, ``autoscaler``, ``provisioning`` and ``billing`` are
controllers; ``registry`` is the explicit list the assembly reads. Imports only the layers below it (never
another domain package or ``flexq.http``).
"""
