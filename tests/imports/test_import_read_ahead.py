"""The import's reader thread (lines parsed while the writer waits for the database) and, on
PostgreSQL, its foreign keys checked statement by statement."""

import threading

import pytest
from django.db import connection, transaction

from annotation.exceptions import ImportFailed
from annotation.imports import items as import_services
from annotation.imports.items import import_jsonl
from annotation.kinds import get_kind
from annotation.models import Item
from tests.helpers.builders import felm_line, jsonl

pytestmark = pytest.mark.django_db


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "import-reader"]


def test_lines_are_parsed_on_a_thread_of_their_own(felm_project, monkeypatch):
    kind = get_kind("felm")
    real_parse, parsed_on = kind.parse_import_line, set()

    def parse(*args, **kwargs):
        parsed_on.add(threading.current_thread().name)
        return real_parse(*args, **kwargs)

    monkeypatch.setattr(type(kind), "parse_import_line", lambda self, *a, **k: parse(*a, **k))
    monkeypatch.setattr(import_services, "BATCH_SIZE", 3)
    result = import_jsonl(felm_project, jsonl([felm_line(i, ["A."]) for i in range(10)]), fmt="felm")
    assert result.items == 10 and result.lines == 10
    assert parsed_on == {"import-reader"}
    assert list(Item.objects.filter(project=felm_project).order_by("id").values_list("external_id", flat=True)) == [
        str(i) for i in range(10)
    ]
    assert not _readers()


def test_a_bad_line_still_names_its_line_and_writes_nothing(felm_project, monkeypatch):
    monkeypatch.setattr(import_services, "BATCH_SIZE", 2)
    lines = [felm_line(i, ["A."]) for i in range(7)]
    body = jsonl(lines).read().splitlines(keepends=True)
    body[5] = b'{"id": 5, "prompt": "p", "response": oops}\n'
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, body, fmt="felm")
    assert [e["line"] for e in failed.value.errors] == [6]
    assert not Item.objects.filter(project=felm_project).exists()
    assert not _readers()


def test_an_error_of_the_reader_is_raised_in_the_import_and_nothing_is_written(felm_project, monkeypatch):
    monkeypatch.setattr(import_services, "BATCH_SIZE", 2)
    good = jsonl([felm_line(i, ["A."]) for i in range(6)]).read().splitlines(keepends=True)

    def lines():
        yield from good
        raise OSError("the disk went away")

    with pytest.raises(OSError, match="the disk went away"):
        import_jsonl(felm_project, lines(), fmt="felm")
    assert not Item.objects.filter(project=felm_project).exists()
    assert not _readers()


def test_the_reader_stops_when_the_import_gives_up_early(felm_project, monkeypatch):
    """Past MAX_REPORTED_ERRORS the import stops listing: the reader must not read on."""
    monkeypatch.setattr(import_services, "MAX_REPORTED_ERRORS", 3)
    monkeypatch.setattr(import_services, "BATCH_SIZE", 10)
    read = []

    def lines():
        for number in range(10_000):
            read.append(number)
            yield b"not json\n"

    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, lines(), fmt="felm")
    assert [e["line"] for e in failed.value.errors] == [1, 2, 3]
    assert len(read) < 100  # at most about a batch read ahead, not the whole file
    assert not _readers()


@pytest.mark.postgres_only("SET CONSTRAINTS is PostgreSQL's")
def test_foreign_keys_are_checked_by_each_statement_not_at_commit(felm_project, monkeypatch):
    """A row with a broken foreign key fails the statement that writes it, before anything else
    (the job's end, the COMMIT) runs; the import's rows are rolled back."""
    real_copy = import_services.copy_items_and_stages
    monkeypatch.setattr(
        import_services, "copy_items_and_stages", lambda project_id, *args: real_copy(project_id + 10**9, *args)
    )
    ended = []
    # the COPY runs on psycopg's own cursor: its error is psycopg's, not Django's wrapper of it
    with pytest.raises(Exception, match="violates foreign key constraint"):
        import_jsonl(felm_project, jsonl([felm_line(1, ["A."])]), fmt="felm", before_commit=ended.append)
    assert ended == []
    assert not Item.objects.filter(project=felm_project).exists()


@pytest.mark.postgres_only("SET CONSTRAINTS is PostgreSQL's")
def test_an_enclosing_transaction_keeps_deferred_foreign_keys(felm_project, users):
    """After the import, a transaction around it defers its checks to its COMMIT again."""
    with transaction.atomic():
        import_jsonl(felm_project, jsonl([felm_line(1, ["A."])]), fmt="felm")
        item = Item.objects.get(project=felm_project)
        with connection.cursor() as cursor:  # broken for a moment, mended before the commit
            cursor.execute("UPDATE annotation_item SET project_id = %s WHERE id = %s", [10**9, item.id])
            cursor.execute("UPDATE annotation_item SET project_id = %s WHERE id = %s", [felm_project.id, item.id])
    assert Item.objects.get(pk=item.pk).project_id == felm_project.id
