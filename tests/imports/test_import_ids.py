"""External ids are unique within a domain (issue 29): FELM's five domain files, each numbered
from "0", import into one project with their domains; an id used again in the same domain, or by
an item without a domain, refuses the line naming its line and field, for every kind."""

import pytest

from annotation.exceptions import ImportFailed
from annotation.imports.items import import_jsonl
from annotation.models import Item
from annotation.services.projects import create_project
from tests.helpers.builders import jsonl
from tests.helpers.felm_release import (
    DOMAIN_LINES,
    domain_file_lines,
    import_domain_files,
    lines_of,
    math_line,
    released_file,
)

pytestmark = pytest.mark.django_db


def felm_file(*records) -> list[bytes]:
    return lines_of(released_file(*records))


def test_the_five_domain_files_import_into_one_project_each_with_its_domain(felm_project):
    files = import_domain_files(felm_project, count=3)
    assert Item.objects.count() == 15
    stored = sorted(Item.objects.values_list("domain", "external_id"))
    assert stored == sorted((domain, str(n)) for domain in DOMAIN_LINES for n in range(3))
    assert sorted(files) == sorted(DOMAIN_LINES)


def test_a_domain_file_imported_again_is_skipped_as_exact_duplicates(felm_project):
    import_domain_files(felm_project)
    result = import_jsonl(felm_project, felm_file(*domain_file_lines("math")), fmt="felm", domain="math")
    assert (result.items, result.duplicates_skipped) == (0, 2)


def test_an_index_used_again_in_the_same_domain_refuses_the_file_naming_line_and_field(felm_project):
    import_domain_files(felm_project)
    other = {**math_line(), "index": "1", "prompt": "What is 3 + 3?"}
    new = {**math_line(), "index": "2", "prompt": "What is 4 + 4?"}
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, felm_file(new, other), fmt="felm", domain="math")
    assert failed.value.errors == [
        {
            "line": 2,
            "field": "index",
            "message": "'1' is already the id of an item imported before, of domain 'math': an id is unique "
            "within its domain, and an item without a domain shares its id with no other; give each item "
            "of a domain its own id",
        }
    ]
    assert Item.objects.count() == 10  # nothing of the file written


def test_domain_files_imported_without_their_domains_are_refused_saying_to_give_them(felm_project):
    import_jsonl(felm_project, felm_file(*domain_file_lines("wk")), fmt="felm")
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, felm_file(*domain_file_lines("math")), fmt="felm")
    assert [(e["line"], e["field"]) for e in failed.value.errors] == [(1, "index"), (2, "index")]
    assert "which has no domain" in failed.value.errors[0]["message"]
    assert "the import's domain option, e.g. math for math.jsonl" in failed.value.errors[0]["message"]
    # with its domain the second file still clashes: the first file's items have none
    with pytest.raises(ImportFailed):
        import_jsonl(felm_project, felm_file(*domain_file_lines("math")), fmt="felm", domain="math")
    assert Item.objects.count() == 2


def test_an_item_without_a_domain_may_not_share_the_id_of_an_item_with_one(felm_project):
    import_jsonl(felm_project, felm_file(*domain_file_lines("math")), fmt="felm", domain="math")
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, felm_file(*domain_file_lines("wk", 1)), fmt="felm")
    assert failed.value.errors[0]["line"] == 1 and "of domain 'math'" in failed.value.errors[0]["message"]


def test_within_a_file_the_second_line_of_an_id_is_named_with_the_first(felm_project):
    wk, math = domain_file_lines("wk", 1)[0], domain_file_lines("math", 1)[0]
    records = [{**wk, "domain": "wk"}, {**math, "domain": "math"}, {**wk, "prompt": "Other?", "domain": "wk"}]
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, felm_file(*records), fmt="felm")
    error = failed.value.errors[0]
    assert (error["line"], error["field"]) == (3, "index")
    assert error["message"].startswith("'0' is already the id of the item on line 1, of domain 'wk'")
    # on_error=skip leaves the line out and lists it; the two domains' "0" are imported
    result = import_jsonl(felm_project, felm_file(*records), fmt="felm", on_error="skip")
    assert (result.items, result.skipped_lines, result.skipped) == (2, 1, [error])


def test_a_clash_with_an_earlier_batch_of_the_same_file_is_found(felm_project, monkeypatch):
    from annotation.imports import items as import_services

    monkeypatch.setattr(import_services, "BATCH_SIZE", 2)
    records = [*domain_file_lines("wk", 3), {**domain_file_lines("wk", 1)[0], "prompt": "Again?"}]
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(felm_project, felm_file(*records), fmt="felm", domain="wk")
    assert [(e["line"], e["field"]) for e in failed.value.errors] == [(4, "index")]
    assert Item.objects.count() == 0


@pytest.mark.parametrize(
    "kind, fmt, line",
    [
        ("factcheck", "plain", lambda n: {"id": "q1", "prompt": f"Q{n}?", "response": f"Answer {n}."}),
        (
            "dfactscore",
            "dfactscore",
            lambda n: {
                "id": "g1",
                "prompt": f"Tell me a bio of Ann {n}.",
                "name": "Ann",
                "response": f"Ann was born in 190{n}.",
                "atomic_facts": [f"Ann was born in 190{n}."],
                "candidates": [{"title": "Ann", "url": "https://example.org/ann", "text": "Ann was born in 1901."}],
            },
        ),
    ],
)
def test_every_kind_refuses_an_id_used_twice_and_takes_it_in_two_domains(users, kind, fmt, line):
    project = create_project(name=f"{kind} ids", kind=kind, created_by=users["admin"])
    with pytest.raises(ImportFailed) as failed:
        import_jsonl(project, jsonl([line(1), line(2)]), fmt=fmt)
    assert [(e["line"], e["field"]) for e in failed.value.errors] == [(2, "id")]
    import_jsonl(project, jsonl([line(1)]), fmt=fmt, domain="first")
    import_jsonl(project, jsonl([line(2)]), fmt=fmt, domain="second")
    assert sorted(Item.objects.filter(project=project).values_list("domain", "external_id")) == [
        ("first", line(1)["id"]),
        ("second", line(2)["id"]),
    ]
