"""A stage's fingerprint: what its output was made from, as one hash.

The fingerprint is a pure function of the stage's declaration (``StageSpec``: name, version, config
sections, file fields, LLM endpoints, prompts), the config, its inputs' manifests (their *output*
fingerprints) and the content of the files the config names. The runner compares it with the manifest of
the stage's finished output to skip an unchanged stage; nothing here writes to the build (the content
hasher's cache only saves re-reading files).
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from babelrag.config import Config
from babelrag.errors import ConfigError, StageError
from babelrag.hashing import ContentHasher, stable_hash
from babelrag.llm.prompts import Prompt
from babelrag.stage import StageSpec
from babelrag.store import Manifest


class StageFingerprint(NamedTuple):
    """What ``stage_fingerprint`` found: the hash and the parts the manifest records beside it."""

    value: str
    config_hash: str  # the output-relevant config (records' provenance)
    inputs: dict[str, str]  # input stage -> its output fingerprint ("missing" when not built)
    files: dict[str, str]  # config field -> content digest of the file or folder it names


def config_values(config: Config, selector: str) -> list[tuple[str, Any]]:
    """(concrete key, value) for a dotted selector: ``a.b``, ``a.items[].c`` (each list item),
    ``a.mapping{}`` (each value). Missing keys and None values are left out."""
    found: list[tuple[str, Any]] = [("", config.model_dump(mode="json"))]
    for part in selector.split("."):
        each_item, each_value = part.endswith("[]"), part.endswith("{}")
        name = part[:-2] if each_item or each_value else part
        nxt: list[tuple[str, Any]] = []
        for key, value in found:
            if not isinstance(value, dict) or value.get(name) is None:
                continue
            child, ckey = value[name], f"{key}.{name}" if key else name
            if each_item and isinstance(child, list):
                nxt.extend((f"{ckey}[{i}]", v) for i, v in enumerate(child) if v is not None)
            elif each_value and isinstance(child, dict):
                nxt.extend((f"{ckey}.{k}", v) for k, v in sorted(child.items()) if v is not None)
            elif not each_item and not each_value:
                nxt.append((ckey, child))
        found = nxt
    return found


def conditions_hold(config: Config, conditions: Iterable[tuple[str, Any]]) -> bool:
    """Whether every ``(selector, value)`` condition of a StageSpec entry holds in ``config``."""
    return all(dict(config_values(config, k)).get(k) == v for k, v in conditions)


def endpoint_settings(config: Config, name: str | None) -> dict[str, Any]:
    """The output-relevant settings of the endpoint ``name`` resolves to (as the LLM layer resolves it):
    model identity and sampling, never limits, retries, prices or keys (``babelrag.run_only``)."""
    try:
        resolved, endpoint = config.llm.endpoint(name)
    except ConfigError:
        return {"requested": name, "resolved": None}  # no endpoint: the stage itself will say so
    return {"requested": name, "resolved": resolved, **endpoint.fingerprint_dump()}


def file_digests(spec: StageSpec, config: Config, hasher: ContentHasher) -> dict[str, str]:
    """Content digest of every existing file or folder the stage's ``files`` fields name."""
    out: dict[str, str] = {}
    for selector in spec.files:
        for key, value in config_values(config, selector):
            if not isinstance(value, str) or not value:
                continue
            path = config.resolve(value)
            if path is None or not path.exists():
                path = Path(value).expanduser()  # e.g. spaCy resolves a model path against the cwd
            if path.exists():
                out[key] = hasher.digest(path)
    return out


def llm_settings(spec: StageSpec, config: Config) -> dict[str, Any]:
    """Endpoint settings of LLMs the stage calls although ``llm`` is not one of its config sections."""
    out: dict[str, Any] = {}
    for field_name, conditions in spec.llm_endpoints:
        if conditions_hold(config, conditions):
            values = dict(config_values(config, field_name))
            out[field_name] = endpoint_settings(config, values.get(field_name))
    return out


def prompt_versions(spec: StageSpec) -> dict[str, str]:
    """``id@version`` of each prompt file the stage declares (read, never imported)."""
    out = {}
    for entry in spec.prompts:
        module, _, rel = entry.partition(":")
        found = importlib.util.find_spec(module)
        if found is None or not found.origin:
            raise StageError(f"stage '{spec.name}': prompt {entry!r} names module {module!r}, which is not found")
        out[entry] = Prompt.load(Path(found.origin).parent / rel).ref
    return out


def stage_config_hash(spec: StageSpec, config: Config) -> str:
    """The output-relevant config of a stage: its sections' values (run-only fields left out) and the
    model identity and sampling of the LLM endpoints it calls."""
    sections = config.section_hash(*spec.config_sections)
    llm = llm_settings(spec, config)
    return stable_hash({"config": sections, "llm": llm}) if llm else sections


def stage_fingerprint(spec: StageSpec, config: Config, upstream: Mapping[str, Manifest | None],
                      hasher: ContentHasher | None = None) -> StageFingerprint:
    """The fingerprint of ``spec`` under ``config``, given the manifests of its inputs (``upstream``: input
    stage -> manifest, None when not built). ``hasher`` digests the files the config names (a cached one
    saves re-reading them; without it they are read)."""
    hashed_config = stage_config_hash(spec, config)
    inputs = {}
    for name in spec.inputs:
        manifest = upstream.get(name)
        inputs[name] = manifest.output_fingerprint if manifest else "missing"
    parts: dict[str, Any] = {"stage": spec.name, "version": spec.version, "config": hashed_config,
                             "inputs": inputs}
    # added only when present, so stages without such fields keep their earlier fingerprints
    files = file_digests(spec, config, hasher or ContentHasher()) if spec.files else {}
    if files:
        parts["files"] = files
    if spec.prompts:
        parts["prompts"] = prompt_versions(spec)
    return StageFingerprint(stable_hash(parts), hashed_config, inputs, files)
