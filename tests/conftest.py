"""Shared test setup: never reach a model hub; keep heavy fixtures session-scoped."""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest

from babelrag.testing.scripted_server import ScriptedServer


@pytest.fixture()
def eval_server():
    """The scripted endpoint answering models and judges as ``tests/test_eval_runner.py``'s ``brain`` does
    (shared by the evaluate tests that drive the CLI)."""
    from tests.test_eval_runner import brain

    with ScriptedServer(brain) as srv:
        yield srv
