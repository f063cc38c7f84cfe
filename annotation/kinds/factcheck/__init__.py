"""Factcheck-Bench (Wang et al.): three serial steps per item. Step 1 (``step1.py``):
decomposition, decontextualisation, checkworthiness and importance. Step 2 (``step2.py``; its
content, ``step2_content.py``): evidence stance, factuality and correction, pre-annotated by
evidence retrieval, with a third rater at consolidation (``Project.third_rater``). Step 3
(``step3.py``): each sentence and the whole response revised from the verified claims. The
released file's shape is read and written in ``benchmark.py``.
"""

from collections.abc import Hashable, Iterable
from typing import Any

from ..base import AgreementItem, KindSpec, MergeResult, ParsedItem
from ..plain import parse_plain_line
from . import research, step1, step2, step2_content, step3, subtasks
from .benchmark import (
    LATER_STEP_FIELDS,
    SENTENCE_KEY,
    benchmark_record,
    evidence_lines,
    parse_benchmark_line,
    record_renders_from_import,
)
from .step1 import (
    CLAIM_CATEGORIES,
    CLAIM_IMPORTANCE,
    SENTENCE_CHECKWORTHY,
    SENTENCE_IMPORTANCE,
    align_claims,
    decomposition_agreement,
    empty_sentence,
)
from .step2_content import checkworthy_claims, retrieve_evidence


class FactcheckKind(KindSpec):
    key = "factcheck"
    stages = (1, 2, 3)
    annotatable_stages = (1, 2, 3)
    third_rater_stages = (2,)
    searches_evidence = True
    retrievable_stages = (2,)
    import_formats = ("plain", "factcheck-bench", "factcheck-tool")
    document_formats = ("factcheck-tool",)
    export_formats = ("factcheck-bench", "factcheck-subtasks", "factcheck-evidence")
    archive_formats = ("factcheck-subtasks",)
    ordinal_fields = {
        "sentence_importance": SENTENCE_IMPORTANCE,
        "claim_importance": CLAIM_IMPORTANCE,
    }
    export_later_stages = (2, 3)
    # the metadata holds the released evidence again (for retrieval), which no export writes
    export_reads_metadata = False
    export_only_metadata = (step2_content.RELEASED_EVIDENCE_KEY,)
    stored_export_formats = ("factcheck-bench",)
    agreement_aligns_units = True
    agreement_uses_suggestion = True
    agreement_fields = step1.AGREEMENT_FIELDS

    rated_steps = (1, 2, 3)
    rated_fields = research.RATED_FIELDS

    def scoring_tasks(self) -> dict:
        return research.scoring_tasks()

    def gold_units(self, tasks: dict, rows_of, settings: dict) -> None:
        research.gold_units(tasks, rows_of)

    def existing_units(self, rows_of) -> set[tuple]:
        return research.existing_units(rows_of)

    def rater_plan(self, step: int, items: list[dict], settings: dict) -> list:
        return research.rater_plan(step, items, settings)

    def rate(self, step: int, items: list[dict], settings: dict, config) -> list:
        return research.rate(step, items, settings, config)

    def agreement_fields_for(self, stage: int) -> dict[str, str]:
        return self._steps[stage].AGREEMENT_FIELDS if stage in self._steps else {}

    # -- import -----------------------------------------------------------------------------

    def parse_import_line(self, fmt: str, data: dict, line: int) -> ParsedItem:
        if fmt == "plain":
            return parse_plain_line(data, line)
        if fmt == "factcheck-bench":
            return parse_benchmark_line(data, line)
        if fmt == "factcheck-tool":
            return step1.parse_tool_input(data, line)
        raise ValueError(f"format {fmt!r} is not one of {', '.join(self.import_formats)}")

    # -- machine pre-annotation -------------------------------------------------------------

    def needs_precompute(self, stage: int, content: dict, suggestion: dict | None) -> bool:
        return stage in (1, 3) and (not content.get("sentences") or suggestion is None)

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
        if stage == 2:
            return step2_content.precompute(previous_gold, settings, evidence_search, item_metadata)
        if stage == 3:
            earlier = earlier or {}
            step1, step2_ = earlier.get(1) or {}, earlier.get(2) or {}
            content = (
                content
                if content.get("sentences")
                else step3.build_content(
                    step1.get("content") or {},
                    step1.get("gold") or {},
                    step2_.get("content") or {},
                    step2_.get("gold") or {},
                )
            )
            return {"content": content, **step3.suggest(content, settings, prompt)}
        if stage != 1:
            return {"content": content, "suggestion": None, "provenance": {}}
        # NLTK and the openai client load only where items are pre-annotated.
        from pipeline.factcheck_step1 import suggest_step1
        from pipeline.llm import LLMConfig

        config = LLMConfig.from_env(settings.get("llm"))
        result = suggest_step1(prompt, response, config, sentences=content.get("sentences") or None)
        sentences = [s["text"] for s in result["sentences"]]
        suggestion = {"sentences": [{k: v for k, v in s.items() if k != "text"} for s in result["sentences"]]}
        return {
            "content": {"sentences": sentences},
            "suggestion": suggestion,
            "provenance": result["provenance"],
        }

    def split_field(self, stage: int) -> str | None:
        return "sentences" if stage == 1 else None

    def stage_guideline(self, stage: int) -> str:
        return step3.GUIDELINE if stage == 3 else ""

    def retrieve_unit(self, stage: int, content: dict, index: int, settings: dict, evidence_search) -> dict:
        claim = {key: content["claims"][index][key] for key in ("sentence", "claim", "text")}
        return retrieve_evidence([claim], settings, evidence_search())["content"]["claims"][0]

    def clear_unit_answer(self, stage: int, content: dict, payload: dict, index: int) -> dict:
        return step2.clear_claim_answer(content, payload, index)

    # -- annotation payloads, consolidation, agreement: each step's module -------------------

    _steps = {1: step1, 2: step2, 3: step3}

    def empty_payload(self, stage: int, content: dict, suggestion: dict | None) -> dict:
        return self._steps[stage].empty_payload(content, suggestion)

    def validate_payload(self, stage: int, content: dict, payload: Any, *, complete: bool) -> dict:
        return self._steps[stage].validate_payload(content, payload, complete=complete)

    def merge(self, stage: int, content: dict, payloads: list[dict]) -> MergeResult:
        return self._steps[stage].merge(content, payloads)

    def agreement_units(self, stage: int, payloads: dict[Hashable, dict]) -> dict[str, dict[Any, dict]]:
        return self._steps[stage].agreement_units(payloads)

    def agreement_unit_values(
        self, stage: int, content: dict, payloads: dict[Hashable, dict]
    ) -> Iterable[tuple[dict, str, dict]]:
        return self._steps[stage].unit_values(content, payloads)

    def extra_agreement(self, stage: int, items: Iterable[AgreementItem]) -> dict:
        return self._steps[stage].extra_agreement(items)

    def suggestion_predictions(
        self, stage: int, content: dict, suggestion: dict | None, gold: dict | None = None
    ) -> Iterable[tuple[str, tuple, Any]]:
        if stage == 1:
            return step1.suggestion_predictions(content, suggestion, gold)
        return self._steps[stage].suggestion_predictions(content, suggestion) if stage in self._steps else ()

    # -- export -----------------------------------------------------------------------------

    def export_lines(self, fmt: str, rows: Iterable[dict]) -> Iterable[dict]:
        if fmt == "factcheck-evidence":
            for row in rows:
                yield from evidence_lines(row)
            return
        if fmt != "factcheck-bench":
            raise ValueError(f"export format {fmt!r} is not one of {', '.join(self.export_formats)}")
        for row in rows:
            yield benchmark_record(row)

    def renders_line_from_import(self, fmt: str, row: dict) -> bool:
        return fmt == "factcheck-bench" and record_renders_from_import(row)

    def archive_files(self, fmt: str) -> tuple[str, ...]:
        if fmt != "factcheck-subtasks":
            raise ValueError(f"export format {fmt!r} is not one of {', '.join(self.archive_formats)}")
        return subtasks.FILES

    def export_archive(self, fmt: str, rows: Iterable[dict]) -> Iterable[tuple[str, dict]]:
        names = self.archive_files(fmt)
        for row in rows:
            record = benchmark_record(row)
            for name in names:
                for line in subtasks.lines(name, record):
                    yield name, line


__all__ = [
    "CLAIM_CATEGORIES",
    "CLAIM_IMPORTANCE",
    "LATER_STEP_FIELDS",
    "SENTENCE_CHECKWORTHY",
    "SENTENCE_IMPORTANCE",
    "SENTENCE_KEY",
    "FactcheckKind",
    "align_claims",
    "benchmark_record",
    "checkworthy_claims",
    "decomposition_agreement",
    "empty_sentence",
    "retrieve_evidence",
]
