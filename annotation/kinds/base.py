"""The interface every project kind implements."""

import sys
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator


class PayloadError(Exception):
    """An annotation payload that does not fit the stage's schema.

    ``errors`` is a list of ``{"field": "segments[2].error_type", "message": "..."}``.
    """

    def __init__(self, errors: list[dict[str, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{e['field']}: {e['message']}" for e in errors))


class ImportLineError(Exception):
    """A line of an import file that cannot be read; names the line and the field."""

    def __init__(self, line: int, field: str, message: str, *, more: tuple[tuple[str, str], ...] = ()):
        self.line, self.field, self.message = line, field, message
        self.more = more  # further (field, message) pairs wrong on the same line
        super().__init__(f"line {line}, field {field!r}: {message}")


@dataclass
class ParsedItem:
    """One import line turned into plain data, ready to be written."""

    line: int
    prompt: str
    response: str
    external_id: str = ""
    # the import field the external id was read from (errors about its value name it)
    id_field: str = "id"
    source: str = ""
    domain: str = ""
    metadata: dict = field(default_factory=dict)
    # stage number → canonical content given by the file (None: the pipeline computes it)
    content: dict[int, dict] = field(default_factory=dict)
    # stage number → labels carried by the file (used as gold or suggestion)
    labels: dict[int, dict] = field(default_factory=dict)
    # stage number → machine pre-annotation carried by the file (e.g. the original tool's claims)
    suggestions: dict[int, dict] = field(default_factory=dict)
    # (field, message): what was read otherwise than given (cut, defaulted), said with the result
    warnings: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class MergeResult:
    """A consolidation's starting point."""

    draft: dict
    disagreed: list[str]
    alignment: Any = None


@dataclass
class AgreementItem:
    """One item-stage's annotations, for kind-specific agreement numbers."""

    payloads: dict[Hashable, dict]
    suggestion: dict | None = None


# The gold record's key among the raters handed to agreement_unit_values (never a username).
GOLD_RATER = object()

_url_validator = URLValidator(schemes=["http", "https"])


def is_valid_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        _url_validator(value)
    except ValidationError:
        return False
    return True


class KindSpec:
    """Describes one project kind. Subclasses fill in the data-specific parts."""

    key: str = ""
    stages: tuple[int, ...] = (1,)
    # stages with an annotation page; later stages open but wait until theirs is built
    annotatable_stages: tuple[int, ...] = (1,)
    # stages whose consolidation may add a third rater (Project.third_rater says when)
    third_rater_stages: tuple[int, ...] = ()
    # a fixed list of item domains, named in the import form (FELM's released files are named after them)
    domains: tuple[str, ...] = ()
    # whether annotators search the project's evidence (corpora, web) from their pages
    searches_evidence: bool = False
    # stages whose units' evidence an admin can retrieve again one unit at a time
    retrievable_stages: tuple[int, ...] = ()
    # -- research: what scoring, the LLM rater and its agreement need of the kind -------------
    # steps an LLM rater answers (services.llm_rater); per step, the agreement fields its
    # answers give → the scoring task whose predictions hold them (rater_agreement)
    rated_steps: tuple[int, ...] = ()
    rated_fields: dict[int, dict[str, str]] = {}
    # whether the LLM rater reads the items' metadata (D-FActScore's candidate pages live there)
    rater_reads_metadata: bool = False
    # whether the project page shows scores of the consolidated items (consolidated_scores)
    has_paragraph_scores: bool = False
    # the section of a project's pipeline settings the kind owns (e.g. "dfactscore"), checked by
    # settings_section_error; None: the kind has no settings of its own
    settings_section: str | None = None

    def settings_section_error(self, section: Any) -> str | None:
        """Why the kind's settings section (the value under ``settings_section``) is wrong, or None."""
        return None

    def consolidated_scores(self, rows: Iterable[tuple], settings: dict | None, paragraph_limit: int = 500) -> dict:
        """Scores of the consolidated step-1 items; ``rows``: (item id, external id, source, content,
        suggestion, gold payload), in item order (selectors.consolidated_scores reads them)."""
        raise NotImplementedError

    def page_extras(self, settings_of: Callable[[], dict | None]) -> dict:
        """What the annotation page's state adds for this kind (``settings_of()``: the project's
        pipeline settings, read only when needed)."""
        return {}

    def scoring_tasks(self) -> dict:
        """The kind's scoring tasks (name → annotation.kinds.research.Task), without gold units."""
        return {}

    def gold_units(self, tasks: dict, rows_of: Callable[..., Iterable[dict]], settings: dict) -> None:
        """Fill ``tasks`` (fresh from scoring_tasks) with the gold units of the consolidated items.
        ``rows_of(**options)`` reads them (annotation.gold.gold_rows of the project); ``settings``: the
        project's pipeline settings."""

    def existing_units(self, rows_of: Callable[..., Iterable[dict]]) -> set[tuple]:
        """Every unit of the consolidated items, labelled in the gold or not, keyed as the
        exports name them (see scoring.existing_units)."""
        return set()

    # The LLM rater (services.llm_rater): each item-step it rates is a dict of "prompt",
    # "response", "content", "suggestion", "gold" (the gold payload) and "metadata" ({} unless
    # rater_reads_metadata).
    def rater_batch_size(self) -> int:
        """How many item-steps one rater call takes (rate gets lists of this length at most)."""
        return 1

    def rater_plan(self, step: int, items: list[dict], settings: dict) -> list:
        """The LLM calls rating ``items`` would make (pipeline.llm_rater batches), for the estimate."""
        return []

    def rate(self, step: int, items: list[dict], settings: dict, config) -> list:
        """One rating per item (pipeline.llm_rater's answers), calling the LLM ``config`` names."""
        raise NotImplementedError(f"{self.key} projects have no LLM rater")

    @property
    def folder(self) -> Path:
        """The kind's folder (annotation/kinds/<key>/, the package of its spec): its page,
        templates, page scripts and guidelines."""
        return Path(sys.modules[type(self).__module__].__file__).parent

    def guidelines_template(self) -> str:
        """The Markdown a new project of this kind starts its guidelines with: the label
        definitions of the kind's paper (``guidelines.md`` in its folder; none without a file)."""
        path = self.folder / "guidelines.md"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def split_field(self, stage: int) -> str | None:
        """The content field holding the units an admin may re-split before annotation starts
        (e.g. "sentences"), or None where the stage's units come from an earlier step."""
        return None

    def stage_guideline(self, stage: int) -> str:
        """A line of guidance the stage's page shows above the editor (none by default)."""
        return ""

    def retrieve_unit(self, stage: int, content: dict, index: int, settings: dict, evidence_search: Callable) -> dict:
        """The unit ``index`` of ``content`` with its evidence retrieved again (plain data)."""
        raise NotImplementedError

    def clear_unit_answer(self, stage: int, content: dict, payload: dict, index: int) -> dict:
        """A draft payload after unit ``index`` got new evidence: the answers about the old
        evidence are cleared, the rest is kept."""
        raise NotImplementedError

    import_formats: tuple[str, ...] = ()
    # formats whose file is one JSON document (an object or a list of them), not JSONL
    document_formats: tuple[str, ...] = ()
    # format → top-level fields that may hold NaN or ±Infinity, read by parse_import_line itself
    # (a released FELM line's NaN response); anywhere else such a number refuses the line
    import_non_finite_fields: dict[str, tuple[str, ...]] = {}
    export_formats: tuple[str, ...] = ()
    # fields whose labels are ordered (field → labels from one end to the other): shown in that
    # order, with Krippendorff's α for ordinal data beside the nominal one
    ordinal_fields: dict[str, tuple[str, ...]] = {}
    # field name → human label; the agreement page reports these fields in this order
    # (kinds whose stages ask different things override agreement_fields_for)
    agreement_fields: dict[str, str] = {}
    # label codes whose name for people is not the code spelt out (see value_name)
    value_names: dict[str, str] = {}
    # later stages whose gold records the export joins to each row (row["stages"][n])
    export_later_stages: tuple[int, ...] = ()
    # whether export_lines reads row["metadata"] (fetching it costs where it is large)
    export_reads_metadata: bool = True
    # item metadata keys the item list leaves out: large values only the kind's own steps and
    # exports read (e.g. Factcheck-Bench's released evidence, about 35 KB an item)
    export_only_metadata: tuple[str, ...] = ()
    # JSONL export formats whose lines are stored per item once rendered (see ExportLine)
    stored_export_formats: tuple[str, ...] = ()

    def renders_line_from_import(self, fmt: str, row: dict) -> bool:
        """Whether ``export_lines(fmt, [row])`` for a row built from an import's parsed values
        (the values as parsed, before the database stored them) gives the same line, byte for
        byte, as for the row read back from the database: then the import stores the line
        itself. jsonb reorders object keys (shorter first) and reads a float such as ``1e+19``
        back as an integer, so a kind says yes only where its export writes no such values
        from the row as they are."""
        return False

    def item_warnings(self, stage: int, content: dict, metadata: dict, gold: dict | None) -> list[str]:
        """Contradictions in what an import brought, kept as given and shown on the item page and
        to the consolidator (plain text; pages escape it)."""
        return []

    def agreement_fields_for(self, stage: int) -> dict[str, str]:
        """The fields agreement reports for ``stage``."""
        return self.agreement_fields

    def value_name(self, value) -> str:
        """A label code as pages show it: ``knowledge_error`` → "Knowledge error" (codes stay
        in the API and the exports)."""
        code = str(value)
        if code in self.value_names:
            return self.value_names[code]
        if code.isupper():  # NA
            return code
        spelt = code.replace("_", " ").replace("-", " ")
        return spelt[:1].upper() + spelt[1:]

    def parse_import_line(self, fmt: str, data: dict, line: int) -> ParsedItem:
        raise NotImplementedError

    def import_domain_error(self, fmt: str, domain: str) -> str | None:
        """Why ``domain`` cannot fill the domain of items imported in format ``fmt``, or None."""
        return None

    def needs_precompute(self, stage: int, content: dict, suggestion: dict | None) -> bool:
        """Whether the pipeline must run before annotators get the stage."""
        return not content

    def precompute(
        self,
        stage: int,
        prompt: str,
        response: str,
        content: dict,
        settings: dict,
        previous_gold: dict | None = None,
        evidence_search: Callable | None = None,
        item_metadata: dict | None = None,
        earlier: dict[int, dict] | None = None,
    ) -> dict:
        """Return ``{"content": ..., "suggestion": ..., "provenance": ...}`` for a stage;
        ``previous_gold`` is the gold payload of the step before, if any; ``evidence_search()``
        gives the search function over the project's corpora (None without corpora);
        ``item_metadata`` is the item's metadata (e.g. evidence an import carried for a later stage);
        ``earlier`` maps each earlier step to its ``{"content", "gold"}``."""
        raise NotImplementedError

    def suggestion_from_labels(self, stage: int, labels: dict) -> dict:
        """The suggestion an import with ``labels_as=suggestion`` stores for a line's labels
        (the labels as they are where payload and suggestion share their shape)."""
        return labels

    def payload_content(self, content: dict, settings_of: Callable[[], dict]) -> dict:
        """The content validate_payload checks an annotator's or consolidator's payload against;
        kinds whose rules depend on project settings fold them in (``settings_of()`` reads them)."""
        return content

    def empty_payload(self, stage: int, content: dict, suggestion: dict | None) -> dict:
        raise NotImplementedError

    def validate_payload(self, stage: int, content: dict, payload: Any, *, complete: bool) -> dict:
        """Return the normalised payload or raise PayloadError. ``complete`` demands every
        field an annotator must fill (submit); drafts may be partial."""
        raise NotImplementedError

    def merge(self, stage: int, content: dict, payloads: list[dict]) -> "MergeResult":
        """Pre-fill a consolidation: fields all annotators agree on are copied, the others
        left empty and listed as disagreed."""
        raise NotImplementedError

    # Units found by aligning the raters' answers (e.g. claims by text similarity) depend on
    # who is compared, so the gold record is then compared with each annotator on its own.
    agreement_aligns_units: bool = False
    # extra_agreement compares annotators with the machine suggestion
    agreement_uses_suggestion: bool = False
    # JSON paths of the only parts of a payload agreement_units reads (name → path). Where the
    # database can evaluate them, agreement fetches these small arrays instead of whole payloads
    # and hands agreement_units the dict of them (name → array) in place of each payload.
    agreement_paths: dict[str, str] = {}

    def agreement_units(self, stage: int, payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
        """field → {unit → {rater → value}} for one item-stage.

        ``payloads`` maps each rater (annotator, or the gold record) to its payload; the first
        rater is the pivot when units have to be aligned (e.g. claims by text similarity)."""
        raise NotImplementedError

    def agreement_unit_values(
        self, stage: int, content: dict, payloads: dict[Hashable, dict]
    ) -> Iterable[tuple[dict, str, dict]]:
        """(unit ids, field, {rater → value}) for every unit of one item-stage, for the per-unit
        agreement export; ``payloads`` as for agreement_units, the gold record first (under
        GOLD_RATER) when there is one, so aligned units are the gold record's. The ids name the
        unit as the kind's exports do; by default the agreement unit itself."""
        for name, units in self.agreement_units(stage, payloads).items():
            for unit, values in units.items():
                yield {"unit": list(unit) if isinstance(unit, tuple) else unit}, name, values

    def extra_agreement(self, stage: int, items: Iterable["AgreementItem"]) -> dict:
        """Kind-specific agreement numbers beyond per-field label agreement (none by default)."""
        return {}

    def suggestion_predictions(
        self, stage: int, content: dict, suggestion: dict | None, gold: dict | None = None
    ) -> Iterable[tuple[str, tuple, Any]]:
        """A machine pre-annotation of one item-stage as predictions of annotation.scoring's
        tasks, so it can be scored as a baseline: (task name, unit key without its leading item,
        label), keyed as the task keys its gold units. ``gold`` is the stage's gold payload, for
        units the machine's answer must be aligned to (e.g. claims). None by default."""
        return ()

    def export_lines(self, fmt: str, rows: Iterable[dict], **options) -> Iterable[dict]:
        """Turn consolidated rows into export records of format ``fmt`` (``options``: export_options)."""
        raise NotImplementedError

    def export_options(self, settings: dict) -> dict:
        """Keyword arguments export_lines takes from the project's pipeline settings (none by
        default; a stored export format must not depend on any, see ExportLine)."""
        return {}

    # export formats that are several JSONL files in a zip archive
    archive_formats: tuple[str, ...] = ()

    def archive_files(self, fmt: str) -> tuple[str, ...]:
        """The file names of archive format ``fmt``, in archive order."""
        raise NotImplementedError

    def export_archive(self, fmt: str, rows: Iterable[dict]) -> Iterable[tuple[str, dict]]:
        """(file name, record) for every line of every file of archive format ``fmt``, in one
        pass over the consolidated rows (the caller sorts the lines into their files)."""
        raise NotImplementedError


def field_error(path: str, message: str) -> dict[str, str]:
    return {"field": path, "message": message}


def require_str(data: dict, key: str, line: int, *, allow_empty: bool = False, path: str = "") -> str:
    """``data[key]`` as a string, or an error naming the field (``path`` when it is nested)."""
    value = data.get(key)
    field = path or key
    if not isinstance(value, str):
        raise ImportLineError(line, field, "must be a string" if key in data else "is missing")
    if not allow_empty and not value.strip():
        raise ImportLineError(line, field, "must not be empty")
    return value


def optional_str(data: dict, key: str, line: int) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ImportLineError(line, key, "must be a string")
    return value


Parser = Callable[[dict, int], ParsedItem]
