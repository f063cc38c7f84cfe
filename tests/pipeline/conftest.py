"""Keeps ``import pipeline`` working however pytest is started (no Django needed).

The pipeline tests use no fixtures from here, so they also run with ``--noconftest``, given
``OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS=1`` in the environment: the fake LLM servers listen on
loopback, which the outbound guard refuses otherwise (tests/conftest.py sets it for every test).
"""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
