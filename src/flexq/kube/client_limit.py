"""kube-controller-manager's client rate limit: each controller talks to the API server through a client of its own
limited to ``--kube-api-qps`` 20 calls a second with bursts of ``--kube-api-burst`` 30 (client-go's token bucket,
``flowcontrol.NewTokenBucketRateLimiter``). The twin's controllers that create and delete pods in numbers (the
ReplicaSet and Job controllers) count those calls against it, so a ReplicaSet of two billion replicas or a Job of
100,000 pods is built at 20 pods a second, as upstream, not as fast as the twin can write (issue 49).

Owns ``ClientRateLimit``. Pure: imports nothing from flexq.
"""

from __future__ import annotations

__all__ = ["CLIENT_BURST", "CLIENT_QPS", "ClientRateLimit"]

CLIENT_QPS, CLIENT_BURST = 20.0, 30  # --kube-api-qps, --kube-api-burst


class ClientRateLimit:
    """One controller's client: a token bucket refilled at ``CLIENT_QPS`` up to ``CLIENT_BURST``, full at first."""

    def __init__(self) -> None:
        self.tokens, self.filled_at = float(CLIENT_BURST), float("-inf")

    def allowance(self, now: float) -> int:
        """The calls the bucket allows at ``now``."""
        if now > self.filled_at:
            self.tokens = min(float(CLIENT_BURST), self.tokens + (now - self.filled_at) * CLIENT_QPS)
            self.filled_at = now
        return int(self.tokens)

    def take(self, calls: int) -> None:
        """``calls`` made (each a token)."""
        self.tokens -= calls

    def next_token(self) -> float:
        """How long until the bucket allows one more call."""
        # never less than one token's time: a wait of microseconds would round to the same virtual instant (the
        # clock counts seconds since 1970 in a float) and the controller would wake itself there for ever
        return max(1.0 / CLIENT_QPS, (1.0 - (self.tokens - int(self.tokens))) / CLIENT_QPS)
