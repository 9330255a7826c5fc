"""The monolingual X–X setting (issue 38 item 2; MIRAGE-Bench evaluates each language monolingually), end to end.

`babelrag run` on the sample corpus (news-please JSONL, en + de, with de–de articles of the same events) with
``questions.monolingual: [de]``, every LLM call answered over real HTTP by the demo's scripted brain
(tests/test_demo_e2e.py) taught to write German when a chain prompt asks for German; then `release build`,
`release validate`, `datasets.load_dataset` of the ``monolingual-de`` config and `evaluate run` of two scripted
models. The brain fails the test on any prompt it does not know (a German chain step it was not asked for, a
JSON-repair re-ask).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
import yaml

from babelrag.config import config_from_dict, load_config
from babelrag.construct.plan import make_plan
from babelrag.errors import ConfigError
from babelrag.testing.scripted_server import ScriptedServer
from tests.test_demo_e2e import ANSWERS, TEMPLATES, DemoBrain
from tests.test_plan import within

pytestmark = pytest.mark.slow  # the whole pipeline, release and evaluation (about 80 s on 2 cores)

MAX_PAIRS = 6
SUMMARY_DE = "{org} ist in {place} in den Nachrichten, wo {person} zitiert wird. Dieser Bericht nennt die Zahl {fig}."


class GermanBrain(DemoBrain):
    """The demo's brain; a chain step asked to write in German (``{write_in}`` of the chain prompts) gets German."""

    def __init__(self) -> None:
        super().__init__()
        self.summary_de = re.compile(re.escape(SUMMARY_DE).replace(r"\{org\}", "(?P<org>.+?)")
                                     .replace(r"\{place\}", "(?P<place>.+?)").replace(r"\{person\}", "(?P<person>.+?)")
                                     .replace(r"\{fig\}", "(?P<fig>.+?)") + "$")
        self.german_steps: list[str] = []

    def routes(self):
        german = (
            ("summary_de", lambda s, u: "Write in German whatever" in s, self.summary_in_german),
            ("simple_qa_de", lambda s, u: "Write questions and answers in German." in s, self.simple_qa_in_german),
            ("crossdoc_de", lambda s, u: "one natural German sentence" in s, self.crossdoc_in_german),
            ("answer_de", lambda s, u: "Write the answer in German." in s, self.answer_in_german),
        )
        return german + super().routes()

    def summary_in_german(self, system, user, body):
        text = user.split("):\n", 1)[1].rsplit("\n\nReply as JSON", 1)[0]
        fig = re.search(r"[€$£]?\d[\d,.]*\d", text.split("\n", 1)[1] if "\n" in text else text)
        self.german_steps.append("summary")
        return {"summary": SUMMARY_DE.format(**self.names(self.event_of(text), "de"), fig=fig.group(0) if fig else "0")}

    def simple_qa_in_german(self, system, user, body):
        summary = user.split("Summary:\n", 1)[1].split("\n\nWrite", 1)[0].strip()
        m = self.summary_de.match(summary).groupdict()
        return {"pairs": [{"question": f"Welche Zahl nennt der Bericht über {m['org']}?", "answer": m["fig"]},
                          {"question": f"Wer wird zu {m['org']} in {m['place']} zitiert?", "answer": m["person"]},
                          {"question": f"Wo ist {m['org']} in den Nachrichten?", "answer": m["place"]}]}

    def crossdoc_in_german(self, system, user, body):
        q_type, names = self.crossdoc_slots(user, r"der Bericht über (.*)\?", "Wer wird", "Wo ist")
        self.german_steps.append("crossdoc")
        return {"question": TEMPLATES[q_type][1]["de"].format(**names), "used_a": [1], "used_b": [1]}

    def answer_in_german(self, system, user, body):
        facts = re.search(r"^Facts used: (.*)$", user, re.M).group(1)
        question = re.search(r"^Question: (.*)$", user, re.M).group(1)
        figs = re.findall(r"\? (.*?)(?= \| |$)", facts)
        answer = ANSWERS["de"].format(a=figs[0], b=figs[-1])
        with self.lock:
            self.figures[question] = (figs[0], figs[-1])
            self.gold[question] = answer
        return {"answer": answer}


def build_config(tmp: Path, base_url: str) -> Path:
    from babelrag.demo import corpus_settings
    from babelrag.run_profiles import SMALL_CAPS, pair_budget
    from babelrag.config import deep_merge

    raw = {
        "project": {"name": "mono-bench", "build_dir": str(tmp / "build"), "seed": 13, "languages": ["en", "de"],
                    "pivot_language": "en"},
        "llm": {"endpoints": {"generator": {"base_url": base_url, "model": "scripted"}},
                "default_endpoint": "generator", "progress": False, "cache_dir": str(tmp / "llm-cache")},
        "questions": {"monolingual": ["de"], "target_languages": ["de"]},
        "instances": {"settings": ["monolingual", "multi", "no-retrieval", "oracle"]},
        "release": {"out_dir": str(tmp / "release"), "name": "mono-bench", "allow_unverified": True, "dev_fraction": 0.0},
    }
    raw = deep_merge(deep_merge(deep_merge(raw, SMALL_CAPS), pair_budget(MAX_PAIRS)), corpus_settings("sample"))
    raw.pop("evaluate", None)
    path = tmp / "babelrag.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True))
    return path


@pytest.fixture(scope="module")
def monolingual_build(tmp_path_factory):
    from typer.testing import CliRunner

    from babelrag.cli import app

    tmp = tmp_path_factory.mktemp("monolingual")
    brain = GermanBrain()
    with ScriptedServer(brain) as srv:
        cfg = build_config(tmp, srv.base_url)
        planned = load_config(cfg)  # planned in a build of its own: the run below builds (and reports) pairs itself
        planned.project.build_dir = str(tmp / "planned")
        plan = make_plan(planned)  # builds ingest, index and pairs; no LLM call
        assert srv.count("chat") == 0
        run = CliRunner().invoke(app, ["run", "-c", str(cfg)])
        assert not brain.unknown, "the scripted brain met prompts it does not know:\n" + "\n".join(brain.unknown)
        assert run.exit_code == 0, f"{run.output}\n{run.exception!r}"
        rel = CliRunner().invoke(app, ["release", "build", "-c", str(cfg)])
        assert rel.exit_code == 0, f"{rel.output}\n{rel.exception!r}"
    return tmp, brain, run, plan


def test_plan_of_the_monolingual_build_estimates_its_calls(monolingual_build):
    """`babelrag plan` made before the run: calls per stage within docs/plan.md's 25 % of run_report.json's (the
    German chain steps, the untranslated de–de questions, their German-only distractors and instances)."""
    tmp, brain, _, plan = monolingual_build
    report = json.loads((tmp / "build" / "run_report.json").read_text())
    made = {s["stage"]: s["llm_usage"].get("calls", 0) for s in report["stages"]}
    planned = plan.to_dict()
    estimated = {s["stage"]: s["calls"] for s in planned["stages"]}
    assert made["questions"] and made["filters"]
    for stage, calls in estimated.items():
        assert within(calls, made.get(stage, 0)), (stage, estimated, made)
    assert within(planned["total"]["calls"], sum(made.values())), (planned["total"], made)
    # per prompt (a German chain step counted with its English one), the default assumptions make each a ceiling
    asked = Counter()
    for route, n in brain.calls.items():
        asked[route.removesuffix("_de")] += n
    before = calls_per_prompt(plan)
    assert all(n <= before[route] for route, n in asked.items()), (asked, before)
    # planned again from the finished build, the question chain is counted exactly as the run made it: from the
    # real relevance verdicts, German summaries beside English ones of an article, no monolingual translation
    after = calls_per_prompt(make_plan(load_config(tmp / "babelrag.yaml")))
    chain = ("summary", "simple_qa", "crossdoc", "answer", "translate_qa")
    assert {r: after[r] for r in chain} == {r: asked[r] for r in chain}, (asked, after)


def calls_per_prompt(plan) -> Counter:
    """Planned calls by the demo brain's route names (``questions.summary@3`` -> ``summary``)."""
    out = Counter()
    for step in (st for s in plan.stages for st in s.steps):
        out[step.prompt.split("@")[0].split(".")[-1].removeprefix("pair_")] += step.calls
    return out


def test_monolingual_pairs_questions_and_instances_are_german(monolingual_build):
    from babelrag.langcheck import LanguageChecker
    from babelrag.records import Article, ArticlePair, DistractorSet, Instance, QAItem
    from babelrag.store import BuildStore

    tmp, brain, run, _ = monolingual_build
    store = BuildStore(tmp / "build")
    langs = {a.id: a.language for a in store.read("ingest", Article)}
    pairs = store.read("pairs", ArticlePair)
    # de–de pairs are mined because the setting asks for them, and the run says so up front
    assert store.manifest("pairs").extra["same_language_mined_in"] == ["de", "en"]
    assert {(p.language_a, p.language_b) for p in pairs if p.language_a == p.language_b} == {("de", "de"), ("en", "en")}
    report = json.loads((tmp / "build" / "run_report.json").read_text())
    rows = {r["language"]: r["same_language_pairs"] for r in report["config"]["pairs"]["rows"]}
    assert rows["de"].startswith("mined (questions.monolingual") and rows["en"].startswith("mined (the pivot")
    assert "same-language pairs mined in de (questions.monolingual" in " ".join(run.output.split())
    # questions written in German by the chain over two German articles, none translated
    qas = store.read("questions", QAItem)
    mono = [q for q in qas if q.language == "de"]
    assert mono and all({langs[a] for a in q.article_ids} == {"de"} and not q.translations for q in mono)
    # the four types, assigned by the pair-id hash as for the other settings (raising a cap never changes them)
    from babelrag.construct.questions import pair_types

    assert all([q.q_type] == pair_types(q.pair_id, ["aggregation", "comparison", "multi-hop", "set"], 1) for q in qas)
    assert {"summary", "crossdoc"} <= set(brain.german_steps)
    check = LanguageChecker(["en", "de"])
    assert all(check.check(q.question, "de") is None and check.check(q.answer, "de") is None for q in mono)
    # the other questions are the XRAG ones, as before (English first)
    assert all(q.language is None and q.x_language in ("", "de") for q in qas if q not in mono)
    # German distractors only, and instances whose documents are the German articles, nothing translated
    accepted = {q.id for q in store.read("filters", QAItem) if q.accepted and q.language == "de"}
    assert accepted, "no monolingual question passed the filters"
    dsets = {d.qa_id: d for d in store.read("distractors", DistractorSet)}
    assert all({d.language for d in dsets[q].distractors} <= {"de"} for q in accepted)
    insts = [i for i in store.read("instances", Instance) if i.setting == "monolingual"]
    assert {i.qa_id for i in insts} == accepted
    for inst in insts:
        assert inst.language == "de" and not inst.machine_translated
        assert {d.language for d in inst.documents} == {"de"}
        assert sum(d.role == "supporting" for d in inst.documents) == 2
        assert any(d.role == "distractor" for d in inst.documents)
        assert inst.en_question == inst.question  # as written: there is no English version
    # no-retrieval / oracle rows of a monolingual question are German too, never English
    others = [i for i in store.read("instances", Instance) if i.qa_id in accepted and i.setting != "monolingual"]
    assert others and all(i.language == "de" for i in others)


def test_monolingual_release_loads_validates_and_is_scored(monolingual_build, tmp_path):
    import datasets
    from typer.testing import CliRunner

    from babelrag.cli import app
    from babelrag.evaluators.release_reader import load_instances
    from tests.test_eval_release_e2e import assert_good_beats_weak, eval_config, release_brain

    tmp, _, _, _ = monolingual_build
    release = tmp / "release" / "mono-bench-0.1.0"
    meta = json.loads((release / "release.json").read_text())
    assert "monolingual-de" in meta["configs"]
    card = (release / "README.md").read_text()
    assert "config_name: monolingual-de" in card and "`monolingual` question and answer written in X" in card
    # the card declares what the rows hold: the multi questions are German over en + de documents
    assert yaml.safe_load(card.split("---\n")[1])["language"] == ["de", "en"]
    dd = datasets.load_dataset(str(release), "monolingual-de", cache_dir=str(tmp_path / "hf-cache"))
    rows = [r for split in dd.values() for r in split]
    assert rows and all(r["setting"] == "monolingual" and r["language"] == "de" for r in rows)
    assert all({d["language"] for d in r["documents"]} == {"de"} for r in rows)
    checked = CliRunner().invoke(app, ["release", "validate", "--folder", str(release)])
    assert checked.exit_code == 0, checked.output

    out = tmp_path / "eval"
    with ScriptedServer(release_brain(load_instances(release))) as srv:
        res = CliRunner().invoke(app, ["evaluate", "run", str(release), "-c", str(eval_config(tmp_path, srv.base_url)),
                                       "--out", str(out), "--rounds", "20"])
    assert res.exit_code == 0, f"{res.output}\n{res.exception!r}"
    data = json.loads((out / "results.json").read_text())
    scored = load_instances(release, split=data["run"]["split"])
    assert any(i.setting == "monolingual" for i in scored)
    # the gold German answers are right and in the expected language; the weak model's English hedges are in the
    # right language only on English questions: language correctness expects German on monolingual-de
    assert_good_beats_weak(data, scored, "mono-bench")
    assert data["breakdown"]["good"]["monolingual/de"]["value"] == 1.0


def _config(**questions):
    base = {"project": {"languages": ["en", "de"], "pivot_language": "en"}, "questions": questions}
    return config_from_dict(base)


def test_without_the_setting_non_pivot_same_language_pairs_stay_unmined():
    rows = {r["language"]: r["same_language_pairs"] for r in _config().load_summaries["pairs"]["rows"]}
    assert rows["en"].startswith("mined (the pivot") and rows["de"].startswith("not mined")
    rows = {r["language"]: r["same_language_pairs"] for r in _config(monolingual=["de"]).load_summaries["pairs"]["rows"]}
    assert rows["de"] == "mined (questions.monolingual: de–de questions written in de)"


def test_monolingual_languages_must_be_built_and_released():
    with pytest.raises(ConfigError, match=r"questions.monolingual lists \['fr'\], not among project.languages"):
        _config(monolingual=["fr"])
    with pytest.raises(ConfigError, match="instances.settings does not list 'monolingual'"):
        config_from_dict({"project": {"languages": ["en", "de"]}, "questions": {"monolingual": ["de"]},
                          "instances": {"settings": ["mono", "multi"]}})


def test_a_build_with_no_english_sets_the_pivot():
    """German only: the pivot must be a configured language (as today), so it is German; its de–de pairs are
    monolingual questions written in German, not English-first pivot questions."""
    from babelrag.construct.questions import plan_jobs
    from babelrag.records import Article, ArticlePair

    with pytest.raises(ConfigError, match="pivot_language 'en' is not among project.languages"):
        config_from_dict({"project": {"languages": ["de"]}, "questions": {"monolingual": ["de"]}})
    cfg = config_from_dict({"project": {"languages": ["de"], "pivot_language": "de"},
                            "questions": {"monolingual": ["de"], "target_languages": []},
                            "instances": {"settings": ["monolingual", "no-retrieval", "oracle"]}})
    arts = {i: Article(id=i, url=f"https://x.example/{i}", title=f"Titel {i}", text="Text " * 50, language="de",
                       published="2026-08-01") for i in ("de-1", "de-2")}
    pair = ArticlePair(id="eg:de-1|de-2", article_a="de-1", article_b="de-2", language_a="de", language_b="de",
                       method="entity_graph", score=1.0, relevant=True)
    jobs = plan_jobs([pair], arts, list(cfg.questions.types), 1, cfg.project.pivot_language,
                     list(cfg.project.languages), None, monolingual=list(cfg.questions.monolingual))
    assert [j.language for j in jobs] == ["de"]


def test_a_monolingual_question_is_never_sent_to_human_translation():
    """Translators post-edit the English a question was written in; a monolingual question has none."""
    from babelrag.annotate import projects, samples
    from babelrag.annotate.settings import AnnotateSettings

    rows = [{**samples.qa_items(1, reviewed=True)[-1], "x_language": None, "language": "de"},
            {**samples.qa_items(2, reviewed=True)[-1], "x_language": "de"}]
    assert [r.id for r in projects.build_records("translation", rows, AnnotateSettings(), "de")] == ["qa2"]
    assert projects.registry.get("translation").skipped(rows, "de") == {projects.WRITTEN_IN_X: 1}


def test_the_card_declares_no_english_for_german_only_rows():
    """A monolingual row's en_question repeats its German question: the card's languages are the rows' own
    (the pivot is added only for rows that carry an English version), and validation checks it as German."""
    from babelrag.records import Document, Instance
    from babelrag.release.card import released_languages

    q, a = "Welche zwei Zahlen nennen die Berichte über Norrvik Energy in Halden zusammengenommen?", \
        "Ein Bericht nennt die Zahl 120, während der andere Bericht die Zahl 80 nennt."
    doc = Document(article_id="de-1", title="Titel", text="Text", language="de", published="2026-08-01",
                   role="supporting", kind="relevant")
    mono = Instance(id="i1", qa_id="qa1", setting="monolingual", language="de", question=q, answer=a,
                    en_question=q, en_answer=a, q_type="aggregation", documents=[doc])
    oracle = mono.model_copy(update={"id": "i2", "setting": "oracle"})
    assert mono.source_language("en") == oracle.source_language("en") == "de"
    assert released_languages([mono, oracle], "en") == ["de"]
    multi = mono.model_copy(update={"id": "i3", "setting": "multi", "en_question": "Which two figures?",
                                    "en_answer": "120 and 80."})
    assert multi.source_language("en") == "en" and released_languages([mono, multi], "en") == ["de", "en"]
