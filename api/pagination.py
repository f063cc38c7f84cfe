from django.core.paginator import InvalidPage
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination as BasePageNumberPagination

from annotation.params import parse_natural


class PageNumberPagination(BasePageNumberPagination):
    """``?page=N&page_size=M`` with at most 1000 rows a page.

    DRF ignores a page size it cannot read and answers 404 for a page it cannot read or that
    is past the end; here each is a 400 naming the parameter, as the schema documents them.
    """

    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        size = parse_natural(raw)
        if size is None or not 1 <= size <= self.max_page_size:
            raise ValidationError(
                {self.page_size_query_param: [f"must be a whole number from 1 to {self.max_page_size}"]}
            )
        return size

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw is None:
            return 1
        number = parse_natural(raw)
        if not number:
            raise ValidationError({self.page_query_param: ["must be a whole number from 1"]})
        return number

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        paginator = self.django_paginator_class(queryset, self.get_page_size(request))
        try:
            self.page = paginator.page(self.get_page_number(request, paginator))
        except InvalidPage:
            raise ValidationError({self.page_query_param: [f"must be from 1 to {paginator.num_pages}"]}) from None
        self.display_page_controls = paginator.num_pages > 1 and self.template is not None
        return list(self.page)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": self.max_page_size,
                }
                parameter["description"] = (
                    f"Number of results to return per page, 1 to {self.max_page_size} (default {self.page_size})."
                )
        return parameters
