"""``babelrag plan``: what a build will cost before any LLM call — calls, tokens, cost and wall time per stage.

The plan walks the LLM stages in pipeline order and counts the calls each would make from the upstream
records: the pairs (the cheap stages ingest, index and pairs are run first when they are not built), and
every later stage's real output where the build already has it (an existing build: relevance verdicts,
questions, filter verdicts, distractor sets). A stage whose output is missing is simulated from the caps in
the config (``relevance.max_pairs``, ``questions.max_pairs`` / ``per_pair`` / ``types`` /
``target_languages``, the filters that are on, ``distractors.verify_with_llm``, ``instances.settings``) and the
``Assumptions`` (shares of pairs judged related, questions passing each filter, attempts that give an answer).

Prompt sizes are measured by rendering each stage's real prompt template on the real upstream records (the
article texts, titles, languages, questions); a variable that an earlier LLM step writes (a summary, a fact
list, a single-article answer) is filled with text of that step's typical completion length. Tokens follow
the rule the LLM layer's TPM limiter uses: characters / 4 + 8 per message (``babelrag.llm.client``).
Completion tokens: a typical figure per prompt (``TYPICAL_COMPLETION``) and the ceiling ``max_tokens``.
Retries and JSON repairs are not counted (they are rare on a healthy endpoint; the run report shows them).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

from babelrag.config import Config
from babelrag.construct import distractors as distractors_stage
from babelrag.construct import filters as filters_stage
from babelrag.construct import instances as instances_stage
from babelrag.construct import ner as ner_stage
from babelrag.construct import relevance as relevance_stage
from babelrag.construct.chains import crossdoc
from babelrag.construct.pair_selection import select_pairs
from babelrag.construct.question_ner import ENGLISH, question_language
from babelrag.construct.questions import plan_jobs
from babelrag.construct.translate import needed_document_translations
from babelrag.errors import ConfigError, InputError
from babelrag.languages import language_name
from babelrag.llm.prompts import Prompt
from babelrag.llm.settings import EndpointConfig
from babelrag.pipeline import Pipeline, run_pipeline
from babelrag.records import Article, ArticlePair, DistractorSet, QAItem, translation_targets, x_language
from babelrag.store import BuildStore

#: Typical completion tokens per prompt id (JSON replies of the shipped prompts; a translated article is
#: measured from its source text instead). Stated in every plan; the ceiling is the prompt's max_tokens.
TYPICAL_COMPLETION: dict[str, int] = {
    "construct.title_ner": 30, "construct.pair_relevance": 40, "construct.pair_relevance_event": 40,
    "questions.summary": 120, "questions.simple_qa": 150, "questions.crossdoc": 80, "questions.answer": 60,
    "questions.translate_qa": 120, "filters.well_formed": 30, "filters.answer_single": 50,
    "filters.answer_closed": 40, "filters.judge_answer": 40, "instances.translate_article": 0,
}
DEFAULT_TYPICAL = 100
SAMPLE = 200  # prompts rendered per step at most (their mean size stands for the step)
LLM_STAGES = ("ingest", "relevance", "questions", "filters", "distractors", "instances")
CHEAP_STAGES = ("ingest", "index", "pairs")


@dataclass
class Assumptions:
    """What the plan cannot know before the LLM answers; every figure is printed with the plan. The defaults
    (1.0) make the call count a ceiling: every pair related, every question kept, every attempt answered."""

    relevant_share: float = 1.0  # of the relevance-checked pairs, judged related
    pass_share: float = 1.0  # of the questions reaching a filter, kept by it
    answer_share: float = 1.0  # of single-article / closed-book / distractor attempts, an answer that is judged
    latency_s: float = 2.0  # seconds per call at the endpoint (wall time at its concurrency)

    @classmethod
    def parse(cls, pairs: list[str]) -> "Assumptions":
        """``KEY=VALUE`` strings (``--assume relevant_share=0.5``)."""
        out = cls()
        for raw in pairs:
            key, sep, value = raw.partition("=")
            if not sep or key not in cls.__dataclass_fields__:
                raise ConfigError(f"--assume {raw!r}: expected KEY=VALUE with KEY one of "
                                  f"{', '.join(cls.__dataclass_fields__)}")
            try:
                number = float(value)
            except ValueError:
                raise ConfigError(f"--assume {raw!r}: {value!r} is not a number") from None
            if number < 0 or (key != "latency_s" and number > 1):
                raise ConfigError(f"--assume {raw!r}: {key} must be " + ("a share in [0, 1]" if key != "latency_s"
                                                                        else ">= 0"))
            setattr(out, key, number)
        return out


@dataclass
class StepPlan:
    """One prompt of one stage."""

    prompt: str  # id@version
    calls: int
    prompt_tokens: int
    completion_tokens: int  # typical
    completion_tokens_max: int  # at max_tokens
    cost_usd: float = 0.0
    cost_usd_max: float = 0.0
    basis: str = ""  # where the count comes from
    # sequential waves the stage sends this prompt in (a chain's steps wait for each other, batch by batch):
    # each takes at least one call's latency, however high the concurrency
    rounds: int = 1


@dataclass
class StagePlan:
    stage: str
    state: str  # from `construct status`: current | stale | not built ...
    endpoint: str = ""
    model: str = ""
    steps: list[StepPlan] = field(default_factory=list)
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)
    recorded: dict[str, Any] = field(default_factory=dict)  # a built stage's usage from its manifest

    def total(self, key: str) -> float:
        return sum(getattr(s, key) for s in self.steps)


@dataclass
class Plan:
    stages: list[StagePlan]
    assumptions: Assumptions
    token_rule: str = "prompt tokens = characters / 4 + 8 per message (the LLM layer's TPM estimate)"
    typical_completion: dict[str, int] = field(default_factory=lambda: dict(TYPICAL_COMPLETION))
    notes: list[str] = field(default_factory=list)

    def totals(self, only_to_run: bool = False) -> dict[str, Any]:
        chosen = [s for s in self.stages if not (only_to_run and s.state == "current")]
        keys = ("calls", "prompt_tokens", "completion_tokens", "completion_tokens_max")
        out: dict[str, Any] = {k: int(sum(s.total(k) for s in chosen)) for k in keys}
        out["cost_usd"] = round(sum(s.total("cost_usd") for s in chosen), 6)
        out["cost_usd_max"] = round(sum(s.total("cost_usd_max") for s in chosen), 6)
        out["wall_s"] = round(sum(s.wall_s for s in chosen), 1)
        return out

    def to_dict(self) -> dict[str, Any]:
        stages = []
        for s in self.stages:
            d = asdict(s)
            d.update({k: int(s.total(k)) for k in ("calls", "prompt_tokens", "completion_tokens",
                                                    "completion_tokens_max")})
            d["cost_usd"], d["cost_usd_max"] = round(s.total("cost_usd"), 6), round(s.total("cost_usd_max"), 6)
            d["wall_s"] = round(s.wall_s, 1)
            stages.append(d)
        return {"stages": stages, "total": self.totals(), "to_run": self.totals(only_to_run=True),
                "assumptions": asdict(self.assumptions), "token_rule": self.token_rule,
                "typical_completion_tokens": self.typical_completion,
                "not_counted": "retries, JSON repairs, answers already in the LLM response cache",
                "notes": self.notes}

    def render(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(title="babelrag plan (before any LLM call)")
        numeric = ("calls", "prompt tok", "compl. tok (max)", "cost $ (max)", "wall")
        for col in ("stage / prompt", "state", *numeric):
            table.add_column(col, justify="right" if col in numeric else "left", no_wrap=True)

        def cells(calls: float, prompt: float, completion: float, completion_max: float, cost: float,
                  cost_max: float) -> list[str]:
            return [f"{int(calls):,}", f"{int(prompt):,}", f"{int(completion):,} ({int(completion_max):,})",
                    f"{cost:.4f} ({cost_max:.4f})"]

        keys = ("calls", "prompt_tokens", "completion_tokens", "completion_tokens_max", "cost_usd", "cost_usd_max")
        bases = []
        for s in self.stages:
            table.add_row(f"[bold]{s.stage}[/]", s.state, *cells(*(s.total(k) for k in keys)),
                          _duration(s.wall_s))
            for st in s.steps:
                table.add_row(f"  {st.prompt.split('@')[0]}", "", *cells(*(getattr(st, k) for k in keys)), "")
                bases.append(f"  {s.stage} [{s.endpoint}] {st.prompt}: {st.basis}")
            bases += [f"  {s.stage}: {note}" for note in s.notes]
        for label, tot in (("total", self.totals()), ("to run", self.totals(only_to_run=True))):
            table.add_row(f"[bold]{label}[/]", "", *cells(*(tot[k] for k in keys)), _duration(tot["wall_s"]))
        a = self.assumptions
        lines = [f"assumptions: relevant_share={a.relevant_share:g}, pass_share={a.pass_share:g}, "
                 f"answer_share={a.answer_share:g}, latency_s={a.latency_s:g} (change with --assume KEY=VALUE)",
                 f"tokens: {self.token_rule}; completion: typical per prompt, in brackets at max_tokens",
                 "not counted: retries, JSON repairs, answers already in the LLM response cache",
                 *self.notes, "counts:", *bases]
        return Group(table, Text("\n".join(lines)))


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---------------------------------------------------------------- measuring prompts


def filler(tokens: int) -> str:
    """Stand-in text of about ``tokens`` tokens (4 characters each) for a variable an earlier LLM step writes."""
    return ("lorem " * max(1, math.ceil(tokens * 4 / 6)))[: max(4, tokens * 4)].strip()


def message_tokens(messages: list[dict[str, str]]) -> int:
    """The LLM layer's rule (``babelrag.llm.client._estimate_tokens`` without the completion part)."""
    return sum(len(m.get("content") or "") for m in messages) // 4 + 8 * len(messages)


def typical(prompt: Prompt) -> int:
    return TYPICAL_COMPLETION.get(prompt.id, DEFAULT_TYPICAL)


class Pricer:
    """Per stage endpoint: prices, max_tokens ceiling, concurrency and limits (the LLM layer's resolution)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def endpoint(self, name: Optional[str]) -> tuple[str, Optional[EndpointConfig]]:
        llm = self.config.llm
        if not llm.endpoints:  # the embedded model: free, local concurrency
            return "local (embedded)", None
        return llm.endpoint(name)

    def step(self, name: Optional[str], prompt: Prompt, variables: list[dict[str, Any]], calls: float,
             basis: str, completion: Optional[Callable[[dict[str, Any]], int]] = None, rounds: int = 1) -> StepPlan:
        """Mean rendered size over (a sample of) ``variables`` times ``calls``."""
        sample = variables[:SAMPLE]
        n = max(0, round(calls))
        if not sample or n == 0:
            return StepPlan(prompt.ref, 0, 0, 0, 0, basis=basis)
        _, ep = self.endpoint(name)  # only for a step that calls: an unresolvable name is then a ConfigError
        max_tokens = prompt.sampling.get("max_tokens") or (ep.max_tokens if ep else None) or 512
        mean_prompt = sum(message_tokens(prompt.render(**v)) for v in sample) / len(sample)
        mean_completion = (sum(min(max_tokens, completion(v)) for v in sample) / len(sample) if completion
                           else min(max_tokens, typical(prompt)))
        step = StepPlan(prompt.ref, n, round(mean_prompt * n), round(mean_completion * n), max_tokens * n,
                        basis=basis, rounds=max(1, rounds))
        if ep is not None:
            p_in, p_out = ep.price_per_1k_input, ep.price_per_1k_output
            step.cost_usd = round(step.prompt_tokens / 1000 * p_in + step.completion_tokens / 1000 * p_out, 6)
            step.cost_usd_max = round(step.prompt_tokens / 1000 * p_in + step.completion_tokens_max / 1000 * p_out, 6)
        return step

    def wall_s(self, name: Optional[str], steps: list[StepPlan], latency_s: float) -> float:
        """Seconds at the endpoint's concurrency (each prompt's waves one after the other), RPM and TPM,
        whichever binds."""
        calls = sum(s.calls for s in steps)
        if calls == 0:
            return 0.0
        _, ep = self.endpoint(name)
        concurrency = ep.max_concurrency if ep else self.config.llm.local_max_concurrency
        times = [sum(s.rounds * math.ceil(s.calls / (s.rounds * concurrency)) for s in steps if s.calls) * latency_s]
        if ep is not None and ep.rpm:
            times.append(calls / ep.rpm * 60)
        if ep is not None and ep.tpm:
            times.append(sum(s.prompt_tokens + s.completion_tokens for s in steps) / ep.tpm * 60)
        return max(times)


# ---------------------------------------------------------------- the stages


class Planner:
    """Walks the LLM stages; each ``_stage`` method returns its StagePlan and what the next stage reads."""

    def __init__(self, config: Config, assumptions: Assumptions) -> None:
        self.config = config
        self.a = assumptions
        self.store = BuildStore(config.build_dir)
        self.pricer = Pricer(config)
        self.states = Pipeline(config).states()
        self.pivot = config.project.pivot_language
        self.languages = list(config.project.languages)
        self.notes: list[str] = []
        self._articles: dict[str, Article] = {}

    # helpers ---------------------------------------------------------------------------------------
    def built(self, stage: str) -> bool:
        """A stage whose output the plan reads instead of simulating: built and current."""
        return self.states.get(stage) == "current"

    def articles(self, ids: set[str]) -> dict[str, Article]:
        missing = ids - set(self._articles)
        if missing:
            self._articles.update(self.store.read_ids("ingest", Article, missing))
        return {i: self._articles[i] for i in ids if i in self._articles}

    def stage_plan(self, stage: str, endpoint: Optional[str], steps: list[StepPlan],
                   notes: Optional[list[str]] = None) -> StagePlan:
        resolved, ep = self.pricer.endpoint(endpoint) if any(s.calls for s in steps) else ("", None)
        plan = StagePlan(stage, self.states.get(stage, "not built"), resolved, ep.model if ep else "",
                         [s for s in steps if s.calls] or steps[:0], notes=notes or [])
        plan.wall_s = self.pricer.wall_s(endpoint, plan.steps, self.a.latency_s)
        manifest = self.store.manifest(stage)
        if manifest is not None and manifest.llm_usage.get("calls"):
            plan.recorded = {k: manifest.llm_usage.get(k, 0) for k in
                             ("calls", "prompt_tokens", "completion_tokens", "cost")}
        return plan

    # ingest: NER on titles through the LLM ---------------------------------------------------------
    def ingest(self) -> StagePlan:
        ner = self.config.ner
        if ner.backend != "llm":
            return self.stage_plan("ingest", None, [])
        prompt = Prompt.beside(ner_stage.__file__, "ner_prompt.yaml")
        arts = list(self.store.iter_read("ingest", Article))
        items = [{"title": a.title, "language": language_name(a.language)} for a in arts[:SAMPLE]]
        return self.stage_plan("ingest", ner.endpoint, [self.pricer.step(
            ner.endpoint, prompt, items, len(arts), f"one per article title ({len(arts)} kept articles)")],
            ["at least: titles of articles dropped later in ingest are asked too"])

    # relevance ---------------------------------------------------------------------------------------
    def relevance(self) -> tuple[StagePlan, list[ArticlePair]]:
        cfg = self.config.relevance
        pairs = self.store.read("pairs", ArticlePair)
        arts = self.articles({x for p in pairs for x in (p.article_a, p.article_b)})
        if cfg.max_pairs is not None:
            pairs = [p for p, _, _ in select_pairs(pairs, arts, self.pivot, self.languages, cfg.max_pairs)]
        if self.built("relevance"):
            checked = self.store.read("relevance", ArticlePair)
        else:  # the verdicts to come: the first relevant_share of the checked pairs stand for the related ones
            checked = [p.model_copy(update={"relevant": None}) for p in pairs]
        if not cfg.enabled:
            return self.stage_plan("relevance", None, [], ["relevance.enabled is false: pairs pass unchecked"]), checked
        prompt = Prompt.beside(relevance_stage.__file__, relevance_stage.PROMPT_FILES[cfg.criterion])
        items = [relevance_stage.prompt_items(p, arts, cfg.excerpt_chars) for p in pairs]
        step = self.pricer.step(cfg.endpoint, prompt, items, len(pairs),
                                f"{len(pairs)} candidate pairs" + (f" (relevance.max_pairs {cfg.max_pairs})"
                                                                    if cfg.max_pairs else ""),
                                rounds=math.ceil(len(pairs) / relevance_stage.BATCH))
        return self.stage_plan("relevance", cfg.endpoint, [step]), checked

    # questions ---------------------------------------------------------------------------------------
    def questions(self, checked: list[ArticlePair]) -> tuple[StagePlan, list[QAItem]]:
        q = self.config.questions
        arts = self.articles({x for p in checked for x in (p.article_a, p.article_b)})
        if all(p.relevant is None for p in checked) and self.config.relevance.enabled:
            related = checked[: math.floor(len(checked) * self.a.relevant_share + 1e-9)]
            basis = f"relevant_share {self.a.relevant_share:g} of {len(checked)} checked pairs"
        else:
            related = [p for p in checked if p.relevant is not False]
            basis = f"{len(related)} related pairs"
        jobs = plan_jobs(related, arts, list(q.types), q.per_pair, self.pivot, self.languages, q.max_pairs,
                         monolingual=list(q.monolingual))
        # one summary per article and language written in (English, or a monolingual question's X), as the chain
        written = {(a.id, crossdoc.written_in(j)): a for j in jobs for a in (j.a, j.b)}
        articles = {a.id: a for a in written.values()}
        prompts = crossdoc.load_prompts()
        t = {k: typical(p) for k, p in prompts.items()}
        summaries = [{"language": language_name(a.language), "published": a.date_label, "title": a.title,
                      "text": a.text[: q.max_article_chars], "write_in": language_name(w)}
                     for (_, w), a in written.items()]
        simple = [{"summary": filler(t["summary"]), "n": q.simple_per_summary,
                   "write_in": language_name(w)} for (_, w) in written][:1]
        cross = [{"pairs_a": filler(t["simple_qa"]), "pairs_b": filler(t["simple_qa"]), "q_type": j.q_type,
                  "title_a": j.a.title, "title_b": j.b.title, "write_in": language_name(crossdoc.written_in(j))}
                 for j in jobs]
        answer = [{"summary_a": filler(t["summary"]), "summary_b": filler(t["summary"]),
                   "facts": filler(t["simple_qa"] // 2), "question": filler(t["crossdoc"] // 2),
                   "write_in": language_name(crossdoc.written_in(j))} for j in jobs][:1]
        where = f"{len(jobs)} questions ({basis}; questions.per_pair {q.per_pair}" + (
            f", questions.max_pairs {q.max_pairs})" if q.max_pairs else ")")
        batches = math.ceil(len(jobs) / q.batch_size)  # each batch runs the chain's steps one after the other
        steps = [self.pricer.step(q.endpoint, prompts["summary"], summaries, len(written),
                                  f"{len(written)} (article, language written in) of the chosen pairs",
                                  rounds=batches),
                 self.pricer.step(q.endpoint, prompts["simple_qa"], simple, len(written), "one per summary",
                                  rounds=batches),
                 self.pricer.step(q.endpoint, prompts["crossdoc"], cross, len(jobs), where, rounds=batches),
                 self.pricer.step(q.endpoint, prompts["answer"], answer, len(jobs), "one per question",
                                  rounds=batches)]
        items = [QAItem(id=j.id, pair_id=j.pair_id, article_ids=[j.a.id, j.b.id], q_type=j.q_type,
                        question=filler(t["crossdoc"] // 2), answer=filler(t["answer"]),
                        x_language=x_language([j.a.language, j.b.language], self.pivot), language=j.language)
                 for j in jobs]
        if q.translate:  # a monolingual question is written in X and never translated
            tr_items = [(it, lang) for it in items if not it.language
                        for lang in translation_targets(it.x_language or "", self.pivot, list(q.target_languages))]
            tr_prompt = Prompt.beside(crossdoc.__file__, "prompts/translate_qa.yaml")
            steps.append(self.pricer.step(q.endpoint, tr_prompt, [
                {"language_name": language_name(lang), "question": it.question, "answer": it.answer,
                 "entities": filler(10)} for it, lang in tr_items], len(tr_items),
                f"{len(tr_items)} (question, target language): en–en into every target, X–en into X",
                rounds=batches))
        if self.built("questions"):
            items = self.store.read("questions", QAItem)
        return self.stage_plan("questions", q.endpoint, steps), items

    # filters -----------------------------------------------------------------------------------------
    def filters(self, items: list[QAItem]) -> tuple[StagePlan, list[QAItem]]:
        f = self.config.filters
        arts = self.articles({a for it in items for a in it.article_ids})
        judge = Prompt.beside(filters_stage.__file__, "chains/prompts/judge_answer.yaml")
        steps: list[StepPlan] = []
        alive = float(len(items))
        order = sorted((x for x in (filters_stage.FILTER_REGISTRY.get(n) for n in
                                    (*filters_stage.BUILTIN_FILTERS, *f.extra)) if x.enabled(f)),
                       key=lambda x: x.order)
        sample = items[:SAMPLE]
        for flt in order:
            if flt.name == "well_formed_llm":
                prompt = Prompt.beside(filters_stage.__file__, "chains/prompts/well_formed.yaml")
                steps.append(self.pricer.step(f.endpoint, prompt, [{"question": i.question} for i in sample], alive,
                                              f"{alive:.0f} questions reaching it"))
            elif flt.name == "named_entity" and self.config.ner.backend == "llm":
                written = [i for i in items if question_language(i.language) != ENGLISH]
                if written:  # questions written in X are checked by the LLM title NER (construct/question_ner.py)
                    prompt = Prompt.beside(ner_stage.__file__, "ner_prompt.yaml")
                    steps.append(self.pricer.step(self.config.ner.endpoint, prompt, [
                        {"title": i.question, "language": language_name(question_language(i.language))}
                        for i in written[:SAMPLE]], alive * len(written) / len(items),
                        f"the {len(written)} questions not written in English, by the LLM title NER"))
            elif flt.name == "needs_both_articles":
                prompt = Prompt.beside(filters_stage.__file__, "chains/prompts/answer_single.yaml")
                attempts = [{"published": a.date_label, "title": a.title, "text": a.text[: f.max_article_chars],
                             "question": it.question} for it in sample for aid in it.article_ids
                            if (a := arts.get(aid)) is not None]
                steps.append(self.pricer.step(f.endpoint, prompt, attempts, 2 * alive,
                                              f"each of {alive:.0f} questions from each article alone"))
                steps.append(self._judge(judge, sample, 2 * alive * self.a.answer_share, "single-article answers"))
            elif flt.name == "needs_retrieval":
                prompt = Prompt.beside(filters_stage.__file__, "chains/prompts/answer_closed.yaml")
                steps.append(self.pricer.step(f.endpoint, prompt, [{"question": i.question} for i in sample], alive,
                                              f"{alive:.0f} questions closed-book"))
                steps.append(self._judge(judge, sample, alive * self.a.answer_share, "closed-book answers"))
            alive *= self.a.pass_share
        steps = _merge(steps)
        if self.built("filters"):
            kept = [it for it in self.store.read("filters", QAItem) if it.accepted]
        else:
            kept = items[: math.floor(alive + 1e-9)]
        notes = [f"pass_share {self.a.pass_share:g} per filter ({', '.join(x.name for x in order)})"] if order else []
        return self.stage_plan("filters", f.endpoint, steps, notes), kept

    def _judge(self, prompt: Prompt, sample: list[QAItem], calls: float, what: str) -> StepPlan:
        return self.pricer.step(self.config.filters.endpoint, prompt, [
            {"question": i.question, "gold": i.answer, "candidate": filler(typical(prompt))} for i in sample],
            calls, f"answer_share {self.a.answer_share:g} of the {what}, each judged")

    # distractors -------------------------------------------------------------------------------------
    def distractors(self, kept: list[QAItem]) -> StagePlan:
        d = self.config.distractors
        if not d.verify_with_llm:
            return self.stage_plan("distractors", None, [])
        arts = self.articles({a for q in kept for a in q.article_ids})
        kinds = [k for k, w in d.mixture.items() if w > 0 and k != "irrelevant"]
        per_lang = min(len(kinds) * 2 * d.per_language, len(kinds) * max(3 * d.per_language, 10))
        langs = sum(len(distractors_stage.needed_languages(q, arts, self.pivot)) for q in kept)
        answer = Prompt.beside(distractors_stage.__file__, "chains/prompts/answer_single.yaml")
        judge = Prompt.beside(distractors_stage.__file__, "chains/prompts/judge_answer.yaml")
        stand_ins = [arts[a] for q in kept[:SAMPLE] for a in q.article_ids if a in arts]  # article-sized texts
        attempts = [{"published": a.date_label, "title": a.title, "text": a.text[: d.max_article_chars],
                     "question": q.question} for q in kept[:SAMPLE] for a in stand_ins[:2]]
        calls = langs * per_lang
        steps = [self.pricer.step(d.endpoint, answer, attempts, calls,
                                  f"at most {per_lang} candidates x {langs} (question, language)", rounds=langs),
                 self.pricer.step(d.endpoint, judge, [{"question": q.question, "gold": q.answer,
                                                       "candidate": filler(typical(judge))} for q in kept[:SAMPLE]],
                                  calls * self.a.answer_share, f"answer_share {self.a.answer_share:g}, each judged",
                                  rounds=langs)]
        return self.stage_plan("distractors", d.endpoint, steps,
                               ["ceiling: supporting articles stand in for the candidates' texts"])

    # instances ---------------------------------------------------------------------------------------
    def instances(self, kept: list[QAItem]) -> StagePlan:
        cfg = self.config.instances
        settings = [instances_stage.parse_setting(s) for s in cfg.settings]
        notes = ["instances.reviewed_qa: corrected questions are re-translated (not counted)"] \
            if cfg.reviewed_qa else []
        if not (cfg.translate_documents and instances_stage._needs_doc_translation(settings)):
            return self.stage_plan("instances", None, [], notes)
        arts = self.articles({a for q in kept for a in q.article_ids})
        if self.built("distractors") and self.built("filters"):
            dsets = {s.qa_id: s for s in self.store.read("distractors", DistractorSet)}
            arts = self.articles({a for q in kept for a in q.article_ids}
                                 | {x.article_id for s in dsets.values() for x in s.distractors})
            todo = [arts[i] for i in needed_document_translations(kept, dsets, arts, self.pivot,
                                                                  cfg.multi_distracting_per_language)]
            n, basis = len(todo), f"{len(todo)} X-language articles of multi+ES/+ED instances (from the build)"
        else:  # each X–en question: its X article, and at most multi_distracting_per_language X distractors
            multi = [q for q in kept if q.x_language]
            todo = [arts[a] for q in multi for a in q.article_ids if a in arts and arts[a].language != self.pivot]
            n = len({a.id for a in todo}) + len(multi) * cfg.multi_distracting_per_language
            basis = (f"at most {n}: the X articles of {len(multi)} X–en questions + "
                     f"{cfg.multi_distracting_per_language} X distractors each")
        prompt = Prompt.beside(instances_stage.__file__, "chains/prompts/translate_article.yaml")
        items = [{"language_name": language_name(self.pivot), "title": a.title,
                  "text": a.text[: cfg.translate_max_chars]} for a in todo]

        def translated(v: dict[str, Any]) -> int:  # about the source's length, JSON around it
            return (len(v["title"]) + len(v["text"])) // 4 + 20

        step = self.pricer.step(cfg.endpoint, prompt, items, n, basis, completion=translated)
        return self.stage_plan("instances", cfg.endpoint, [step], notes)


def _merge(steps: list[StepPlan]) -> list[StepPlan]:
    """One row per prompt (the judge serves two filters)."""
    out: dict[str, StepPlan] = {}
    for s in steps:
        if s.prompt not in out:
            out[s.prompt] = s
            continue
        m = out[s.prompt]
        for k in ("calls", "prompt_tokens", "completion_tokens", "completion_tokens_max", "cost_usd", "cost_usd_max",
                  "rounds"):
            setattr(m, k, getattr(m, k) + getattr(s, k))
        m.basis = f"{m.basis}; {s.basis}"
    return list(out.values())


def ensure_cheap_stages(config: Config, console: Any = None) -> None:
    """Build ingest, index and pairs when they are not current: they count what the LLM stages will read.
    They must not call an endpoint themselves (the plan promises no paid call)."""
    states = Pipeline(config).states()
    if all(states.get(s) == "current" for s in CHEAP_STAGES):
        return
    paid = []
    if config.ner.backend == "llm":
        paid.append("ner.backend is llm (ingest asks the LLM for title entities)")
    if config.dense.encoder.kind == "openai":  # the index embeds through it whether or not dense pairs are on
        paid.append("dense.encoder.kind is openai (index and pairs embed through an endpoint)")
    if paid:
        raise InputError(f"the plan needs ingest, index and pairs built, and building them here would call an "
                         f"endpoint: {'; '.join(paid)}. Build them first with `babelrag run -c CONFIG --until "
                         f"pairs`, then plan again")
    run_pipeline(config, until="pairs", console=console)


def make_plan(config: Config, assumptions: Optional[Assumptions] = None, console: Any = None) -> Plan:
    """The plan of a whole build (builds the cheap stages first when needed)."""
    assumptions = assumptions or Assumptions()
    ensure_cheap_stages(config, console)
    p = Planner(config, assumptions)
    stages = [p.ingest()]
    rel, checked = p.relevance()
    qs, items = p.questions(checked)
    flt, kept = p.filters(items)
    stages += [rel, qs, flt, p.distractors(kept), p.instances(kept)]
    notes = ["stages marked current are skipped by a run: their recorded usage is in --json (recorded)"] \
        if any(s.state == "current" and s.steps for s in stages) else []
    return Plan(stages=stages, assumptions=assumptions, notes=notes)
