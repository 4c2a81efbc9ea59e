from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    """limit/offset pages; an offset past any possible row is simply an empty page."""

    default_limit = 100
    max_limit = 1000
    max_offset = 2**62

    def get_offset(self, request):
        return min(super().get_offset(request), self.max_offset)
