"""Machine pre-annotation as plain Python, the bottom layer (docs/layers.md).

Nothing here imports Django, ``annotation`` or ``api``: functions take and return plain data so
they run in a Celery worker, a management command or a notebook. Each step has an LLM backend
(any OpenAI-compatible endpoint, see :mod:`pipeline.llm`) and an offline backend.

- :mod:`pipeline.segmenter` — sentence split (Punkt, offline) and FELM segments;
- :mod:`pipeline.decompose` — claim decomposition + decontextualisation;
- :mod:`pipeline.checkworthiness` — claim category, checkworthiness, importance hints;
- :mod:`pipeline.factcheck_step1` — all of step 1 for one item, as the stored payload.

Import the module you need: this package stays cheap to import (NLTK and the ``openai``
client load only with the steps that use them).
"""
