"""The save's parsing shortcuts (issue 22) answer as the walks they skip: the JSON text decides
depth and NUL questions only when it can, and serializer fields are copied from their arguments."""

import copy
import io

import pytest
from rest_framework import parsers, serializers
from rest_framework.exceptions import ParseError
from rest_framework.utils import json
from rest_framework.views import APIView  # first, as in the app: it loads api.parsers (DRF's settings)

from annotation.json_values import MAX_JSON_DEPTH, too_deep
from api.serializers import (
    NUL_MESSAGE,
    AnnotationWriteSerializer,
    ConsolidationWriteSerializer,
    FieldsFromArguments,
    contains_nul,
)


class ReferencePayloadField(serializers.JSONField):
    """The field as it was: DRF's JSONField, then a depth walk, then a NUL walk."""

    def to_internal_value(self, data):
        try:
            value = super().to_internal_value(data)
        except RecursionError:
            raise serializers.ValidationError("too deep") from None
        if too_deep(value):
            raise serializers.ValidationError("too deep")
        if contains_nul(value):
            raise serializers.ValidationError(NUL_MESSAGE)
        return value


class Reference(serializers.Serializer):
    payload = ReferencePayloadField()
    version = serializers.IntegerField(min_value=0)
    submit = serializers.BooleanField(default=False)
    active_seconds = serializers.IntegerField(min_value=0, required=False, default=0)


def nested_dicts(depth):
    value = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


class JSONText(str):
    is_json_string = True  # how DRF hands a form field's text to a JSONField


PAYLOADS = [
    {"segments": [{"label": True, "error_type": None, "comment": "", "refs": []}] * 5},
    nested_dicts(MAX_JSON_DEPTH),
    nested_dicts(MAX_JSON_DEPTH + 1),  # a Python value: no parser checked its depth
    [[]] * (MAX_JSON_DEPTH + 5),  # more brackets than the limit, yet shallow: walked, accepted
    {"segments": [{"comment": "a\x00b"}]},
    {"seg\x00ments": []},
    {"segments": [{"comment": "a backslash and u0000: \\u0000, not a NUL"}]},
    {"n": float("nan")},
    {"t": (1, 2)},
    {"o": object()},
    JSONText(json.dumps(nested_dicts(MAX_JSON_DEPTH + 1))),
    JSONText('{"comment": "a\\u0000b"}'),
    JSONText('{"comment": "a\\\\u0000b"}'),
    JSONText("[" * 5 + "]" * 5),
    JSONText("{not json"),
]


def answer(serializer_class, payload):
    serializer = serializer_class(data={"payload": payload, "version": 1})
    if serializer.is_valid():
        return "valid", serializer.validated_data["payload"]
    message = str(serializer.errors["payload"][0])
    return "invalid", ("too deep" if "deeper" in message or "too deep" in message else message)


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_the_save_serializer_answers_as_the_walks_did(payload):
    assert answer(AnnotationWriteSerializer, payload) == answer(Reference, payload)


def test_a_value_nested_too_deeply_is_refused_without_a_parser():
    assert answer(AnnotationWriteSerializer, nested_dicts(MAX_JSON_DEPTH + 1)) == ("invalid", "too deep")
    assert answer(AnnotationWriteSerializer, {"c": "\x00"}) == ("invalid", NUL_MESSAGE)


@pytest.mark.parametrize("serializer_class", [AnnotationWriteSerializer, ConsolidationWriteSerializer])
def test_fields_copied_from_their_arguments_are_fresh_and_as_declared(serializer_class):
    assert issubclass(serializer_class, FieldsFromArguments)
    immutable = (str, int, bool, float, type(None), type(serializer_class.__doc__ and _lazy()))
    for name, field in serializer_class._declared_fields.items():
        for value in [*field._args, *field._kwargs.values()]:
            assert isinstance(value, immutable), f"{serializer_class.__name__}.{name}: {value!r} would be shared"
    first, second = serializer_class(data={}), serializer_class(data={})
    assert first.fields.keys() == serializer_class._declared_fields.keys()
    for name in first.fields:
        assert first.fields[name] is not second.fields[name]
        assert repr(first.fields[name]) == repr(copy.deepcopy(serializer_class._declared_fields[name]))


def _lazy():
    from django.utils.translation import gettext_lazy

    return gettext_lazy("x")


def reference_parse(body: bytes):
    """The parser as it was: DRF's, then a walk of the whole body."""
    from api.parsers import TOO_DEEP

    try:
        data = parsers.JSONParser().parse(io.BytesIO(body))
    except RecursionError:
        raise ParseError(TOO_DEEP) from None
    if too_deep(data):
        raise ParseError(TOO_DEEP)
    return data


def parsed(parse, body: bytes):
    try:
        return "parsed", parse(body)
    except ParseError as error:
        return "refused", str(error.detail)


BODIES = [
    b'{"payload": {"segments": []}, "version": 0}',
    b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH,
    b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
    b"[" * 100_000 + b"]" * 100_000,
    json.dumps({"a": nested_dicts(MAX_JSON_DEPTH)}).encode(),
    json.dumps([[]] * (MAX_JSON_DEPTH + 5)).encode(),  # many brackets, shallow
    json.dumps({"c": "[[[[" * 40}).encode(),  # brackets in a string
    b'{"n": NaN}',
    b'{"n": 1e400}',
    b'{"a": "\xff"}',
    b"\xff\xfe{}",
    b"{not json",
    b"",
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_the_json_parser_answers_as_drf_and_the_walk_did(body):
    from api.parsers import JSONParser

    ours = parsed(lambda raw: JSONParser().parse(io.BytesIO(raw)), body)
    assert ours == parsed(reference_parse, body)


ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "",
    "text/html",
    "application/json; indent=4",
    "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "application/*",
    "image/png",
]


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("browsable_first", [False, True])
def test_content_negotiation_answers_as_drfs(accept, browsable_first):
    from rest_framework import renderers
    from rest_framework.exceptions import NotAcceptable
    from rest_framework.negotiation import DefaultContentNegotiation
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory

    from api.negotiation import ContentNegotiation

    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    choices = [renderers.JSONRenderer(), renderers.BrowsableAPIRenderer()]
    if browsable_first:
        choices.reverse()

    def selected(negotiation):
        request = Request(APIRequestFactory().put("/api/assignments/1/annotation/", **headers))
        try:
            renderer, media_type = negotiation().select_renderer(request, choices)
        except NotAcceptable:
            return "406"
        return type(renderer), media_type

    assert selected(ContentNegotiation) == selected(DefaultContentNegotiation)


def test_the_api_negotiates_with_the_fast_path():
    from api.negotiation import ContentNegotiation

    assert APIView.content_negotiation_class is ContentNegotiation
