"""The research pages: scoring automatic fact-checkers (upload a system's predictions, follow
their scoring, the leaderboard of each task) for the project's admins and consolidators (the
researchers of a campaign; annotators never see them: they show how systems fare on the gold),
the LLM rater for its admins (a run spends the project's LLM budget), and the agreement page
(read from the cache a Celery task fills) with its downloads.
Thin like annotation.views: access, selectors, services, templates.
"""

import json
from datetime import datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import selectors
from annotation.exceptions import DomainError, ImportFailed, UploadTooLarge
from annotation.exports.downloads import attachment, file_stem, table_csv
from annotation.imports.views import import_errors_text
from annotation.kinds import get_kind
from annotation.models import Role, SystemRun, SystemRunState
from annotation.pages import project_for
from annotation.params import parse_natural
from annotation.research import agreement_cache, plots, scoring
from annotation.research import leaderboard as boards
from annotation.research import llm_rater as rater_services
from annotation.research import predictions as prediction_services
from annotation.research import selectors as research_selectors
from annotation.research.agreement_tables import agreement_tables
from annotation.research.forms import PredictionsForm
from annotation.services import jobs

RESEARCHERS = {Role.ADMIN, Role.CONSOLIDATOR}
RECENT_RUNS = 10
DOWNLOADS = ("csv", "json")
YES, NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _flag(request, name: str) -> bool:
    raw = request.GET.get(name)
    if raw is None or raw.lower() in NO:
        return False
    if raw.lower() in YES:
        return True
    raise BadRequest(f"{name}: must be one of {', '.join(YES + NO[1:])}, not {raw[:40]!r}")


def _estimate(value: dict | None) -> dict:
    """{"value", "ci"} as the templates show them (_ci.html takes the interval as a pair)."""
    if not value:
        return {"value": None, "ci": None}
    low, high = value.get("low"), value.get("high")
    return {
        "value": value.get("value"),
        "ci": (low, high) if low is not None and high is not None else None,
    }


@login_required
def leaderboard_page(request, project_id):
    """The leaderboard of one task (``?task=``), on the units its paper's figures are over or on
    every gold unit (``?subset=paper|all``, the paper's by default where it has one), of those on
    the agreed ones (``?agreed=1``), with differences to a reference run (``?reference=``);
    ``?download=csv`` or ``json`` gives the table as a file."""
    project, _ = project_for(request, project_id, RESEARCHERS)
    raw_reference = request.GET.get("reference") or None
    reference = parse_natural(raw_reference) if raw_reference else None
    if raw_reference and reference is None:
        raise BadRequest(f"reference: must be a run id in digits 0-9, not {raw_reference[:40]!r}")
    agreed = _flag(request, "agreed")
    download = request.GET.get("download")
    if download is not None and download not in DOWNLOADS:
        raise BadRequest(f"download: must be one of {', '.join(DOWNLOADS)}, not {download[:40]!r}")
    task = request.GET.get("task") or None
    subset = request.GET.get("subset") or None
    if subset is not None and subset not in boards.SUBSETS:
        raise BadRequest(f"subset: must be one of {', '.join(boards.SUBSETS)}, not {subset[:40]!r}")
    while True:  # a reference or subset kept from another task: the page falls back to the default one
        try:
            board = boards.leaderboard(project, task, reference, agreed, subset)
            break
        except ValueError as error:
            problems = error.args[0]
            if not set(problems) <= {"reference", "subset"} or download is not None:
                raise BadRequest("; ".join(f"{name}: {message}" for name, message in problems.items()))
            if "reference" in problems:
                messages.info(
                    request, f"Run {reference} is not scored on these units: the reference is the best system."
                )
                reference = None
            if "subset" in problems:
                messages.info(request, "This task is scored on every unit only: the figures are over all of them.")
                subset = None
    if download is not None:
        return _download(project, board, download)
    for row in board["rows"]:
        row["cells"] = [_estimate(row["metrics"][m["name"]]) for m in board["metrics"]]
        row["other_cells"] = [_estimate(row["metrics"][m["name"]]) for m in board["other_metrics"]]
        row["difference_cells"] = [_estimate((row["difference"] or {}).get(d["name"])) for d in board["differences"]]
        row["model_cells"] = [
            {
                "model": m["model"],
                "paragraphs": m["paragraphs"],
                **{
                    side: next((v for k, v in m[side].items() if k.startswith("init")), None)
                    for side in ("human", "system", "difference")
                },
            }
            for m in row["models"]
        ]
        row["label_cells"] = [
            {
                "label": label,
                "support": scores["support"],
                **{m: _estimate(scores[m]) for m in ("precision", "recall", "f1")},
            }
            for label, scores in row["per_label"].items()
        ]
    plot = None
    if board["rows"]:
        primary = board["metrics"][0]
        paper = " (the paper's subset)" if board["subset"] == boards.PAPER else ""
        plot = plots.bar_chart(
            [
                {
                    "label": row["label"] + (" (baseline)" if row["kind"] == "baseline" else ""),
                    **row["metrics"][primary["name"]],
                }
                for row in board["rows"]
            ],
            title=f"{primary['title']}{' (agreed units)' if agreed else ''}{paper}, 95 % CI",
        )
    query = {"task": board["task"] or "", "agreed": "1" if agreed else "", "subset": board["subset"]}
    if reference is not None:
        query["reference"] = str(reference)
    for entry in board["subsets"]:  # each a click away, on the same task and agreed units
        entry["url"] = f"?{urlencode({'task': query['task'], 'agreed': query['agreed'], 'subset': entry['name']})}"
    return render(
        request,
        "annotation/leaderboard.html",
        {
            "project": project,
            "board": board,
            "plot": plot,
            "query": query,
            "downloads": {fmt: f"?{urlencode({**query, 'download': fmt})}" for fmt in DOWNLOADS},
            "has_models": any(row["models"] for row in board["rows"]),
            "form": PredictionsForm(),
            "runs": recent_runs(project),
            "stale": any(row["stale"] for row in board["rows"]),
            "line_shapes": line_shapes(project.kind),
        },
    )


def line_shapes(kind: str) -> list[dict]:
    """What a predictions line of each task of the kind holds: its key fields, its label field
    and the labels it takes (none listed: free text)."""
    return [
        {
            "title": task.title,
            "keys": task.key_fields,
            "field": task.field,
            "labels": [json.dumps(label) for label in task.vocabulary],
        }
        for task in scoring.task_definitions(kind).values()
    ]


def _download(project, board: dict, fmt: str):
    # the units the figures are over, where the task can be shown on others too
    subset = f"-{board['subset']}" if len(board["subsets"]) > 1 else ""
    agreed = "-agreed" if board["agreed"] else ""
    filename = f"{file_stem(project)}-leaderboard-{board['task'] or 'none'}{subset}{agreed}.{fmt}"
    if fmt == "csv":
        response = StreamingHttpResponse(boards.leaderboard_csv(board), content_type="text/csv; charset=utf-8")
    else:
        body = {"project": project.name, **board}
        response = HttpResponse(json.dumps(body, ensure_ascii=False, indent=1), content_type="application/json")
    return attachment(response, filename)


def recent_runs(project) -> list[dict]:
    """The last uploads with what the page says of them (the script follows running ones)."""
    return [
        {
            "run": run,
            "api_url": reverse("project-system-run", args=[project.id, run.id]),
            "errors": import_errors_text(run.errors) if run.state == SystemRunState.FAILED else "",
        }
        for run in boards.system_runs(project).defer("scores")[:RECENT_RUNS]
    ]


@login_required
@require_POST
def system_run_upload(request, project_id):
    """Store the predictions and queue their checking and scoring; back to the leaderboard,
    which follows the run until it ends."""
    project, _ = project_for(request, project_id, RESEARCHERS)
    form = PredictionsForm(request.POST, request.FILES)
    back = redirect("annotation:leaderboard", project_id=project.id)
    if not form.is_valid():
        messages.error(
            request,
            "Predictions refused: "
            + "; ".join(f"{field}: {message}" for field, errors in form.errors.items() for message in errors),
        )
        return back
    data = form.cleaned_data
    try:
        run = prediction_services.create_system_run(
            project=project,
            user=request.user,
            upload=data["file"],
            system=data["system"],
            version=data["version"],
            resamples=data["resamples"],
            seed=data["seed"],
            replace=data["replace"],
            domain=data["domain"],
        )
    except (ImportFailed, UploadTooLarge) as exc:
        errors = getattr(exc, "errors", None)
        messages.error(request, f"Predictions refused: {import_errors_text(errors) if errors else exc}")
        return back
    run.refresh_from_db()  # without a broker the task has already run
    name = f"{run.system} {run.version}".strip()
    if run.state == SystemRunState.DONE:
        messages.success(request, f"{name} is scored.")
    elif run.state == SystemRunState.FAILED:
        messages.error(request, f"{name} was not scored, nothing was stored: {import_errors_text(run.errors)}")
    else:
        messages.info(request, f"{name} is being checked and scored: its progress is shown under Uploads.")
    return back


@login_required
@require_POST
def system_run_delete(request, project_id, run_id):
    project, _ = project_for(request, project_id, RESEARCHERS)
    run = get_object_or_404(SystemRun.objects.defer("predictions"), pk=run_id, project=project)
    prediction_services.delete_system_run(run)
    messages.success(request, f"{f'{run.system} {run.version}'.strip()} and its scores are deleted.")
    return redirect("annotation:leaderboard", project_id=project.id)


@login_required
@require_POST
def system_runs_rescore(request, project_id):
    """Score every scored run again on the current gold (after more items were consolidated)."""
    project, _ = project_for(request, project_id, RESEARCHERS)
    count = prediction_services.rescore_system_runs(project)
    messages.success(
        request,
        f"{count} run{'s' if count != 1 else ''} queued to be scored again on the current gold."
        if count
        else "No scored run to score again.",
    )
    return redirect("annotation:leaderboard", project_id=project.id)


@login_required
def llm_rater_page(request, project_id):
    """Estimate an LLM rater run (GET with the options), start it once confirmed (POST), and
    follow its runs: admins only (a run spends the project's LLM budget)."""
    project, _ = project_for(request, project_id, {Role.ADMIN})
    if request.method == "POST":
        try:
            options = rater_services.parse_options(project, request.user, _rater_data(request.POST))
            run = rater_services.start_run(
                project=project,
                user=request.user,
                options=options,
                confirmed=request.POST.get("confirm") == "yes",
            )
        except DomainError as exc:
            messages.error(request, f"The run did not start: {exc}.")
        else:
            run.refresh_from_db()  # without a broker the task has already run
            messages.success(
                request,
                f"{run.system} {run.version}: {'done' if run.ended else 'started, its progress is shown below'}.",
            )
        return redirect("annotation:llm-rater", project_id=project.id)
    data = _rater_data(request.GET)
    option_errors, estimate, options = {}, None, None
    try:
        options = rater_services.parse_options(project, request.user, data)
    except rater_services.RaterOptionsError as exc:
        option_errors = exc.errors
    if options is not None and "estimate" in request.GET:
        estimate = rater_services.estimate(project, options)
    shown = options or rater_services.RaterOptions(steps=get_kind(project.kind).rated_steps)
    config = rater_services.rater_config(project, shown)
    # With the run's status: running, waiting for a worker, or stalled (with its restart address).
    runs = [
        {
            **rater_services.run_summary(run),
            **jobs.status(run),
            "restart_url": reverse("api-job-restart", args=["llm-rater", run.id]),
        }
        for run in rater_services.rater_runs(project)[:20]
    ]
    from pipeline.llm import usable  # loads the openai client: only where an LLM is called
    from pipeline.llm_rater import CALL_KINDS  # with the openai client, as above

    kind = get_kind(project.kind)
    context = {
        "project": project,
        "values": shown,
        "option_errors": option_errors,
        "estimate": estimate,
        "runs": runs,
        "refresh": any(not run["ended"] for run in runs),
        "can_choose_endpoint": selectors.can_change_llm_settings(request.user),
        "endpoint": {
            "configured": usable(config),
            "name": rater_services.endpoint_name(config.base_url),
            "model": config.model,
            "concurrency": config.concurrency,
        },
        "rated_steps": [
            {
                "number": step,
                "checked": step in shown.steps,
                "label": f"Step {step}" if len(kind.stages) > 1 else "All items",
            }
            for step in get_kind(project.kind).rated_steps
        ],
        "rated_steps_text": ", ".join(f"step {s}" for s in get_kind(project.kind).rated_steps),
    }
    if estimate is not None:
        context["estimate_calls"] = [
            {"kind": kind_name, "label": CALL_KINDS[kind_name], "count": count}
            for kind_name, count in estimate["calls"].items()
        ]
        context["duration"] = _duration(estimate["seconds"])
        context["hidden_options"] = [("steps", step) for step in shown.steps] + [
            (name, value) for name, value in data.items() if name != "steps" and value not in (None, "")
        ]
    return render(request, "annotation/llm_rater.html", context)


RATER_FIELDS = (
    "model",
    "base_url",
    "seconds_per_call",
    "prompt_price_per_1k",
    "completion_price_per_1k",
)


def _rater_data(query) -> dict:
    """The rater options of a form's query or body (steps may repeat)."""
    return {"steps": query.getlist("steps"), **{name: query.get(name) for name in RATER_FIELDS}}


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{round(seconds)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


@login_required
def agreement_page(request, project_id):
    """The agreement of one step, read from the cache a Celery task fills (research.agreement_cache):
    on a miss the page shows the task's progress (and the point estimates once stored) and
    updates itself; downloads wait for the full result (409 meanwhile)."""
    project, stage, resamples, seed, problem = _agreement_request(request, project_id)
    download = request.GET.get("download")
    if problem is not None:
        if download is not None:
            return _bad_download(problem)
        raise BadRequest(problem)
    if download is not None and download not in AGREEMENT_DOWNLOADS:
        return _bad_download(f"download: must be one of {', '.join(AGREEMENT_DOWNLOADS)}, not {download[:40]!r}")
    found = agreement_cache.lookup(project, stage, resamples, seed)
    if download is not None:
        if not found.ready:
            return _agreement_not_ready(found, resamples)
        rater = found.result["rater_agreement"] if request.GET.get("table") == "llm_rater" else None
        return _agreement_download(request, project, found.result["agreement"], download, rater)
    kind = get_kind(project.kind)
    shown = found.result or found.points
    result = shown["agreement"] if shown else None
    rater = shown["rater_agreement"] if shown else None
    # the download links keep the page's step and bootstrap options
    keep = request.GET.copy()
    for name in ("download", "table", "field"):
        keep.pop(name, None)

    def links(table, field=None):
        if not found.ready:  # offered once the numbers they hold are all there
            return {}
        query = keep.copy()
        query["table"] = table
        if field is not None:
            query["field"] = field
        return {fmt: f"?{query.urlencode()}&download={fmt}" for fmt in AGREEMENT_DOWNLOADS}

    for name, field in (result or {}).get("fields", {}).items():
        matrix = field["confusion_matrix"]
        peak = (
            max(
                (v for row in matrix["rows_annotator_a_columns_annotator_b"] for v in row),
                default=0,
            )
            or 1
        )
        field["matrix_columns"] = [kind.value_name(label) for label in matrix["labels"]]
        field["matrix_rows"] = [
            {"label": label, "cells": [{"value": v, "shade": round(v / peak, 2)} for v in row]}
            for label, row in zip(field["matrix_columns"], matrix["rows_annotator_a_columns_annotator_b"])
        ]
        field["plots"] = plots.agreement_figures(field, kind.value_name)
        field["downloads"] = {table: links(table, name) for table in ("matrix", "pairs", "over_time", "versus_gold")}
    downloads = {table: links(table) for table in agreement_tables(result, rater)} if found.ready else {}
    status_query = keep.copy()
    status_query.setlist("stage", [str(stage)])
    # one link per step, keeping the bootstrap options
    steps = []
    for number in kind.annotatable_stages:
        step_query = keep.copy()
        step_query.setlist("stage", [str(number)])
        steps.append({"number": number, "url": f"?{step_query.urlencode()}", "current": number == stage})
    return render(
        request,
        "annotation/agreement.html",
        {
            "project": project,
            "stage": stage,
            "agreement": result,
            "downloads": downloads,
            "several_steps": len(kind.annotatable_stages) > 1,
            "steps": steps,
            "rater_agreement": rater,
            "requested": {"resamples": resamples, "seed": seed},
            "computed": {
                "at": datetime.fromisoformat(found.result["computed_at"]),
                "seconds": found.result["seconds"],
            }
            if found.ready
            else None,
            "computing": None if found.ready else found.status(),
            "status_url": f"{reverse('annotation:agreement-status', args=[project.id])}?{status_query.urlencode()}",
        },
    )


@login_required
def agreement_status(request, project_id):
    """How far the computation of the agreement page's numbers is (the page polls it): JSON
    ``{"state": queued|running|ready|failed, "points", "done", "total", "step", "error"}``."""
    project, stage, resamples, seed, problem = _agreement_request(request, project_id)
    if problem is not None:
        return JsonResponse({"detail": problem}, status=400)
    return JsonResponse(agreement_cache.lookup(project, stage, resamples, seed, poll=True).status())


def _agreement_request(request, project_id):
    """The project (admins and consolidators), step and bootstrap options of an agreement
    request; ``problem`` names a bad option (a step the kind does not have is a 404)."""
    project, _ = project_for(request, project_id, {Role.ADMIN, Role.CONSOLIDATOR})
    stage = research_selectors.annotated_stage(project, request.GET.get("stage"))
    if stage is None:
        annotatable = get_kind(project.kind).annotatable_stages
        raise Http404(
            f"{project.get_kind_display()} projects are annotated in stage "
            f"{', '.join(map(str, annotatable))} only, not {request.GET['stage']!r}"
        )
    try:
        resamples, seed = research_selectors.bootstrap_options(request.GET.get("resamples"), request.GET.get("seed"))
    except ValueError as error:
        return (
            project,
            stage,
            None,
            None,
            "; ".join(f"{name}: {message}" for name, message in error.args[0].items()),
        )
    return project, stage, resamples, seed, None


def _agreement_not_ready(found, resamples: int) -> HttpResponse:
    """A download asked before its numbers are stored: 409 with what is going on, and when to
    ask again (the computation is queued by this request if it was not already)."""
    if found.state == "failed":
        message = f"The agreement could not be computed: {found.error}. Try again in a few minutes."
    else:
        what = f"with {resamples:,}-resample bootstrap intervals " if resamples else ""
        progress = f" ({found.progress['step']})" if found.progress and found.progress.get("step") else ""
        message = (
            f"The agreement numbers {what}are being computed{progress}. "
            "Download again in a few seconds; the agreement page shows when they are ready."
        )
    response = HttpResponse(message + "\n", status=409, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(agreement_cache.FAILURE_SECONDS if found.state == "failed" else 5)
    return response


AGREEMENT_DOWNLOADS = ("csv", "json")


def _bad_download(message: str) -> HttpResponse:
    """A 400 that says what is wrong (Django's 400 page cannot: it never sees the exception)."""
    return HttpResponse(f"Bad request: {message}\n", status=400, content_type="text/plain; charset=utf-8")


def _agreement_download(request, project, result: dict, fmt: str, rater: dict | None) -> HttpResponse:
    """One table of the agreement page (``?table=``, optionally one field's rows: ``?field=``) as
    a CSV or JSON file named after the project, step and table."""
    tables = agreement_tables(result, rater)
    name, field = request.GET.get("table", ""), request.GET.get("field")
    if name not in tables:
        return _bad_download(f"table: must be one of {', '.join(tables)}, not {name[:40]!r}")
    table, rows = tables[name], tables[name]["rows"]
    if field is not None:
        if not table["per_field"] or field not in result["fields"]:
            return _bad_download(
                f"field: the {name} table has no field {field[:40]!r}"
                + (f" (fields: {', '.join(result['fields'])})" if table["per_field"] else "")
            )
        rows = [row for row in rows if row[0] == field]
    filename = f"{file_stem(project)}-step{result['stage']}-agreement-{name}{f'-{field}' if field else ''}.{fmt}"
    if fmt == "csv":
        response = HttpResponse(table_csv(table["columns"], rows), content_type="text/csv; charset=utf-8")
    else:
        response = JsonResponse(
            {
                "project": project.name,
                "step": result["stage"],
                "table": name,
                "title": table["title"],
                "field": field,
                "bootstrap": result["bootstrap"],
                "columns": table["columns"],
                "rows": [dict(zip(table["columns"], row)) for row in rows],
            }
        )
    return attachment(response, filename)
