"""Machine pre-annotation as plain Python (DESIGN.md §7).

Nothing here imports Django, ``annotation`` or ``api``: functions take and return plain data so
they run in a Celery worker, a management command or a notebook. Each step has an LLM backend
(any OpenAI-compatible endpoint, see :mod:`pipeline.llm`) and an offline backend.

- :mod:`pipeline.segmenter` — sentence split (Punkt, offline) and FELM segments;
- :mod:`pipeline.decompose` — claim decomposition + decontextualisation;
- :mod:`pipeline.checkworthiness` — claim category, checkworthiness, importance hints;
- :mod:`pipeline.factcheck_step1` — all of step 1 for one item, as the stored payload.
"""

from pipeline.decompose import SentenceDecomposition, decompose_response
from pipeline.factcheck_step1 import suggest_step1
from pipeline.llm import LLMConfig
from pipeline.segmenter import SEGMENT_SEPARATOR, segment_response, split_sentences

__all__ = [
    "SEGMENT_SEPARATOR",
    "LLMConfig",
    "SentenceDecomposition",
    "decompose_response",
    "segment_response",
    "split_sentences",
    "suggest_step1",
]
