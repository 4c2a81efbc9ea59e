from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from exchange.selectors.health import health_report


@never_cache
@require_GET
def healthz(request):
    report = health_report()
    return JsonResponse(report, status=200 if report["ok"] else 503)
