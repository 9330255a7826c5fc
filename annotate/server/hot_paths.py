"""Two hot paths of argilla-server 2.8 made cheap, with the same results (runs INSIDE the server venv).

Both cost a bulk push of records most of its server time (``bench/bench_annotate_push.py``), doing work
whose result is thrown away or identical every time:

- Webhook events. Argilla builds a webhook event for every record it writes, webhooks or not: per record it
  loads the dataset with its workspace, fields, questions, metadata properties and vector settings (six SQL
  statements) and serialises the record, and only then finds no enabled webhook to send it to
  (``jobs.webhook_jobs.enqueue_notify_events`` returns ``[]``). Here the enabled webhooks are looked up
  first (one statement); when there are any, the event is built and sent exactly as Argilla does.
- Settings parsing. ``MetadataProperty.parsed_settings`` and ``Question.parsed_settings`` build a new
  pydantic ``TypeAdapter`` (a fresh validation schema, milliseconds) on every call: three times per record
  for three metadata properties. Here one adapter per settings type validates the same way.

The installed package is not modified: ``install()`` rebinds the names at import time, in the API server
and in the rq workers (both start through ``launcher.py``). Imports nothing from babelrag: the server venv
does not have the project installed.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any, List

# the modules that call notify_record_event (imported by name, so each holds its own reference)
NOTIFY_CALLERS = ("argilla_server.bulk.records_bulk", "argilla_server.contexts.records",
                  "argilla_server.contexts.datasets", "argilla_server.contexts.distribution")
NOTIFY_NAMES = ("notify_record_event_v1", "notify_record_event")


def install() -> None:
    _events_only_for_enabled_webhooks()
    _one_settings_adapter_per_type()


def _events_only_for_enabled_webhooks() -> None:
    from argilla_server.contexts import webhooks
    from argilla_server.webhooks.v1 import records

    original = records.notify_record_event
    if getattr(original, "babelrag_patched", False):
        return

    async def notify_record_event(db: Any, record_event: Any, record: Any) -> List[Any]:
        if not await webhooks.list_enabled_webhooks(db):
            return []
        return await original(db, record_event, record)

    notify_record_event.babelrag_patched = True  # type: ignore[attr-defined]
    records.notify_record_event = notify_record_event
    for name in NOTIFY_CALLERS:
        module = importlib.import_module(name)
        for attr in NOTIFY_NAMES:
            if getattr(module, attr, None) is original:
                setattr(module, attr, notify_record_event)


@lru_cache(maxsize=None)
def _adapter(settings_type: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(settings_type)


def _one_settings_adapter_per_type() -> None:
    from argilla_server.models import database

    for model, settings_type in ((database.MetadataProperty, database.MetadataPropertySettings),
                                 (database.Question, database.QuestionSettings)):
        model.parsed_settings = property(
            lambda self, _t=settings_type: _adapter(_t).validate_python(self.settings),
            doc=f"``settings`` validated as {settings_type} (one TypeAdapter for all calls)")
