"""Builders and harnesses shared by the tests and the benchmarks (the benchmarks never import ``tests``).

- ``gke_twin``: a virtual twin with the tutorial's GKE cluster and node pools (the tutorial's REST bodies in
  ``data/gke``), TPU pods and ProvisioningRequests to drive its autoscaler and DWS.
- ``live_twin``: a live twin on real local Ray with the tutorial's cluster, queues and RayJobs, and a peak-memory
  sampler.
"""
