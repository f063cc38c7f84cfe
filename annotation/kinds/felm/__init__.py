"""FELM segment labelling (Chen et al.): one stage; per segment correct / contains an error,
error type, reason and reference links."""

import json
import math
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from ..base import (
    ImportLineError,
    KindSpec,
    MergeResult,
    ParsedItem,
    PayloadError,
    field_error,
    is_valid_url,
    optional_str,
    require_str,
)
from ..plain import parse_plain_line
from ..research import FELM_FIGURES, GoldUnit, Task, item_key, listed_units

# The released names (DESIGN §5): the paper's "irrelevant" is ``irrelevant_with_qst`` in the data.
ERROR_TYPES = ("knowledge_error", "reasoning_error", "irrelevant_with_qst", "fooled")
DOMAINS = ("wk", "science", "writing_rec", "reasoning", "math")
FELM_FIELDS = (
    "index",
    "source",
    "prompt",
    "response",
    "segmented_response",
    "labels",
    "comment",
    "type",
    "ref",
    "domain",
)
# The released files spell "nothing here" in several ways: ``[]`` for a whole list not annotated
# (types of most math and reasoning items), ``""`` or null for one segment. All mean no value;
# the file's own spelling is kept in the item's metadata (under the field's name) and given back.
NO_VALUE = (None, "")
# Top-level fields kept as given in the metadata when they are not plain strings (e.g. a numeric
# index, a null source), so that the export gives back the same JSON value.
SCALAR_FIELDS = ("index", "source", "prompt", "domain")
SEGMENTATION_METHODS = ("auto", "sentence", "separator")


def empty_segment() -> dict:
    return {"label": None, "error_type": None, "comment": "", "refs": []}


class FelmKind(KindSpec):
    key = "felm"
    stages = (1,)
    import_formats = ("felm", "plain")
    export_formats = ("felm",)
    # each item's export line stored once rendered: an export streams stored text instead of
    # decoding three JSON values and encoding a line per item
    stored_export_formats = ("felm",)
    domains = DOMAINS
    agreement_fields = {
        "label": "Segment label (correct / error)",
        "error_type": "Error type (segments both marked wrong)",
    }
    value_names = {"irrelevant_with_qst": "Irrelevant to the question"}  # as felm.js names it
    import_non_finite_fields = {"felm": ("response",)}  # two released lines have a NaN response

    # -- research (annotation.scoring, the LLM rater and its agreement) -----------------------
    rated_steps = (1,)
    rated_fields = {1: {"label": "segment"}}

    def scoring_tasks(self) -> dict[str, Task]:
        return {
            "segment": Task(
                "segment",
                "FELM: segment level",
                ("item", "segment"),
                vocabulary=("correct", "error"),
                figures=FELM_FIGURES,
                balanced_labels=("correct", "error"),
            ),
            "response": Task(
                "response",
                "FELM: response level (wrong when any segment is)",
                ("item",),
                field="response_label",
                vocabulary=("correct", "error"),
                agreement_field="label",
                figures=FELM_FIGURES,
                balanced_labels=("correct", "error"),
            ),
        }

    def gold_units(self, tasks: dict[str, Task], rows_of: Callable[..., Iterable[dict]], settings: dict) -> None:
        segment, response = tasks["segment"], tasks["response"]
        for row in rows_of(metadata=False):
            item = item_key(row)
            texts = (row.get("content") or {}).get("segments") or []
            labels = [s["label"] for s in row["gold"]["segments"]]
            for index, label in enumerate(labels):
                if label is not None:
                    segment.units.append(GoldUnit((item, index), "correct" if label else "error"))
            # an empty segment left unlabelled (nothing to decide) does not hold the response back
            labels = [
                label
                for index, label in enumerate(labels)
                if not (label is None and index < len(texts) and not str(texts[index]).strip())
            ]
            if labels and None not in labels:
                response.units.append(GoldUnit((item,), "correct" if all(labels) else "error"))

    def existing_units(self, rows_of: Callable[..., Iterable[dict]]) -> set[tuple]:
        return listed_units(rows_of, "segments")

    def rater_batch_size(self) -> int:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.llm_rater import (
            FELM_BATCH,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        return FELM_BATCH

    def rater_plan(self, step: int, items: list[dict], settings: dict) -> list:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.llm_rater import (
            plan_felm,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        return plan_felm([(i["prompt"], i["content"].get("segments") or []) for i in items])

    def rate(self, step: int, items: list[dict], settings: dict, config) -> list:
        # loads NLTK and scikit-learn: kept out of web start-up
        from pipeline.llm_rater import (
            rate_felm_items,  # loads NLTK and scikit-learn: kept out of web start-up
        )

        return rate_felm_items([(i["prompt"], i["content"].get("segments") or []) for i in items], config)

    # -- import -----------------------------------------------------------------------------

    def parse_import_line(self, fmt: str, data: dict, line: int) -> ParsedItem:
        if fmt == "plain":
            return parse_plain_line(data, line)
        if fmt == "felm":
            return self._parse_felm_line(data, line)
        raise ValueError(f"format {fmt!r} is not one of {', '.join(self.import_formats)}")

    def _parse_felm_line(self, data: dict, line: int) -> ParsedItem:
        """FELM's evaluation code (eval/eval.py) scores segment i by ``labels[i]`` for i below
        len(segmented_response) and never reads the response, comments or types: a line it
        scores is read as it reads it, each difference a warning (ParsedItem.warnings), the
        values given kept for the export."""
        missing = [key for key in ("response", "segmented_response") if key not in data]
        if missing:
            raise ImportLineError(line, missing[0], "is missing (FELM shape needs it)")
        given_response = data["response"]
        not_a_number = isinstance(given_response, float) and not math.isfinite(given_response)
        response = "" if not_a_number else require_str(data, "response", line)
        segments = data["segmented_response"]
        if not isinstance(segments, list) or not segments:
            raise ImportLineError(line, "segmented_response", "must be a non-empty list of strings")
        for index, segment in enumerate(segments):
            # an empty segment is data (the release has some): shown with nothing to decide
            if not isinstance(segment, str):
                raise ImportLineError(line, f"segmented_response[{index}]", "must be a string")
        domain = optional_str(data, "domain", line)
        if domain and domain not in DOMAINS:
            raise ImportLineError(line, "domain", f"must be one of {', '.join(DOMAINS)}, not {domain!r}")
        refs = data.get("ref") or []
        if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
            raise ImportLineError(line, "ref", "must be a list of strings")
        metadata = {"ref": refs, **{k: v for k, v in data.items() if k not in FELM_FIELDS}}
        metadata.update({k: data[k] for k in SCALAR_FIELDS if k in data and not isinstance(data[k], str)})
        if data.get("domain") == "":
            metadata["domain"] = ""
        warnings: list[tuple[str, str]] = []
        if not_a_number:  # jsonb holds no NaN: its JSON spelling is kept, the export gives it back
            metadata["response"] = json.dumps(given_response)
            response = " ".join(segments)
            warnings.append(
                (
                    "response",
                    f"is {metadata['response']}, not a text: read as the segments joined by spaces (FELM's "
                    f"evaluation code reads only the segments); exported as {metadata['response']}",
                )
            )
        parsed = ParsedItem(
            line=line,
            prompt=optional_str(data, "prompt", line),
            response=response,
            external_id=optional_str(data, "index", line),
            id_field="index",
            source=optional_str(data, "source", line),
            domain=domain,
            metadata=metadata,
            content={1: {"segments": segments}},
            warnings=warnings,
        )
        if "labels" in data:
            parsed.labels[1] = self._parse_felm_labels(data, len(segments), line, warnings)
            gold = parsed.labels[1]["segments"]
            for key, derived in (("comment", _comments(gold)), ("type", _types(gold))):
                if key in data and data[key] != derived:  # a spelling of "none", entries past the segments
                    metadata[key] = data[key]
            if len(data["labels"]) > len(segments) or typed_correct_segments(data["labels"], data.get("type")):
                # entries past the segments, a contradiction of the release (shown by
                # item_warnings): kept as given for the export
                metadata["labels"] = data["labels"]
        return parsed

    def _parse_felm_labels(self, data: dict, count: int, line: int, warnings: list[tuple[str, str]]) -> dict:
        labels = data["labels"]
        comments = data.get("comment")
        types = data.get("type")
        comments = [""] * count if comments in (None, []) else comments
        if isinstance(types, str):  # FELM's own evaluation input (all.jsonl) has "type": "" on reasoning lines
            warnings.append(
                (
                    "type",
                    f"is {json.dumps(types[:40], ensure_ascii=False)}, a text, not a list: no error type read "
                    "(FELM's evaluation code scores none); exported as given",
                )
            )
            types = None
        types = [None] * count if types in (None, []) else types
        wrong = [
            (key, values)
            for key, values in (("labels", labels), ("comment", comments), ("type", types))
            if not isinstance(values, list) or len(values) < count
        ]
        if wrong:  # every list that does not fit is named (the release has lines where all three are off)
            messages = [
                (
                    key,
                    f"must be a list with one entry per segment ({count})"
                    + (f", not {len(values)}" if isinstance(values, list) else ""),
                )
                for key, values in wrong
            ]
            raise ImportLineError(line, *messages[0], more=tuple(messages[1:]))
        for key, values in (("labels", labels), ("comment", comments), ("type", types)):
            if len(values) > count:
                warnings.append(
                    (
                        key,
                        f"has {len(values)} entries for {count} segments: the first {count} read, "
                        "as FELM's evaluation code reads them; "
                        f"the other {len(values) - count} kept for the export",
                    )
                )
        segments = []
        for index, (label, comment, error_type) in enumerate(zip(labels[:count], comments[:count], types[:count])):
            if not isinstance(label, bool):
                raise ImportLineError(line, f"labels[{index}]", "must be true or false")
            if comment is not None and not isinstance(comment, str):
                raise ImportLineError(line, f"comment[{index}]", "must be a string or null")
            if error_type not in NO_VALUE and error_type not in ERROR_TYPES:
                raise ImportLineError(
                    line,
                    f"type[{index}]",
                    f'must be null, "" or one of {", ".join(ERROR_TYPES)}, not {error_type!r}',
                )
            segments.append(
                {
                    "label": label,
                    "error_type": None if label or error_type == "" else error_type,
                    "comment": comment or "",
                    "refs": [],
                }
            )
        return {"segments": segments}

    def item_warnings(self, stage: int, content: dict, metadata: dict, gold: dict | None) -> list[str]:
        """Contradictions of the imported file, kept as given: a segment labelled correct with an
        error type (the export gives the type back while the gold says correct)."""
        gold_segments = (gold or {}).get("segments") or []
        warnings = []
        for index, error_type in typed_correct_segments(metadata.get("labels"), metadata.get("type")):
            if index >= len(content.get("segments") or []):
                continue  # an entry past the last segment: no segment says it
            if index < len(gold_segments) and gold_segments[index].get("label") is not True:
                continue  # the gold record no longer says correct: nothing contradicts
            warnings.append(
                f"Segment {index + 1} is labelled correct in the imported file but has the error type "
                f"{error_type!r}; the export gives both back as they came."
            )
        return warnings

    def import_domain_error(self, fmt: str, domain: str) -> str | None:
        if fmt == "felm" and domain not in DOMAINS:
            return f"must be one of {', '.join(DOMAINS)} for FELM files, not {domain!r}"
        return None

    # -- machine pre-annotation -------------------------------------------------------------

    def split_field(self, stage: int) -> str | None:
        return "segments"

    def needs_precompute(self, stage: int, content: dict, suggestion: dict | None) -> bool:
        return not content.get("segments")

    def precompute(
        self,
        stage: int,
        prompt: str,
        response: str,
        content: dict,
        settings: dict,
        previous_gold: dict | None = None,
        evidence_search=None,
        item_metadata: dict | None = None,
        earlier: dict | None = None,
    ) -> dict:
        if content.get("segments"):
            return {"content": content, "suggestion": None, "provenance": {"segments": "import"}}
        from pipeline.segmenter import segment_response  # NLTK loads only where items are segmented

        method = settings.get("segmentation", "auto")
        segments = segment_response(response, method=method)
        if not segments:
            raise ValueError("the response has no text to segment")
        return {
            "content": {"segments": segments},
            "suggestion": None,
            "provenance": {"segments": f"pipeline:{method}"},
        }

    # -- annotation payloads ----------------------------------------------------------------

    def empty_payload(self, stage: int, content: dict, suggestion: dict | None) -> dict:
        """Nothing pre-selected: suggestions are shown beside the choices (felm.js), as on the
        Factcheck-Bench pages; a label left as suggested would count as the annotator's."""
        return {"segments": [empty_segment() for _ in content.get("segments", [])]}

    def validate_payload(self, stage: int, content: dict, payload: Any, *, complete: bool) -> dict:
        expected = len(content.get("segments", []))
        if not isinstance(payload, dict) or not isinstance(payload.get("segments"), list):
            raise PayloadError([field_error("segments", "must be a list with one object per segment")])
        if len(payload["segments"]) != expected:
            raise PayloadError(
                [
                    field_error(
                        "segments",
                        f"has {len(payload['segments'])} entries, the item has {expected} segments",
                    )
                ]
            )
        errors: list[dict] = []
        texts = content.get("segments", [])
        normalised = [
            self._validate_segment(index, raw, complete and not is_empty_segment(texts[index]), errors)
            for index, raw in enumerate(payload["segments"])
        ]
        if errors:
            raise PayloadError(errors)
        return {"segments": normalised}

    @staticmethod
    def _validate_segment(index: int, raw: Any, complete: bool, errors: list[dict]) -> dict:
        path = f"segments[{index}]"
        if not isinstance(raw, dict):
            errors.append(field_error(path, "must be an object"))
            return empty_segment()
        label = raw.get("label")
        error_type = raw.get("error_type") or None
        comment = raw.get("comment") or ""
        refs = raw.get("refs") or []
        if label is not None and not isinstance(label, bool):
            errors.append(field_error(f"{path}.label", "must be true (correct), false (contains an error) or null"))
        elif label is None and complete:
            errors.append(field_error(f"{path}.label", "is required: mark the segment correct or wrong"))
        if error_type is not None and error_type not in ERROR_TYPES:
            errors.append(field_error(f"{path}.error_type", f"must be one of {', '.join(ERROR_TYPES)}"))
        if label is True:
            error_type = None
        if not isinstance(comment, str):
            errors.append(field_error(f"{path}.comment", "must be a string"))
            comment = ""
        if label is False and complete:
            if error_type is None:
                errors.append(field_error(f"{path}.error_type", "is required when the segment contains an error"))
            if not comment.strip():
                errors.append(field_error(f"{path}.comment", "a reason is required when the segment contains an error"))
        if not isinstance(refs, list):
            errors.append(field_error(f"{path}.refs", "must be a list of links"))
            refs = []
        for ref_index, ref in enumerate(refs):
            if not is_valid_url(ref):
                errors.append(field_error(f"{path}.refs[{ref_index}]", f"{ref!r} is not a valid http(s) URL"))
        return {"label": label, "error_type": error_type, "comment": comment, "refs": list(refs)}

    # -- consolidation ----------------------------------------------------------------------

    def merge(self, stage: int, content: dict, payloads: list[dict]) -> MergeResult:
        merged, disagreed = [], []
        for index in range(len(content.get("segments", []))):
            versions = [p["segments"][index] for p in payloads]
            segment = empty_segment()
            for key in segment:
                values = [normalise_for_compare(v[key]) for v in versions]
                if all(value == values[0] for value in values):
                    segment[key] = versions[0][key]
                else:
                    disagreed.append(f"segments[{index}].{key}")
            merged.append(segment)
        return MergeResult({"segments": merged}, disagreed)

    # -- agreement --------------------------------------------------------------------------

    agreement_paths = {"labels": "$.segments[*].label", "error_types": "$.segments[*].error_type"}

    def agreement_units(self, stage: int, payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
        labels: dict[int, dict] = {}
        error_types: dict[int, dict] = {}
        for rater, payload in payloads.items():
            if "segments" in payload:
                payload = {
                    "labels": [s.get("label") for s in payload["segments"]],
                    "error_types": [s.get("error_type") for s in payload["segments"]],
                }
            for index, (label, error_type) in enumerate(zip(payload["labels"], payload["error_types"])):
                if label is None:
                    continue
                labels.setdefault(index, {})[rater] = "correct" if label else "error"
                if label is False and error_type:
                    error_types.setdefault(index, {})[rater] = error_type
        return {"label": labels, "error_type": error_types}

    def agreement_unit_values(
        self, stage: int, content: dict, payloads: dict[Hashable, dict]
    ) -> Iterable[tuple[dict, str, dict]]:
        for name, units in self.agreement_units(stage, payloads).items():
            for index, values in units.items():
                yield {"segment": index}, name, values

    # -- scoring ----------------------------------------------------------------------------

    def suggestion_predictions(
        self, stage: int, content: dict, suggestion: dict | None, gold: dict | None = None
    ) -> Iterable[tuple[str, tuple, Any]]:
        """Suggested segment labels (true/false as a payload holds them, or the task's words) for
        the ``segment`` task, and, where every segment has one, the response's for ``response``
        (wrong when any segment is)."""
        suggested = (suggestion or {}).get("segments") or []
        labels = []
        for index in range(len(content.get("segments", []))):
            hint = suggested[index] if index < len(suggested) and isinstance(suggested[index], dict) else {}
            label = segment_label(hint.get("label"))
            labels.append(label)
            if label is not None:
                yield "segment", (index,), label
        if labels and None not in labels:
            yield "response", (), "error" if "error" in labels else "correct"

    # -- export -----------------------------------------------------------------------------

    def export_lines(self, fmt: str, rows: Iterable[dict]) -> Iterable[dict]:
        if fmt != "felm":
            raise ValueError(f"export format {fmt!r} is not one of {', '.join(self.export_formats)}")
        for row in rows:
            yield felm_record(row)


def is_empty_segment(text: Any) -> bool:
    """A segment with no text: nothing to decide, never required (the release has some)."""
    return isinstance(text, str) and not text.strip()


def typed_correct_segments(labels: Any, types: Any) -> list[tuple[int, str]]:
    """(index, type) of the segments a released line labels correct (true) yet gives an error type."""
    if not isinstance(labels, list) or not isinstance(types, list):
        return []
    return [
        (index, error_type)
        for index, (label, error_type) in enumerate(zip(labels, types))
        if label is True and error_type in ERROR_TYPES
    ]


def segment_label(value: Any) -> str | None:
    """A segment's label in the scoring tasks' words: true is ``correct``, false ``error``."""
    if isinstance(value, bool):
        return "correct" if value else "error"
    return value if value in ("correct", "error") else None


def felm_record(row: dict) -> dict:
    """One consolidated item in FELM's released shape, field for field.

    An imported line comes back as it was: its spellings of "none" (``[]``, ``""``, null)
    where the gold record still says none, its other fields (e.g. ``ref_contents``) after the
    FELM ones; ``domain`` only when the item has one (the released domain files have none)."""
    segments = row["gold"]["segments"]
    metadata = row["metadata"]
    refs: list[str] = []
    for ref in [*metadata.get("ref", []), *(r for s in segments for r in s.get("refs", []))]:
        if ref not in refs:
            refs.append(ref)
    record = {
        "index": row["external_id"] or str(row["item_id"]),
        "source": row["source"],
        "prompt": row["prompt"],
        "response": row["response"],
        "segmented_response": row["content"]["segments"],
        # an empty segment nobody labelled has no error
        "labels": [
            True if s["label"] is None and is_empty_segment(text) else bool(s["label"])
            for s, text in zip(segments, row["content"]["segments"])
        ],
        "comment": _as_given(metadata, "comment", _comments(segments)),
        "type": _as_given(metadata, "type", _types(segments)),
        "ref": refs,
        "domain": row["domain"],
    }
    for key in SCALAR_FIELDS:
        if key in metadata and _text(metadata[key]) == record[key]:
            record[key] = metadata[key]
    if "response" in metadata and record["response"] == " ".join(record["segmented_response"]):
        record["response"] = json.loads(metadata["response"])  # NaN, as the line gave it
    given_labels = metadata.get("labels")
    if isinstance(given_labels, list) and len(given_labels) > len(segments):
        record["labels"] += given_labels[len(segments) :]  # entries past the segments, as given
    # a type the file gave on a segment it labelled correct comes back while the gold says correct
    for index, error_type in typed_correct_segments(metadata.get("labels"), metadata.get("type")):
        if isinstance(record["type"], list) and index < len(segments) and segments[index].get("label") is True:
            record["type"][index] = error_type
    if record["domain"] == "" and "domain" not in metadata:
        del record["domain"]
    record.update((k, v) for k, v in metadata.items() if k not in FELM_FIELDS)
    return record


def _comments(segments: list[dict]) -> list[str]:
    return [s.get("comment") or "" for s in segments]


def _types(segments: list[dict]) -> list[str | None]:
    return [None if s["label"] else s.get("error_type") for s in segments]


def _as_given(metadata: dict, key: str, derived: list) -> Any:
    """``derived`` in the imported file's spelling of ``key`` where both say the same (see NO_VALUE)."""
    if key not in metadata:
        return derived
    given = metadata[key]
    if (given in ([], None) or isinstance(given, str)) and all(value in NO_VALUE for value in derived):
        return given  # the whole list not annotated
    if isinstance(given, list) and len(given) > len(derived):  # entries past the segments, as given
        return _as_given({key: given[: len(derived)]}, key, derived) + given[len(derived) :]
    if not isinstance(given, list) or len(given) != len(derived):
        return derived
    return [g if g == d or (g in NO_VALUE and d in NO_VALUE) else d for g, d in zip(given, derived)]


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def normalise_for_compare(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, list):
        return sorted(map(str, value))
    return value
