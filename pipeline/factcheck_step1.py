"""Machine suggestion for Factcheck-Bench step 1 of one (prompt, response) item.

``suggest_step1`` chains the pieces — sentence split, decomposition + decontextualisation,
claim categories, sentence checkworthiness and importance — and returns the plain-data payload
the domain side stores as the item's step-1 pre-annotation: per sentence ``text``,
``decontext``, ``importance`` (yes|intermediate|no), ``checkworthy`` (yes|no) and
``claims: [{text, category, importance}]``, plus ``provenance`` saying which backend and model
produced each part and which sentences/claims fell back, so the UI can show it.
"""

from __future__ import annotations

from pipeline.checkworthiness import (
    LLM,
    OFFLINE,
    Hint,
    claim_category_hints,
    claim_importance,
    importance_hints,
    sentence_checkworthiness,
)
from pipeline.decompose import SentenceDecomposition, decompose_response
from pipeline.llm import LLMConfig, usable
from pipeline.segmenter import split_sentences

PAYLOAD_VERSION = 1


def _provenance(
    config: LLMConfig | None,
    decompositions: list[SentenceDecomposition],
    category_hints: list[Hint],
) -> dict:
    llm_used = usable(config)
    return {
        "version": PAYLOAD_VERSION,
        "backend": LLM if llm_used else OFFLINE,
        "model": config.model if llm_used else None,
        "segmenter": "punkt+rules",
        "decomposition": {
            "backend": LLM if llm_used else OFFLINE,
            "fallback_sentences": [i for i, d in enumerate(decompositions) if d.fallback],
            "errors": [d.error for d in decompositions if d.error],
        },
        "claim_category": {
            "backend": LLM if llm_used else OFFLINE,
            "fallback_claims": sum(h.fallback for h in category_hints),
            "errors": [h.error for h in category_hints if h.error],
        },
        "checkworthiness": {"backend": "derived from claim categories"},
        "importance": {"backend": OFFLINE},
    }


def suggest_step1(
    prompt: str, response: str, config: LLMConfig | None = None, sentences: list[str] | None = None
) -> dict:
    """Step-1 suggestion for one item; LLM backends when ``config`` is configured.

    ``sentences`` are used as given when the item already has them (e.g. imported data);
    otherwise the response is split here.
    """
    sentences = list(sentences) if sentences else split_sentences(response)
    decompositions = decompose_response(sentences, config, context=response)

    all_claims = [claim for d in decompositions for claim in d.claims]
    flat_hints = claim_category_hints(all_claims, config)
    hints_per_sentence: list[list[Hint]] = []
    for d in decompositions:
        hints_per_sentence.append(flat_hints[: len(d.claims)])
        flat_hints = flat_hints[len(d.claims) :]

    checkworthy = [sentence_checkworthiness(hints).label for hints in hints_per_sentence]
    importance = [h.label for h in importance_hints(prompt, sentences, checkworthy)]

    payload_sentences = [
        {
            "text": d.sentence,
            "decontext": d.decontext,
            "importance": sentence_importance,
            "checkworthy": worthy,
            "claims": [
                {
                    "text": claim,
                    "category": hint.label,
                    "importance": claim_importance(sentence_importance, hint.label),
                }
                for claim, hint in zip(d.claims, hints)
            ],
        }
        for d, hints, worthy, sentence_importance in zip(decompositions, hints_per_sentence, checkworthy, importance)
    ]
    category_hints = [h for hints in hints_per_sentence for h in hints]
    return {
        "sentences": payload_sentences,
        "provenance": _provenance(config, decompositions, category_hints),
    }
