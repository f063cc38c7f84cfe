"""Reads of the exports wing: what the exports hold, the gold rows and submitted annotations
they are written from, stored lines and their stamps, and agreement units."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import groupby, islice

from django.db import connection
from django.db.models import Count

from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    AssignmentRole,
    ExportLine,
    GoldRecord,
    Item,
    ItemStage,
    Project,
    StageStatus,
)


def export_summary(project: Project) -> dict:
    """How many items the consolidated exports hold and why the others are left out.

    An export has one record per item whose first step has a gold record (gold_rows); later
    steps are joined where done. ``complete`` counts the items with every step done."""
    kind = get_kind(project.kind)
    first, last = min(kind.stages), max(kind.stages)
    by_status = dict(
        ItemStage.objects.filter(item__project=project, stage=first)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    exported = GoldRecord.objects.filter(
        item_stage__item__project=project,
        item_stage__stage=first,
        item_stage__status=StageStatus.DONE,
    ).count()
    discarded = by_status.get(StageStatus.DISCARDED, 0)
    items = project.items.count()
    annotations = dict(
        Annotation.objects.filter(assignment__item_stage__item__project=project)
        .values_list("submitted")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {
        "items": items,
        "exported": exported,
        "discarded": discarded,
        "not_consolidated": items - exported - discarded,
        "complete": (
            GoldRecord.objects.filter(
                item_stage__item__project=project,
                item_stage__stage=last,
                item_stage__status=StageStatus.DONE,
            ).count()
            if last != first
            else exported
        ),
        "steps": len(kind.stages),
        "annotations": annotations.get(True, 0),
        "drafts": annotations.get(False, 0),
    }


# -- export -----------------------------------------------------------------------------------

# Small chunks keep a Factcheck-Bench archive export's peak in a web worker low (its items are
# large) for the same CPU time as larger ones (issue 22, benchmarks/README.md)
LATER_STAGES_CHUNK = 50


def gold_rows(
    project: Project,
    stage: int = 1,
    later_stages: Iterable[int] = (),
    metadata: bool = True,
    item_ids: Iterable[int] | None = None,
) -> Iterator[dict]:
    """Consolidated items of a project, one plain dict each, streamed from the database.

    With ``later_stages``, each row also has ``stages``: {stage: {"content", "gold"}} for those of
    the item's later stages that are done, fetched per chunk of rows (small chunks: a step-2
    content holds every evidence passage). ``metadata=False`` leaves the items' metadata out
    (``row["metadata"]`` is empty) where the export does not write it; ``item_ids`` keeps to those items."""
    rows = _gold_rows(project, stage, metadata, item_ids)
    later_stages = list(later_stages)
    if not later_stages:
        yield from rows
        return
    while chunk := list(islice(rows, LATER_STAGES_CHUNK)):
        later: dict[int, dict] = defaultdict(dict)
        done = GoldRecord.objects.filter(
            item_stage__item_id__in=[row["item_id"] for row in chunk],
            item_stage__stage__in=later_stages,
            item_stage__status=StageStatus.DONE,
        ).values_list("item_stage__item_id", "item_stage__stage", "item_stage__content", "payload")
        for item_id, number, content, payload in done:
            later[item_id][number] = {"content": content, "gold": payload}
        for row in chunk:
            row["stages"] = later.get(row["item_id"], {})
            yield row


def _gold_rows(
    project: Project, stage: int, metadata: bool = True, item_ids: Iterable[int] | None = None
) -> Iterator[dict]:
    fields = [
        "payload",
        "item_stage__content",
        "item_stage__item_id",
        "item_stage__item__external_id",
        "item_stage__item__source",
        "item_stage__item__domain",
        "item_stage__item__prompt",
        "item_stage__item__response",
    ]
    queryset = (
        GoldRecord.objects.filter(
            item_stage__item__project=project,
            item_stage__stage=stage,
            item_stage__status=StageStatus.DONE,
        )
        .order_by("item_stage__item_id")
        .values(*fields, *(["item_stage__item__metadata"] if metadata else []))
    )
    if item_ids is not None:
        queryset = queryset.filter(item_stage__item_id__in=list(item_ids))
    for row in queryset.iterator(chunk_size=2000):
        yield {
            "item_id": row["item_stage__item_id"],
            "external_id": row["item_stage__item__external_id"],
            "source": row["item_stage__item__source"],
            "domain": row["item_stage__item__domain"],
            "prompt": row["item_stage__item__prompt"],
            "response": row["item_stage__item__response"],
            "metadata": row.get("item_stage__item__metadata") or {},
            "content": row["item_stage__content"],
            "gold": row["payload"],
        }


def _stamps_sql(item_filter: str) -> str:
    """Per item: md5 of the renderer version and of the item's row, steps and gold records as
    last written (ids and ``xmin``, the transaction that wrote each row version) — see ExportLine."""
    item, stage, gold = Item._meta.db_table, ItemStage._meta.db_table, GoldRecord._meta.db_table
    return f"""
        SELECT i.id AS item_id,
               md5(%(version)s || i.xmin::text || ':' || string_agg(
                   s.id::text || '.' || s.xmin::text || '.' || coalesce(g.id::text || '.' || g.xmin::text, ''),
                   ',' ORDER BY s.id)) AS stamp
        FROM {item} i JOIN {stage} s ON s.item_id = i.id LEFT JOIN {gold} g ON g.item_stage_id = s.id
        WHERE {item_filter}
        GROUP BY i.id"""


def export_stamps(item_ids: list[int], version: str) -> dict[int, str]:
    """The current stamp of each of these items (PostgreSQL only)."""
    if not item_ids:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_stamps_sql("i.id = ANY(%(ids)s)"), {"version": version, "ids": list(item_ids)})
        return dict(cursor.fetchall())


def stored_export_lines(
    project: Project, fmt: str, version: str, chunk: int = 500
) -> Iterator[list[tuple[int, str | None]]]:
    """Chunks of (item id, stored line — None when missing or stale) for each item the gold
    export holds (its first step consolidated), in item order (PostgreSQL only)."""
    stage, gold, line = (
        ItemStage._meta.db_table,
        GoldRecord._meta.db_table,
        ExportLine._meta.db_table,
    )
    sql = f"""
        WITH stamps AS ({_stamps_sql("i.project_id = %(project)s")})
        SELECT st.item_id, e.line
        FROM stamps st
        JOIN {stage} s1 ON s1.item_id = st.item_id AND s1.stage = %(first)s AND s1.status = %(done)s
        JOIN {gold} g1 ON g1.item_stage_id = s1.id
        LEFT JOIN {line} e ON e.item_id = st.item_id AND e.format = %(format)s AND e.stamp = st.stamp
        ORDER BY st.item_id"""
    params = {
        "version": version,
        "project": project.id,
        "first": get_kind(project.kind).stages[0],
        "done": StageStatus.DONE,
        "format": fmt,
    }
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(chunk):
            yield rows


def annotation_rows(project: Project) -> Iterator[dict]:
    """Every annotator's submitted annotation, for agreement studies outside the app."""
    queryset = (
        Annotation.objects.filter(submitted=True, assignment__item_stage__item__project=project)
        .order_by("assignment__item_stage__item_id", "assignment__item_stage__stage", "assignment_id")
        .values(
            "payload",
            "version",
            "updated_at",
            "assignment__user__username",
            "assignment__role",
            "assignment__started_at",
            "assignment__submitted_at",
            "assignment__active_seconds",
            "assignment__item_stage__stage",
            "assignment__item_stage__content",
            "assignment__item_stage__item_id",
            "assignment__item_stage__item__external_id",
        )
    )
    for row in queryset.iterator(chunk_size=2000):
        yield {
            "item_id": row["assignment__item_stage__item_id"],
            "external_id": row["assignment__item_stage__item__external_id"],
            "stage": row["assignment__item_stage__stage"],
            "annotator": row["assignment__user__username"],
            "role": row["assignment__role"],
            "content": row["assignment__item_stage__content"],
            "payload": row["payload"],
            "version": row["version"],
            "started_at": _iso(row["assignment__started_at"]),
            "submitted_at": _iso(row["assignment__submitted_at"]),
            "active_seconds": row["assignment__active_seconds"],
            # False: one of the items outside the overlap share, whose one submission is its gold record
            "double_annotated": project.is_overlap_item(row["assignment__item_stage__item_id"]),
        }


def _iso(value):
    return value.isoformat() if value else None


UNIT_ROWS_CHUNK = 250


def agreement_unit_rows(project: Project, stage: int | None = None) -> Iterator[dict]:
    """Each item-stage with submitted annotations, in item and step order: its content, each
    annotator's payload by username (assignment order, so a third rater comes last), the third
    rater's username, and the gold record's payload (None until the step is consolidated).
    Contents and gold records are fetched per chunk of item-stages (a step-2 content is large).
    ``stage``: that step's item-stages only."""
    annotations = (
        Annotation.objects.filter(
            submitted=True,
            assignment__item_stage__item__project=project,
            **({"assignment__item_stage__stage": stage} if stage is not None else {}),
        )
        .order_by("assignment__item_stage__item_id", "assignment__item_stage__stage", "assignment_id")
        .values_list("assignment__item_stage_id", "assignment__user__username", "assignment__role", "payload")
        .iterator(chunk_size=2000)
    )
    groups = ((stage_id, list(rows)) for stage_id, rows in groupby(annotations, key=lambda row: row[0]))
    while chunk := list(islice(groups, UNIT_ROWS_CHUNK)):
        ids = [stage_id for stage_id, _ in chunk]
        stages = {
            row[0]: row[1:]
            for row in ItemStage.objects.filter(id__in=ids).values_list(
                "id", "stage", "content", "item_id", "item__external_id"
            )
        }
        gold = dict(
            GoldRecord.objects.filter(item_stage_id__in=ids, item_stage__status=StageStatus.DONE).values_list(
                "item_stage_id", "payload"
            )
        )
        for stage_id, rows in chunk:
            stage, content, item_id, external_id = stages[stage_id]
            yield {
                "item_id": item_id,
                "external_id": external_id,
                "stage": stage,
                "content": content,
                "payloads": {username: payload for _, username, _, payload in rows},
                "third_rater": next(
                    (username for _, username, role, _ in rows if role == AssignmentRole.THIRD_RATER),
                    None,
                ),
                "gold": gold.get(stage_id),
            }
