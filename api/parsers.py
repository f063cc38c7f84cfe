"""Request body parsers: hostile JSON is a 400 (or 413) that says why, never a 500."""

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from annotation.json_values import MAX_JSON_DEPTH, too_deep

from .exceptions import PayloadTooLarge

TOO_DEEP = f"JSON parse error - the request body nests lists or objects deeper than {MAX_JSON_DEPTH} levels"


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with limits.

    json.load raises RecursionError (not ValueError, which DRF turns into a 400) for input
    nested about a thousand levels deep; shallower but still deep input would recurse out of
    the stack later, in validation or rendering. Django's size limit only covers bodies it
    reads itself, not the stream DRF hands to this parser.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if request is not None and limit is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                raise PayloadTooLarge(f"the request body has {length} bytes, more than the {limit} accepted")
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(TOO_DEEP) from None
        if too_deep(data):
            raise ParseError(TOO_DEEP)
        return data


# The parsers of every API view, the token view included (DRF's sets its own list).
PARSER_CLASSES = [JSONParser, parsers.FormParser, parsers.MultiPartParser]
