"""What a real cluster keeps in place for its clients, as the control plane's own controllers do.

- The ``kubernetes`` Service in ``default`` (the API server's bootstrap controller): ClusterIP, port 443
  ``https``, labels ``component: apiserver`` and ``provider: kubernetes``, with GKE's first address of the
  default services range (``34.118.224.1``); re-created if deleted.
- A ``default`` ServiceAccount in every namespace (kube-controller-manager's serviceaccounts-controller).
- A ``kube-root-ca.crt`` ConfigMap in every namespace (its root-ca-cert-publisher): ``ca.crt`` the CA of the
  twin's API server, with upstream's description annotation; re-created if deleted, rewritten if changed.
  A twin that serves no API has no CA and publishes none; a live one whose server starts after its controllers
  publishes as soon as the server has recorded its CA (``TwinSettings.serve``, whose callback wakes this).

All are re-made on a restart only if missing (the store keeps them in its journal). Must not import other
domain packages.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable

from flexq.api.scheme import ADMIT
from flexq.errors import AlreadyExists, Conflict, NotFound
from flexq.runtime import Context, Controller, Result, Watch
from flexq.store.store import WatchEvent

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as "
    "the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of "
    "Kubernetes clusters."
)
DEFAULT_SERVICE_ACCOUNT = "default"
KUBERNETES_SERVICE_IP = "34.118.224.1"  # GKE: the first address of the default services range 34.118.224.0/20
_CA_CHECK = ("", "")  # the key a live twin's server recording its CA wakes (every namespace then)


def kubernetes_service() -> dict:
    """The ``default/kubernetes`` Service as a GKE cluster has it."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_SERVICE_IP,
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 443}],
            "sessionAffinity": "None",
        },
    }


def _namespace_of(name: str) -> Callable[[WatchEvent], list[tuple[str, str]]]:
    def mapper(ev: WatchEvent) -> list[tuple[str, str]]:
        m = ev.object["metadata"]
        return [("", m.get("namespace") or "default")] if m["name"] == name else []

    return mapper


def _namespace(ev: WatchEvent) -> list[tuple[str, str]]:
    return [("", ev.object["metadata"]["name"])]


class ClusterSeeds(Controller):
    """Per namespace: its ``default`` ServiceAccount and ``kube-root-ca.crt``; in ``default``, the
    ``kubernetes`` Service."""

    name = "cluster-seeds"

    def watches(self) -> list[Watch]:
        return [
            Watch("Namespace", _namespace),
            Watch("ServiceAccount", _namespace_of(DEFAULT_SERVICE_ACCOUNT)),
            Watch("ConfigMap", _namespace_of(ROOT_CA_CONFIGMAP)),
            Watch("Service", _namespace_of("kubernetes")),
        ]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        # a live twin's server records its CA after the controllers start: publish then (from the loop)
        self._unsubscribe = self.ctx.settings.on_serve(
            lambda: self.ctx.loop.post(lambda: self.enqueue(_CA_CHECK))
        )

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()

    def _ca(self) -> str | None:
        b64 = self.ctx.settings.kube_ca_b64
        return base64.b64decode(b64).decode() if b64 else None

    def reconcile(self, key: tuple[str, str]) -> Result | None:
        if key == _CA_CHECK:
            for each in self.store.peek_list("Namespace"):
                self.enqueue(("", each["metadata"]["name"]))
            return None
        ns = key[1]
        obj = self.store.peek("Namespace", ns)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return None
        if self.store.peek("ServiceAccount", DEFAULT_SERVICE_ACCOUNT, ns) is None:
            self._create(
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": ns},
                }
            )
        ca = self._ca()
        if ca is not None:
            cm = self.store.peek("ConfigMap", ROOT_CA_CONFIGMAP, ns)
            if cm is None:
                self._create(
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": ROOT_CA_CONFIGMAP,
                            "namespace": ns,
                            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
                        },
                        "data": {"ca.crt": ca},
                    }
                )
            elif (cm.get("data") or {}).get("ca.crt") != ca:
                new = dict(cm)
                new["data"] = {**(cm.get("data") or {}), "ca.crt": ca}
                with contextlib.suppress(Conflict, NotFound):
                    self.store.update(new)
        if ns == "default" and self.store.peek("Service", "kubernetes", ns) is None:
            self._create(kubernetes_service())
        return None

    def _create(self, obj: dict) -> None:
        with contextlib.suppress(AlreadyExists, NotFound, Conflict):  # a race, or the namespace is going
            self.store.create(obj, admission=ADMIT, take=True)  # seeds are defaulted
