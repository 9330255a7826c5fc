"""Evaluate the subset of the Elasticsearch query DSL that argilla-server 2.8.0 emits, over JSON documents.

Pure Python with no Argilla import, so it is unit-tested in the project's venv and imported by
``sqlite_engine`` inside the server venv. Semantics follow Elasticsearch where Argilla relies on them:
multi-valued fields match if any value matches, ``nested`` clauses match one array element at a time,
missing sort values go last, terms aggregations count documents per term.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import uuid
from typing import Any, Dict, List, Optional


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if hasattr(value, "value"):  # enums
        return value.value
    return str(value)


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, ensure_ascii=False)


def normalise(obj: Any) -> Any:
    """What Elasticsearch would store: JSON types only (uuids/dates/enums as strings)."""
    return json.loads(dumps(obj))


def _deep_merge(target: dict, update: dict) -> dict:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = value
    return target


# ---------------------------------------------------------------- query DSL evaluation


def _values(doc: Any, path: str) -> List[Any]:
    """Every value at a dotted path, flattening lists (Elasticsearch's multi-value semantics)."""
    current = [doc]
    for part in path.split("."):
        nxt: List[Any] = []
        for item in current:
            if isinstance(item, dict) and part in item:
                value = item[part]
                if isinstance(value, list):
                    nxt.extend(value)
                else:
                    nxt.append(value)
        current = nxt
    out: List[Any] = []
    for value in current:
        if isinstance(value, list):
            out.extend(value)
        elif value is not None:
            out.append(value)
    return out


def _as_list(value: Any) -> List[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return str(a) == str(b)


def _cmp_value(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _in_range(value: Any, spec: dict) -> bool:
    try:
        v = _cmp_value(value)
        for op, bound in spec.items():
            if bound is None:
                continue
            b = _cmp_value(bound)
            if isinstance(v, str) != isinstance(b, str):
                v, b = str(v), str(b)
            if op == "gte" and not v >= b:
                return False
            if op == "gt" and not v > b:
                return False
            if op == "lte" and not v <= b:
                return False
            if op == "lt" and not v < b:
                return False
    except TypeError:
        return False
    return True


_TOKEN = re.compile(r"\w+", re.UNICODE)


def _tokens(text: str) -> List[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def _text_values(doc: dict, field: str) -> List[str]:
    if field.endswith("*"):
        prefix = field[:-1].rstrip(".")
        roots = _values(doc, prefix) if prefix else [doc]
        out: List[str] = []

        def walk(node: Any) -> None:
            if isinstance(node, dict):
                for v in node.values():
                    walk(v)
            elif isinstance(node, list):
                for v in node:
                    walk(v)
            elif node is not None:
                out.append(str(node))

        walk(roots)
        return out
    return [str(v) for v in _values(doc, field)]


def _simple_query_string(doc: dict, spec: dict) -> float:
    """AND of query terms (prefix match with a trailing ``*``), case-insensitive; score = term hits."""
    terms = [t for t in re.split(r"\s+", spec.get("query", "").strip()) if t]
    if not terms:
        return 1.0
    words: List[str] = []
    for field in spec.get("fields", ["*"]):
        for text in _text_values(doc, field):
            words.extend(_tokens(text))
    score = 0.0
    for term in terms:
        prefix = term.endswith("*")
        wanted = _tokens(term)
        if not wanted:
            continue
        hits = 0
        for w in wanted:
            if prefix and w == wanted[-1]:
                hits += sum(1 for word in words if word.startswith(w))
            else:
                hits += words.count(w)
        if hits == 0:
            return 0.0
        score += hits
    return score


def match(doc: dict, query: Optional[dict]) -> float:
    """Score (> 0 means the document matches) of one query clause against one document."""
    if not query:
        return 1.0
    (kind, spec), = query.items()
    if kind == "match_all":
        return 1.0
    if kind == "bool":
        score = 0.0
        must = _as_list(spec.get("must")) + _as_list(spec.get("filter"))
        for clause in must:
            s = match(doc, clause)
            if s <= 0:
                return 0.0
            score += s
        for clause in _as_list(spec.get("must_not")):
            if match(doc, clause) > 0:
                return 0.0
        should = _as_list(spec.get("should"))
        if should:
            needed = spec.get("minimum_should_match")
            needed = int(needed) if needed is not None else (0 if must else 1)
            matched = [s for s in (match(doc, c) for c in should) if s > 0]
            if len(matched) < needed:
                return 0.0
            score += sum(matched)
        return score if score > 0 else 1.0
    if kind == "term":
        (field, value), = spec.items()
        if isinstance(value, dict):
            value = value.get("value")
        return 1.0 if any(_eq(v, value) for v in _values(doc, field)) else 0.0
    if kind == "terms":
        (field, wanted), = spec.items()
        return 1.0 if any(_eq(v, w) for v in _values(doc, field) for w in wanted) else 0.0
    if kind == "range":
        (field, bounds), = spec.items()
        return 1.0 if any(_in_range(v, bounds) for v in _values(doc, field)) else 0.0
    if kind == "exists":
        return 1.0 if _values(doc, spec["field"]) else 0.0
    if kind == "ids":
        return 1.0 if str(doc.get("id")) in {str(v) for v in spec.get("values", [])} else 0.0
    if kind == "nested":
        path = spec["path"]
        scores = [match({path: element}, spec.get("query")) for element in _values(doc, path)]
        scores = [s for s in scores if s > 0]
        return sum(scores) / len(scores) if scores else 0.0
    if kind == "simple_query_string":
        return _simple_query_string(doc, spec)
    if kind == "function_score":
        base = match(doc, spec.get("query"))
        if base <= 0:
            return 0.0
        for function in spec.get("functions", []):
            if "random_score" in function:
                seed = str(function["random_score"].get("seed", ""))
                digest = hashlib.sha1(f"{seed}:{doc.get('id')}".encode()).digest()
                return int.from_bytes(digest[:8], "big") / 2**64 + 1e-12
        return base
    raise ValueError(f"babelrag search engine: unsupported query clause {kind!r}")


# ---------------------------------------------------------------- sorting and aggregations


def _sort_key_value(doc: dict, field: str, spec: Any) -> Any:
    if isinstance(spec, dict) and "nested" in spec:
        nested = spec["nested"]
        path = nested["path"]
        relative = field[len(path) + 1 :] if field.startswith(path + ".") else field
        values = []
        for element in _values(doc, path):
            if nested.get("filter") and match({path: element}, nested["filter"]) <= 0:
                continue
            values.extend(_values(element, relative))
    else:
        values = _values(doc, field)
    values = [_cmp_value(v) for v in values]
    if not values:
        return None
    if all(isinstance(v, (int, float)) for v in values):
        return sum(values) / len(values)
    return min(str(v) for v in values)


def sort_hits(hits: List[tuple[float, int, dict]], sort: Optional[List[dict]]) -> List[tuple[float, int, dict]]:
    """Stable multi-key sort; missing values last whatever the direction (Elasticsearch's default)."""
    if not sort:
        return sorted(hits, key=lambda h: (-h[0], h[1]))
    result = sorted(hits, key=lambda h: h[1])
    for clause in reversed(sort):
        if isinstance(clause, str):
            clause = {clause: "asc"}
        (field, spec), = clause.items()
        order = spec.get("order", "asc") if isinstance(spec, dict) else spec
        reverse = str(order).lower() == "desc"
        present = [h for h in result if _sort_key_value(h[2], field, spec) is not None]
        missing = [h for h in result if _sort_key_value(h[2], field, spec) is None]

        def key(h: tuple[float, int, dict], field: str = field, spec: Any = spec) -> Any:
            v = _sort_key_value(h[2], field, spec)
            return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))

        result = sorted(present, key=key, reverse=reverse) + missing
    return result


def aggregate(docs: List[dict], aggregations: dict) -> dict:
    out: dict = {}
    for name, spec in aggregations.items():
        (kind, params), = spec.items()
        field = params["field"]
        if kind == "terms":
            counts: Dict[Any, int] = {}
            for doc in docs:
                for value in {dumps(v): v for v in _values(doc, field)}.values():
                    counts[value] = counts.get(value, 0) + 1
            buckets = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))[: int(params.get("size", 10))]
            out[name] = {"buckets": [{"key": k, "doc_count": c} for k, c in buckets]}
        elif kind == "value_count":
            out[name] = {"value": sum(len(_values(doc, field)) for doc in docs)}
        elif kind == "stats":
            nums = [float(v) for doc in docs for v in _values(doc, field) if isinstance(v, (int, float))]
            out[name] = {
                "count": len(nums),
                "min": min(nums) if nums else None,
                "max": max(nums) if nums else None,
                "avg": sum(nums) / len(nums) if nums else None,
                "sum": sum(nums),
            }
        else:
            raise ValueError(f"babelrag search engine: unsupported aggregation {kind!r}")
    return out


def hits_response(hits: List[tuple[float, int, dict]], total: int) -> dict:
    return {
        "hits": {
            "total": {"value": total, "relation": "eq"},
            "hits": [{"_id": doc["id"], "_score": score} for score, _, doc in hits],
        }
    }


# ---------------------------------------------------------------- update scripts Argilla sends

_SUGGESTION_REMOVE = re.compile(r'ctx\._source\["suggestions"\]\.remove\("(?P<name>[^"]+)"\)')


def apply_update(source: dict, body: dict) -> dict:
    if "doc" in body:
        return _deep_merge(source, normalise(body["doc"]))
    script = body.get("script")
    if isinstance(script, str):
        m = _SUGGESTION_REMOVE.search(script)
        if not m:
            raise ValueError(f"babelrag search engine: unsupported update script {script!r}")
        (source.get("suggestions") or {}).pop(m.group("name"), None)
        return source
    if isinstance(script, dict):
        text = script.get("source", "")
        response = normalise(script.get("params", {}).get("response", {}))
        responses = [r for r in (source.get("responses") or []) if r.get("id") != response.get("id")]
        if "responses.add" in text:
            responses.append(response)
        elif "remove(i)" not in text:
            raise ValueError(f"babelrag search engine: unsupported update script {text!r}")
        source["responses"] = responses
        return source
    raise ValueError(f"babelrag search engine: unsupported update body keys {sorted(body)}")


