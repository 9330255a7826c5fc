"""Every request babelrag makes to an Argilla server, in one place under push, pull and adjudication.

Why one module: push compares records with the server's, pull reads responses, adjudication looks datasets
up; each needs the same connection, dataset look-up and record paging, and when that access was split
between push and pull the three modules imported each other in a circle. The SDK (``argilla``) is used for
connecting and finding workspaces and datasets; records, responses and suggestions are read and deleted
over the REST API, because the SDK drops response timestamps.
"""
from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

from babelrag.errors import StageError

from .server.process import load_credentials, running_server
from .settings import AnnotateSettings

PAGE = 1000  # records per request when paging through a dataset


@dataclass(frozen=True)
class Target:
    url: str
    api_key: str
    source: str  # "env", "config" or "local server"


def resolve_target(settings: AnnotateSettings) -> Target:
    """``ARGILLA_API_URL``/``ARGILLA_API_KEY`` (a hosted Argilla) if set, else the config's ``api_url``,
    else the local server started by ``babelrag annotate serve`` from the same home dir."""
    url = os.environ.get("ARGILLA_API_URL") or settings.api_url
    key = os.environ.get("ARGILLA_API_KEY")
    if url:
        if not key:
            raise StageError(f"Argilla at {url}: set ARGILLA_API_KEY to an owner/admin API key")
        return Target(url.rstrip("/"), key, "env" if os.environ.get("ARGILLA_API_URL") else "config")
    home = settings.server.resolved_home()
    info = running_server(home)
    creds = load_credentials(home)
    if not info or not creds:
        raise StageError(
            f"no Argilla server: start one with `babelrag annotate serve` (home {home}) "
            "or set ARGILLA_API_URL and ARGILLA_API_KEY for a hosted Argilla"
        )
    return Target(info["url"], creds["api_key"], "local server")


@contextmanager
def argilla_errors(url: str, what: str):
    """Turn SDK/HTTP failures into one-line StageErrors that name the server and the step."""
    import httpx
    from argilla._exceptions._base import ArgillaError

    try:
        yield
    except ArgillaError as exc:
        raise StageError(f"Argilla at {url}: {what} failed: {exc}") from None
    except httpx.HTTPStatusError as exc:
        hint = " (the API key needs the owner or admin role)" if exc.response.status_code in (401, 403) else ""
        raise StageError(f"Argilla at {url}: {what} failed: HTTP {exc.response.status_code}{hint}: "
                         f"{exc.response.text[:300]}") from None
    except httpx.HTTPError as exc:
        raise StageError(f"Argilla at {url}: {what} failed: {exc} (is the server running?)") from None


def client(target: Target):
    import argilla as rg

    return rg.Argilla(api_url=target.url, api_key=target.api_key, timeout=120, retries=2)


def quiet(fn: Callable[..., Any], *args: Any) -> Any:
    """SDK look-ups warn when a name is absent; absence is the normal case here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


# --- datasets -------------------------------------------------------------------------------------------

def get_dataset(rg_client, name: str, workspace: str):
    """The dataset ``name`` in ``workspace``, or None when either does not exist."""
    ws = quiet(rg_client.workspaces, workspace)
    if ws is None:
        return None
    return quiet(lambda: rg_client.datasets(name=name, workspace=ws))


def find_dataset(rg_client, settings: AnnotateSettings, project: str, suffix: str = "") -> Optional[Any]:
    return get_dataset(rg_client, settings.dataset_name(project, suffix), settings.project(project).workspace or settings.workspace)


def project_datasets(rg_client, settings: AnnotateSettings, project: str) -> list[Any]:
    """Every dataset of a project (translation has one per language) in its workspace."""
    workspace = settings.project(project).workspace or settings.workspace
    base = settings.dataset_name(project)
    ws = quiet(rg_client.workspaces, workspace)
    if ws is None:
        return []
    return sorted((d for d in ws.datasets if d.name == base or d.name.startswith(base + "-")), key=lambda d: d.name)


def adjudication_name(settings: AnnotateSettings, dataset: str) -> str:
    """The adjudication dataset of a project dataset: ``babelrag-translation-de`` ->
    ``babelrag-adjudication-translation-de`` (the language stays the suffix)."""
    prefix = settings.dataset_prefix + "-" if settings.dataset_prefix else ""
    return prefix + "adjudication-" + dataset.removeprefix(prefix)


def adjudication_datasets(rg_client, settings: AnnotateSettings, project: str) -> list[Any]:
    """The adjudication datasets of a project (in the adjudication workspace)."""
    ws = quiet(rg_client.workspaces, settings.adjudication_workspace)
    if ws is None:
        return []
    base = adjudication_name(settings, settings.dataset_name(project))
    return sorted((d for d in ws.datasets if d.name == base or d.name.startswith(base + "-")), key=lambda d: d.name)


# --- REST reads ------------------------------------------------------------------------------------------

def get_json(rg_client, url: str, **params: Any) -> Any:
    resp = rg_client.http_client.get(url, params=params)
    resp.raise_for_status()
    return resp.json()


def iter_records(rg_client, dataset_id: str, include: str = "responses,suggestions") -> Iterator[dict]:
    """Every record of a dataset, page by page, with the relationships ``include`` names (a push, which
    only compares records, leaves the responses out)."""
    offset = 0
    while True:
        page = get_json(rg_client, f"/api/v1/datasets/{dataset_id}/records", include=include, offset=offset,
                        limit=PAGE)
        yield from page["items"]
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return


def question_names(rg_client, dataset_id: str) -> dict[str, str]:
    """Question id -> name (records name their suggestions' and responses' questions by id)."""
    return {q["id"]: q["name"] for q in get_json(rg_client, f"/api/v1/datasets/{dataset_id}/questions")["items"]}


def usernames(rg_client) -> dict[str, str]:
    """User id -> username (responses name their annotator by id)."""
    return {u["id"]: u["username"] for u in get_json(rg_client, "/api/v1/users")["items"]}


def record_responses(rg_client, argilla_id: str) -> list[dict]:
    """The responses a record holds (one request for that record only)."""
    return get_json(rg_client, f"/api/v1/records/{argilla_id}").get("responses") or []


# --- REST deletes ----------------------------------------------------------------------------------------

def delete_response(rg_client, response_id: str) -> None:
    """Argilla recomputes the record's status: with too few submitted responses it is pending again."""
    resp = rg_client.http_client.delete(f"/api/v1/responses/{response_id}")
    resp.raise_for_status()


def delete_suggestions(rg_client, argilla_id: str, ids: list[str]) -> None:
    resp = rg_client.http_client.delete(f"/api/v1/records/{argilla_id}/suggestions", params={"ids": ",".join(ids)})
    resp.raise_for_status()
