"""The forecast: a cluster's state carried forward on Kueue's own rules, the one forward run every prediction
shares (``flexq eta``'s fast engine, ``flexq fallback``'s decisions).

``state`` (``ClusterState``: what is read of a cluster through the Kubernetes API, and its node pools), ``jobs``
(each live Workload's role in Kueue's order), ``model`` (capacity and run times fitted to the cluster's own
history), ``fast`` (the forward run: events over ``flexq.kueue.queues`` and ``flexq.kueue.cycle.plan``) and
``moves`` (a fallback move judged by forward runs with and without it, on common random numbers). Pure: no
store, no clock, no twin; it sits above the domains whose pure cores it runs and below the faces that read it.
"""
