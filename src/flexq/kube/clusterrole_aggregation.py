"""kube-controller-manager's clusterrole-aggregation controller: a ClusterRole with an ``aggregationRule`` holds
the rules of every ClusterRole its ``clusterRoleSelectors`` select (``admin``, ``edit`` and ``view`` gather the
``rbac.authorization.k8s.io/aggregate-to-*`` roles, and any role a user labels so).

Owns the ``rules`` of aggregated ClusterRoles: rewritten whenever a ClusterRole changes and the selected rules
differ (``flexq.semantics.rbac.aggregated_rules``: per selector, the selected roles in name order, each rule once).
Also ``bootstrap_policy(store)``: the API server's default roles and bindings, created once when missing, the
aggregated ones already filled. Must not import other domain packages.
"""

from __future__ import annotations

import contextlib

from flexq.api.rbac import bootstrap_cluster_role_bindings, bootstrap_cluster_roles
from flexq.errors import AlreadyExists, Conflict, NotFound
from flexq.runtime import Controller, Result, Watch
from flexq.semantics.rbac import aggregated_rules
from flexq.semantics.selectors import label_selector_matches
from flexq.store import Store
from flexq.store.store import WatchEvent


def bootstrap_policy(store: Store) -> None:
    """The default ClusterRoles and ClusterRoleBindings (kube-apiserver's ``rbac/bootstrap-roles`` hook), each
    created if missing (a user's change to one is kept, as with ``autoupdate: "false"``)."""
    roles = bootstrap_cluster_roles()
    for _ in range(len(roles)):  # admin gathers edit, which gathers view: until nothing changes
        changed = False
        for role in roles:
            if role.get("aggregationRule") is not None:
                rules = aggregated_rules(role, roles, label_selector_matches)
                changed |= rules != role["rules"]
                role["rules"] = rules
        if not changed:
            break
    for obj in [*roles, *bootstrap_cluster_role_bindings()]:
        if store.peek(obj["kind"], obj["metadata"]["name"]) is None:
            store.create(obj, take=True)


class ClusterRoleAggregation(Controller):
    """Keeps each aggregated ClusterRole's rules the union of the roles it selects."""

    name = "clusterrole-aggregation"

    def watches(self) -> list[Watch]:
        return [Watch("ClusterRole", self._aggregators)]

    def _aggregators(self, ev: WatchEvent) -> list[tuple[str, str]]:
        """Any ClusterRole's change may change what each aggregating role selects."""
        keys = [
            ("", r["metadata"]["name"])
            for r in self.store.peek_list("ClusterRole")
            if r.get("aggregationRule")
        ]
        if ev.object.get("aggregationRule") and ("", ev.object["metadata"]["name"]) not in keys:
            keys.append(("", ev.object["metadata"]["name"]))
        return keys

    def start(self) -> None:
        for r in self.store.peek_list("ClusterRole"):
            if r.get("aggregationRule"):
                self.enqueue(("", r["metadata"]["name"]))

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        role = self.store.peek("ClusterRole", key[1])
        if role is None:
            return None
        rules = aggregated_rules(role, self.store.peek_list("ClusterRole"), label_selector_matches)
        if rules is None or rules == (role.get("rules") or []):
            return None
        with contextlib.suppress(NotFound, Conflict, AlreadyExists):  # a conflict: the next event retries
            self.store.update({**role, "rules": rules})
        return None
