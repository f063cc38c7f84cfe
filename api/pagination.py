from rest_framework.pagination import PageNumberPagination as BasePageNumberPagination


class PageNumberPagination(BasePageNumberPagination):
    """``?page=N&page_size=M`` with at most 1000 rows a page."""

    page_size_query_param = "page_size"
    max_page_size = 1000
