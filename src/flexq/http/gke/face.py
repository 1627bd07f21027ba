"""The Google Cloud REST face: ``container.googleapis.com/v1`` (clusters, node pools, operations), Resource
Manager ``projects.get`` and Service Usage ``services.get``, all answered by the GKE backend.

Owns only translation: method, path (with the query string less the transport's ``alt``/``prettyPrint``),
JSON body -> ``TwinCore.gke(method, path, body)`` on the loop thread -> JSON response; Google-shaped
errors (``{"error": {"code", "message", "status"}}``) for bad bodies and unexpected failures.
Must not import domain packages; the backend lives in ``flexq.gke``.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from flexq.errors import ApiError, CloudError, RequestEntityTooLarge
from flexq.http.common import decode_body_async, json_response, on_loop, read_body, url_path
from flexq.http.seam import TwinServices

log = logging.getLogger("flexq.http.gke")

PREFIXES = ("/v1/", "/v1beta1/", "/v2/", "/v3/")
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    413: "INVALID_ARGUMENT",
    422: "INVALID_ARGUMENT",
    500: "INTERNAL",
}
_TRANSPORT_PARAMS = {"alt", "prettyPrint", "$alt", "$prettyPrint", "key", "quotaUser", "fields"}


def google_error(code: int, status: str, message: str) -> Response:
    return json_response(CloudError(code, status, message).to_dict(), code)


def is_gke_path(path: str) -> bool:
    return path.startswith(PREFIXES)


async def handle(core: TwinServices, request: Request) -> Response:
    """Serve one Google Cloud API call."""
    method = request.method.upper()
    body: dict | None = None
    try:
        raw = await read_body(request)
    except RequestEntityTooLarge as err:
        return google_error(413, "INVALID_ARGUMENT", err.message)
    if raw.strip():
        try:  # with the API server's depth and size limits (a 5000-deep array was a RecursionError: a 500)
            body = await decode_body_async(raw, "application/json")
        except RequestEntityTooLarge as err:
            return google_error(413, "INVALID_ARGUMENT", err.message)
        except ApiError as exc:
            return google_error(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {exc.message}")
        if not isinstance(body, dict):
            return google_error(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Expected an object.")
    query = [(k, v) for k, v in request.query_params.multi_items() if k not in _TRANSPORT_PARAMS]
    path = url_path(request) + (f"?{urlencode(query)}" if query else "")
    try:
        status, out = await on_loop(core.loop, lambda: core.gke(method, path, body))
    except CloudError as err:
        return json_response(err.to_dict(), err.code)
    except ApiError as err:  # a Kubernetes-side refusal (a bad label selector made of the path)
        return google_error(err.status, _GOOGLE_STATUS.get(err.status, "INVALID_ARGUMENT"), err.message)
    except Exception as exc:
        log.exception("GKE API call %s %s failed", method, path)
        return google_error(500, "INTERNAL", f"internal error: {exc}")
    return json_response(out, status)
