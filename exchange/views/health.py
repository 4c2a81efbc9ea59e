from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from exchange.selectors.status import status_report


@never_cache
@require_GET
def healthz(request):
    """200 when every component is up, 503 otherwise. Staff see each component; everyone
    else only ``{"ok": ...}``, so the endpoint tells outsiders nothing about the insides."""
    report = status_report()
    body = report if request.user.is_staff else {"ok": report["ok"]}
    return JsonResponse(body, status=200 if report["ok"] else 503)
