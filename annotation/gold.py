"""The consolidated gold of a project as plain rows: what the exports render and research scores.
A read of the workflow core (the exports and research wings import it); in a module of its own
because its code is on the path that renders stored export lines, whose version is a digest of
every module on that path (annotation.exports.lines.renderer_version)."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from itertools import islice

from annotation.models import GoldRecord, Project, StageStatus

# 50: a Factcheck-Bench archive export of 200 released-shape items peaked at +8 MiB in a web
# worker, +19 MiB with chunks of 250, for the same CPU time (issue 22)
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
