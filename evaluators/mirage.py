"""MIRAGE-Bench: heuristic features, pairwise judge battles and the random-forest surrogate.

Heuristic features per answer (flat dict per query id): target-language share (lingua), citation
recall@k and MAP@k — computed on the citations in the ORDER they appear in the answer (first
mention), unlike the seed code which ranked a set — plus sentence BLEU (sacrebleu) and ROUGE-L
(own LCS, CJK per character) against the reference answer, and answer length.

Conventions: with no relevant documents, recall@k and MAP@k are undefined (None: left out of the
mean and counted as ``<feature>_undefined``, as RAGE recall); BLEU/ROUGE-L of an empty answer are 0.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from babelrag.errors import InputError
from babelrag.evaluators.answers import passages_shown
from babelrag.evaluators.bradley_terry import Battle, bradley_terry
from babelrag.evaluators.citations import parse_citations, strip_citations
from babelrag.evaluators.crossencoder import CrossEncoderSpec, NLIJudge, Reranker, nli_support, reranker_scores
from babelrag.evaluators.judges import PairVerdict, prompt, reply_values, scores_1_to_5, sentence_support, support_share
from babelrag.evaluators.metric import Column, Metric, MetricRun
from babelrag.evaluators.registry import register
from babelrag.languages import language_name
from babelrag.evaluators.report import plot_bradley_terry
from babelrag.evaluators.report_views import ReportPage, number_cell
from babelrag.evaluators.results import ScoreResult, make_result
from babelrag.langcheck import DEFAULT_LANGUAGES, read_language
from babelrag.sentences import split_sentences
from babelrag.tokens import tokenize
from babelrag.stats import Estimate, kendall_tau

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner

# ---------------------------------------------------------------- citation ranking metrics


def recall_at_k(cited_in_order: Sequence[Any], relevant: Iterable[Any], k: int) -> Optional[float]:
    """|first k distinct citations ∩ relevant| / |relevant| (None without relevant documents)."""
    rel = set(relevant)
    top = list(dict.fromkeys(cited_in_order))[:k]
    if not rel:
        return None
    return len(set(top) & rel) / len(rel)


def average_precision_at_k(cited_in_order: Sequence[Any], relevant: Iterable[Any], k: int) -> Optional[float]:
    """AP@k over the citation order: sum of precision@r at relevant ranks r <= k, / min(k, |relevant|)
    (None without relevant documents)."""
    rel = set(relevant)
    top = list(dict.fromkeys(cited_in_order))[:k]
    if not rel:
        return None
    hits, total = 0, 0.0
    for rank, doc in enumerate(top, start=1):
        if doc in rel:
            hits += 1
            total += hits / rank
    return total / min(k, len(rel))


# ---------------------------------------------------------------- overlap with the reference

_BLEU_TOKENIZER = {"zh": "zh", "ja": "char", "ko": "char", "th": "char"}


def bleu(hypothesis: str, reference: str, language: str = "en") -> float:
    """Sentence BLEU in [0, 1] with a tokenizer suited to the language (sacrebleu)."""
    import sacrebleu

    if not hypothesis.strip() or not reference.strip():
        return 0.0
    tok = _BLEU_TOKENIZER.get(language, "13a")
    return sacrebleu.sentence_bleu(hypothesis, [reference], tokenize=tok).score / 100.0


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel (Allison-Dix / Hyyrö).

    One Python big-int operation per token of ``b`` instead of a len(a) x len(b) table, so long CJK
    answers (one token per character) stay fast.
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full
    for tok in b:
        u = row & masks.get(tok, 0)
        row = ((row + u) | (row - u)) & full
    return len(a) - bin(row).count("1")


def rouge_l(hypothesis: str, reference: str) -> float:
    """ROUGE-L F1 from the longest common token subsequence (CJK characters are tokens)."""
    h, r = tokenize(hypothesis), tokenize(reference)
    if not h or not r:
        return 0.0
    lcs = _lcs(h, r)
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(h), lcs / len(r)
    return 2 * p * rec / (p + rec)


# ---------------------------------------------------------------- heuristic scorer


@dataclass(frozen=True)
class HeuristicItem:
    """One answer: ``relevant`` are 1-based positions of the relevant documents shown; ``doc_ids``
    (optional) their MIRACL ids, when the answer cites ``[docid#n]`` as MIRAGE-Bench prompts ask."""

    query_id: str
    answer: str
    reference: str
    language: str
    n_docs: int
    relevant: Sequence[int] = field(default_factory=tuple)
    doc_ids: Sequence[str] = field(default_factory=tuple)


FEATURE_KEYS = ("language_share", "citation_recall@k", "citation_map@k", "bleu", "rouge_l", "answer_length")


def language_share(text: str, target: str, languages: Iterable[str] = DEFAULT_LANGUAGES) -> float:
    """Share of the answer's characters in sentences that fit ``target`` (``babelrag.langcheck``: by their
    function words, names masked; a sentence too short to read fits). 0 for an empty answer."""
    langs = set(languages) | {target.lower()}
    sentences = split_sentences(text)
    total = sum(len(s) for s in sentences)
    if total == 0:
        return 0.0
    return sum(len(s) for s in sentences if read_language(s, langs).fits(target.lower())) / total


def heuristic_features(item: HeuristicItem, k: int = 5, languages: Iterable[str] = DEFAULT_LANGUAGES) -> dict[str, Any]:
    cited = parse_citations(item.answer, item.n_docs, item.doc_ids or None).ordered
    text = strip_citations(item.answer)
    return {
        "query_id": item.query_id,
        "language_share": language_share(text, item.language, languages) if text.strip() else 0.0,
        "citation_recall@k": recall_at_k(cited, item.relevant, k),
        "citation_map@k": average_precision_at_k(cited, item.relevant, k),
        "bleu": bleu(text, item.reference, item.language),
        "rouge_l": rouge_l(text, item.reference),
        "answer_length": len(tokenize(text)),
    }


def score_heuristics(
    items: Iterable[HeuristicItem | Mapping[str, Any]],
    k: int = 5,
    languages: Iterable[str] = DEFAULT_LANGUAGES,
    rounds: int = 1000,
    seed: int = 0,
) -> ScoreResult:
    """MIRAGE heuristic features per query with bootstrap CIs."""
    langs = tuple(languages)
    rows = []
    for i, it in enumerate(items):
        if isinstance(it, Mapping):
            try:
                it = HeuristicItem(**it)
            except TypeError as exc:
                raise InputError(f"heuristic item {i}: {exc}") from exc
        rows.append(heuristic_features(it, k=k, languages=langs))
    return make_result("mirage.heuristics", rows, FEATURE_KEYS, rounds=rounds, seed=seed, counts={"items": len(rows)})


# ---------------------------------------------------------------- pairwise judging

Verdict = str  # "first" | "second" | "tie"
Judge = Callable[[str, str, str], Verdict]  # (query_id, first answer, second answer) -> verdict


@dataclass(frozen=True)
class Matchup:
    query_id: str
    model_a: str
    answer_a: str
    model_b: str
    answer_b: str


def all_matchups(answers: Mapping[str, Mapping[str, str]]) -> list[Matchup]:
    """Every pair of models on every query both answered; ``answers[model][query_id] = answer``."""
    models = sorted(answers)
    out = []
    for x in range(len(models)):
        for y in range(x + 1, len(models)):
            a, b = models[x], models[y]
            for qid in sorted(set(answers[a]) & set(answers[b])):
                out.append(Matchup(qid, a, answers[a][qid], b, answers[b][qid]))
    return out


def forfeits(answers: Mapping[str, Mapping[str, str]], queries: Iterable[str]) -> list[Battle]:
    """Battles no judge is asked about: on a query only one of two models answered, the answer beats the
    missing one in both orders (two battles, as a judged matchup gives); none answered: no battle."""
    models = sorted(answers)
    queries = sorted(queries)
    out = []
    for x in range(len(models)):
        for y in range(x + 1, len(models)):
            a, b = models[x], models[y]
            for qid in queries:
                has_a, has_b = qid in answers[a], qid in answers[b]
                if has_a != has_b:
                    out += [Battle(a, b, "model_a" if has_a else "model_b")] * 2
    return out


@dataclass
class JudgedBattles:
    battles: list[Battle]
    consistent: int  # matchups where both orders gave the same (position-corrected) verdict
    inconsistent: int
    failed: int  # judge calls that returned no usable verdict (skipped, counted)


def _to_winner(verdict: Verdict, first_is_a: bool) -> str | None:
    if verdict == "tie":
        return "tie"
    if verdict not in ("first", "second"):
        return None
    return "model_a" if (verdict == "first") == first_is_a else "model_b"


def judge_battles(matchups: Iterable[Matchup], judge: Judge, seed: int = 0) -> JudgedBattles:
    """Judge each matchup in both orders (against position bias); each order is one battle.

    Which order is asked first is randomised with ``seed`` (matters for stateful/cached judges).
    """
    rng = random.Random(seed)
    out = JudgedBattles([], 0, 0, 0)
    for mu in matchups:
        orders = [True, False]
        rng.shuffle(orders)
        winners = []
        for first_is_a in orders:
            first, second = (mu.answer_a, mu.answer_b) if first_is_a else (mu.answer_b, mu.answer_a)
            w = _to_winner(judge(mu.query_id, first, second), first_is_a)
            if w is None:
                out.failed += 1
                continue
            winners.append(w)
            out.battles.append(Battle(mu.model_a, mu.model_b, w))
        if len(winners) == 2:
            if winners[0] == winners[1]:
                out.consistent += 1
            else:
                out.inconsistent += 1
    return out


# ---------------------------------------------------------------- surrogate (learning to rank)
MIN_SURROGATE_MODELS = 5  # a rank correlation over fewer models says little (MIRAGE-Bench fits on many more)


@dataclass
class SurrogateResult:
    predicted: dict[str, float]  # every model's score predicted while it was held out
    target: dict[str, float]
    kendall_tau: float
    feature_importance: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kendall_tau": self.kendall_tau, "predicted": self.predicted, "target": self.target,
            "feature_importance": self.feature_importance,
        }


def model_features(
    per_query: Mapping[str, Sequence[Mapping[str, Any]]], keys: Sequence[str] = FEATURE_KEYS
) -> dict[str, dict[str, float]]:
    """Average per-query features into one vector per model.

    Missing/NaN values (a failed LLM-judged feature) are left out of the mean; a feature with no
    value at all for a model is an InputError, since the forest cannot use it.
    """
    out: dict[str, dict[str, float]] = {}
    for model, rows in per_query.items():
        if not rows:
            continue
        out[model] = {}
        for k in keys:
            vals = [float(r[k]) for r in rows if r.get(k) is not None and not np.isnan(float(r[k]))]
            if not vals:
                raise InputError(f"surrogate: model {model!r} has no value for feature {k!r}")
            out[model][k] = float(np.mean(vals))
    return out


def fit_surrogate(
    features: Mapping[str, Mapping[str, float]],
    target: Mapping[str, float],
    n_folds: int = 5,
    seed: int = 0,
    n_estimators: int = 200,
) -> SurrogateResult:
    """Random forest from per-model features to judge (Bradley-Terry) scores with held-out models.

    Models are split into ``n_folds`` folds; each model's score is predicted by a forest trained on
    the other folds only, so the Kendall tau between predicted and judge leaderboards measures how
    well the surrogate ranks models it has never seen.
    """
    from sklearn.ensemble import RandomForestRegressor

    models = sorted(set(features) & set(target))
    missing = sorted(set(target) ^ set(features))
    if missing:
        raise InputError(f"surrogate: models {missing} have features or a judge score but not both")
    if len(models) < 3:
        raise InputError(f"surrogate needs at least 3 models, got {len(models)}")
    keys = sorted(features[models[0]])
    x = np.array([[features[m][k] for k in keys] for m in models])
    y = np.array([target[m] for m in models])
    n_folds = min(n_folds, len(models))
    folds = np.random.default_rng(seed).permutation(len(models)) % n_folds
    pred = np.zeros(len(models))
    importance = np.zeros(len(keys))
    for f in range(n_folds):
        test = folds == f
        rf = RandomForestRegressor(n_estimators=n_estimators, random_state=seed, n_jobs=1)
        rf.fit(x[~test], y[~test])
        pred[test] = rf.predict(x[test])
        importance += rf.feature_importances_ / n_folds
    return SurrogateResult(
        predicted=dict(zip(models, pred.tolist())),
        target=dict(zip(models, y.tolist())),
        kendall_tau=kendall_tau(pred, y),
        feature_importance=dict(zip(keys, importance.tolist())),
    )


LLM_FEATURES = ("fluency", "answer_overlap", "support")


def load_support_models(reranker: Any, nli: Any) -> tuple[Any, Any]:
    """The optional cross-encoders (paths/specs -> models; loaded models pass through)."""
    if reranker is None and nli is None:
        return None, None

    if isinstance(reranker, (str, Path, CrossEncoderSpec)):
        reranker = Reranker(reranker)
    if isinstance(nli, (str, Path, CrossEncoderSpec)):
        nli = NLIJudge(nli)
    return reranker, nli


def pairwise_battles(
    runner: "LLMRunner", endpoint: str, matchups: Sequence[Matchup], questions: Mapping[str, str],
    references: Mapping[str, str], seed: int = 0, stage: str = "eval.mirage.pairwise",
) -> JudgedBattles:
    """Judge every matchup in both orders with the pairwise prompt (one batched call)."""
    requests, ids, keys = [], [], []
    for n, mu in enumerate(matchups):
        for tag, (first, second) in (("ab", (mu.answer_a, mu.answer_b)), ("ba", (mu.answer_b, mu.answer_a))):
            requests.append({"question": questions[mu.query_id], "reference": references.get(mu.query_id, ""),
                             "first": first, "second": second})
            ids.append(f"{n}:{mu.query_id}:{mu.model_a}:{mu.model_b}:{tag}")
            keys.append((mu.query_id, first, second))
    res = runner.map_structured(endpoint=endpoint, prompt=prompt("mirage_pairwise"), items=requests,
                                schema=PairVerdict, stage=stage, item_ids=ids)
    table = {}
    for key, v in zip(keys, reply_values(res)):
        table[key] = "fail" if v is None else {"A": "first", "B": "second", "tie": "tie"}[v.verdict]
    return judge_battles(matchups, lambda q, f, s: table[(q, f, s)], seed=seed)


@register
class MirageMetric(Metric):
    """MIRAGE-Bench: heuristic features per answer (+ LLM-judged fluency, overlap and support; optional
    reranker/NLI features), pairwise battles in both orders, Bradley-Terry with bootstrap CIs, and a
    surrogate (random forest on the features) when three or more models are compared.

    With a reranker: ``reranker_score`` = reranker(question, answer without citations); with an NLI model:
    ``support_nli`` = share of answer sentences some shown document entails (next to the LLM-judged
    ``support``, used because no NLI model works offline by default)."""

    name = "mirage"
    answer_keys = ("fluency", "answer_overlap", "support", "rouge_l")  # shown per answer in the report
    scores_unanswered = True
    description = "heuristic features, pairwise LLM judge, Bradley-Terry ratings, surrogate (MIRAGE-Bench)"
    prompts = ("mirage_fluency", "mirage_overlap", "mirage_pairwise", "garage_support")
    columns = (Column("bt_rating"),)

    def prepare(self, settings: Any) -> dict[str, Any]:
        reranker, nli = load_support_models(settings.reranker, settings.nli)
        return {"reranker": reranker, "nli": nli}

    def keys(self, run: MetricRun) -> tuple[str, ...]:
        return (*FEATURE_KEYS, *LLM_FEATURES, *(("reranker_score",) if run.shared.get("reranker") is not None else ()),
                *(("support_nli",) if run.shared.get("nli") is not None else ()))

    def score(self, run: MetricRun, model: str, answers: Sequence[Any]) -> ScoreResult:
        by_id, judge, settings = run.instances, run.judge, run.settings
        reranker, nli = run.shared.get("reranker"), run.shared.get("nli")
        # heuristics need no model: an unanswered instance is scored as the empty answer (0 everywhere)
        res = score_heuristics([HeuristicItem(a.instance_id, a.answer, by_id[a.instance_id].answer, a.language,
                                              len(a.doc_order), a.relevant) for a in answers],
                               languages=run.languages, rounds=settings.rounds, seed=settings.seed)
        rows = {a.id: row for a, row in zip(answers, res.items)}
        for a in answers:
            rows[a.id]["answered"] = a.ok
        answered = [a for a in answers if a.ok]
        ids = [a.id for a in answered]
        fluency = scores_1_to_5(run.runner, judge, "mirage_fluency",
                                [{"answer": a.answer, "language": language_name(a.language)} for a in answered], ids)
        overlap = scores_1_to_5(run.runner, judge, "mirage_overlap", [
            {"question": by_id[a.instance_id].question, "reference": by_id[a.instance_id].answer, "answer": a.answer}
            for a in answered], ids)
        support = sentence_support(run.runner, judge, [
            {"query_id": a.id, "response": strip_citations(a.answer), "passages": passages_shown(by_id[a.instance_id], a)}
            for a in answered], stage="eval.mirage.support")
        for a, f, o, sup in zip(answered, fluency, overlap, support):
            rows[a.id].update(fluency=f, answer_overlap=o, support=support_share(sup))
        for a in answers:
            if not a.ok:  # the judges' worst: fluency and overlap 1 of 5, nothing supported
                rows[a.id].update(fluency=1.0, answer_overlap=1.0, support=0.0)
        if reranker is not None:  # the reranker scores the empty answer like any other
            scores = reranker_scores(reranker, [by_id[a.instance_id].question for a in answers],
                                     [strip_citations(a.answer) for a in answers])
            for row, sc in zip(res.items, scores):
                row["reranker_score"] = sc
        if nli is not None:
            shares = nli_support(nli, [{"response": strip_citations(a.answer),
                                        "passages": passages_shown(by_id[a.instance_id], a)} for a in answered])
            for a, sh in zip(answered, shares):
                rows[a.id]["support_nli"] = sh
            for a in answers:
                rows[a.id].setdefault("support_nli", 0.0)
        counts = {**res.counts, "unanswered": len(answers) - len(answered)}
        return make_result(self.name, res.items, self.keys(run), rounds=settings.rounds, seed=settings.seed,
                           counts=counts)

    def compare(self, run: MetricRun, results: Mapping[str, ScoreResult], answers: Mapping[str, Sequence[Any]],
                evaluation: Any) -> None:
        settings, ev = run.settings, evaluation
        support = {k: getattr(m, "name", type(m).__name__) for k in ("reranker", "nli")
                   if (m := run.shared.get(k)) is not None}
        if support:
            ev.extra["support_models"] = support
        ev.view(self.name)["bradley_terry"] = []  # results.json says no ratings rather than leave the key out
        if len(results) < 2:
            return
        texts = {m: {a.instance_id: a.answer for a in answers[m] if a.ok} for m in results}
        judged = pairwise_battles(run.runner, run.judge, all_matchups(texts),
                                  {i: inst.question for i, inst in run.instances.items()},
                                  {i: inst.answer for i, inst in run.instances.items()}, seed=settings.seed)
        lost = forfeits(texts, run.instances)
        judged.battles.extend(lost)
        ev.extra["battles"] = {"n": len(judged.battles), "consistent_pairs": judged.consistent,
                               "inconsistent_pairs": judged.inconsistent, "failed_judgements": judged.failed,
                               "forfeits": len(lost)}
        if not judged.battles:
            return
        l2 = 0.0
        try:
            bt = bradley_terry(judged.battles, rounds=settings.rounds, seed=settings.seed)
        except InputError:  # a model never won (or never lost): regularise slightly and say so
            l2 = 0.01
            bt = bradley_terry(judged.battles, rounds=settings.rounds, seed=settings.seed, l2=l2)
        ev.extra["battles"]["l2"] = l2
        ratings = ev.view(self.name)["bradley_terry"] = bt.leaderboard()
        for row in ratings:
            if row["model"] in ev.scores:
                ev.scores[row["model"]]["bt_rating"] = Estimate(row["rating"], row["ci_low"], row["ci_high"],
                                                                bt.n_battles)
        if len(results) >= 3:
            features = {m: r.items for m, r in results.items()}
            sur = fit_surrogate(model_features(features, self.keys(run)),
                                {r["model"]: r["rating"] for r in ratings},
                                n_folds=min(5, len(results)), seed=settings.seed)
            ev.view(self.name)["surrogate"] = sur.to_dict()

    def view_results(self, view: Mapping[str, Any]) -> dict[str, Any]:
        return {"bradley_terry": list(view.get("bradley_terry") or []),
                **({"surrogate": view["surrogate"]} if view.get("surrogate") else {})}

    def view_plots(self, view: Mapping[str, Any]) -> dict[str, bytes]:
        ratings = view.get("bradley_terry")
        return {"Bradley-Terry ratings": plot_bradley_terry(ratings)} if ratings else {}

    def view_html(self, view: Mapping[str, Any], page: ReportPage) -> str:
        """The surrogate's Kendall τ, with a warning when it rests on fewer than MIN_SURROGATE_MODELS models."""
        sur = view.get("surrogate")
        if not sur:
            return ""
        n = len(sur.get("target") or {})
        tau = sur.get("kendall_tau")
        warn = (f'<div class="notice">Kendall τ rests on {n} models (fewer than {MIN_SURROGATE_MODELS}): it says '
                "little about how well the surrogate ranks models.</div>\n" if n < MIN_SURROGATE_MODELS else "")
        return (f"<h2>Surrogate judge (MIRAGE)</h2>\n{warn}<p>Kendall τ between the surrogate's predicted and the "
                f"judge's ranking: {number_cell(tau if isinstance(tau, float) else None)} over {n} models.</p>\n")

    def view_markdown(self, view: Mapping[str, Any], page: ReportPage) -> str:
        sur = view.get("surrogate")
        n = len((sur or {}).get("target") or {})
        if not sur or n >= MIN_SURROGATE_MODELS:
            return ""
        return f"\n> **Warning:** the surrogate's Kendall τ rests on {n} models (fewer than {MIN_SURROGATE_MODELS}).\n"
