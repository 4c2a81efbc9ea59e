from typing import Any

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from exchange import socket_beats
from exchange.selectors.status import status_report


def _with_socket_workers(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with this web tier's socket processes (``socket_workers``) when this HTTP
    process hands WebSockets to them (``exchange/server.py``): down while none is alive (the
    ones that are not named under ``down``). Without socket processes there is nothing to
    report: the HTTP processes carry the sockets themselves."""
    beats = socket_beats.attached
    if beats is None:
        return report
    try:
        status = beats.status()
    except Exception as exc:  # reported as down, never raised, as the other checks
        status = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    components = {**report["components"], "socket_workers": status}
    return {**report, "ok": report["ok"] and status["ok"], "components": components}


@never_cache
@require_GET
def healthz(request):
    """200 when every component is up, 503 otherwise. Staff see each component; everyone
    else only ``{"ok": ...}``, so the endpoint tells outsiders nothing about the insides."""
    report = _with_socket_workers(status_report())
    body = report if request.user.is_staff else {"ok": report["ok"]}
    return JsonResponse(body, status=200 if report["ok"] else 503)
