"""annotate/server/hot_paths.py, run with the argilla-server venv's python (where it lives): after install(),
every Argilla module that notifies record events builds an event only while a webhook is enabled (and then
calls Argilla's own code), and settings are parsed to the same values with one TypeAdapter per settings type
instead of one per call. That the server runs it and webhooks still get their events:
tests/test_annotate_argilla.py; the time it saves: bench/bench_annotate_hot_paths.py."""
from __future__ import annotations

import textwrap

import pytest

from tests.test_annotate_engine import run_engine_script

pytestmark = pytest.mark.argilla

SCRIPT = textwrap.dedent(
    """
    import asyncio, importlib, json, sys
    sys.path.insert(0, sys.argv[1])
    import pydantic
    import hot_paths
    from argilla_server.contexts import webhooks
    from argilla_server.models import database
    from argilla_server.webhooks.v1 import records

    METADATA = [{"type": "terms", "values": ["a", "b"]}, {"type": "integer", "min": 1, "max": 9}, {"type": "float"}]
    QUESTIONS = [{"type": "label_selection", "options": [{"value": "y", "text": "Y"}, {"value": "n", "text": "N"}]},
                 {"type": "text", "use_markdown": False}, {"type": "rating", "options": [{"value": 1}, {"value": 2}]}]
    out = {}
    # Argilla's own parse, before install(): what the patched property must return
    expected = [database.MetadataProperty(settings=s).parsed_settings for s in METADATA] + \\
               [database.Question(settings=s).parsed_settings for s in QUESTIONS]
    original_notify = records.notify_record_event
    hot_paths.install()
    hot_paths.install()  # twice: still one layer

    adapters = []
    real_adapter = pydantic.TypeAdapter
    pydantic.TypeAdapter = lambda t: adapters.append(t) or real_adapter(t)
    parsed = []
    for _ in range(50):
        parsed = [database.MetadataProperty(settings=s).parsed_settings for s in METADATA] + \\
                 [database.Question(settings=s).parsed_settings for s in QUESTIONS]
    out["same_values"] = [p.model_dump() for p in parsed] == [p.model_dump() for p in expected]
    out["same_types"] = [type(p).__name__ for p in parsed] == [type(p).__name__ for p in expected]
    out["adapters_built"] = len(adapters)
    try:
        database.MetadataProperty(settings={"type": "integer", "min": "nine"}).parsed_settings
        out["bad_settings"] = "accepted"
    except pydantic.ValidationError:
        out["bad_settings"] = "refused"

    callers = {}
    for name in hot_paths.NOTIFY_CALLERS:
        module = importlib.import_module(name)
        callers[name] = [getattr(getattr(module, a), "babelrag_patched", False)
                         for a in hot_paths.NOTIFY_NAMES if hasattr(module, a)]
    out["callers_patched"] = callers
    out["module_patched"] = getattr(records.notify_record_event, "babelrag_patched", False)

    built = []
    async def build_record_event(db, record_event, record):  # Argilla's: 6 SQL statements and a serialisation
        built.append(record)
        class Event:
            async def notify(self, db):
                return ["job-for-" + record]
        return Event()
    records.build_record_event = build_record_event
    enabled = []
    async def list_enabled_webhooks(db):
        return list(enabled)
    webhooks.list_enabled_webhooks = list_enabled_webhooks
    notify = records.notify_record_event
    out["no_webhook"] = [asyncio.run(notify(None, "record.created", "r1")), list(built)]
    enabled.append("hook")
    out["a_webhook"] = [asyncio.run(notify(None, "record.created", "r2")), list(built)]
    out["original_kept"] = notify is not original_notify
    print(json.dumps(out))
    """
)


def test_hot_paths_skip_only_unsent_events_and_parse_settings_the_same_with_one_adapter_per_type(tmp_path):
    out = run_engine_script(tmp_path, SCRIPT)
    assert out["same_values"] and out["same_types"]
    assert out["adapters_built"] == 2  # metadata settings, question settings: not one per call (300 calls)
    assert out["bad_settings"] == "refused"  # validation is Argilla's own
    assert out["module_patched"] and out["original_kept"]
    assert {name: all(flags) and bool(flags) for name, flags in out["callers_patched"].items()} == {
        name: True for name in out["callers_patched"]}
    assert out["no_webhook"] == [[], []]  # no webhook enabled: no event built
    assert out["a_webhook"] == [["job-for-r2"], ["r2"]]  # one enabled: Argilla's event, built and sent
