"""The funnel (issue 38 item 3): per language, articles → paired → relevant → questions → accepted → instances,
with every stage's drop reasons in full, in the run report and `construct status`."""
from __future__ import annotations

import io

from rich.console import Console

from babelrag.funnel import build_funnel
from babelrag.pipeline import RunReport, StageReport
from babelrag.records import Article, ArticlePair, Instance, QAItem
from babelrag.store import BuildStore, Manifest
from tests.helpers.qa_fixtures import art, qa


def seed(build, stage, records, model, skipped=None, errors=0, failed=0):
    store = BuildStore(build)
    store.root.mkdir(parents=True, exist_ok=True)
    staging = store.new_staging_dir(stage)
    store.commit(stage, staging, sorted(records, key=lambda r: r.id), model, [],
                 Manifest(stage=stage, fingerprint=f"seeded-{stage}", config_hash="", inputs={},
                          counts={"skipped": skipped or {}, "errors": errors, "failed": failed}))


def pair(i, a, b, langs, relevant=None):
    return ArticlePair(id=i, article_a=a, article_b=b, language_a=langs[0], language_b=langs[1], method="dense",
                       relevant=relevant)


def instance(i, qa_id, lang):
    return Instance(id=i, qa_id=qa_id, setting="mono", language=lang, question="q", answer="a", en_question="q",
                    en_answer="a", q_type="comparison")


def test_funnel_counts_each_language_and_lists_every_drop_in_full(tmp_path):
    arts = [art("a1", "en", "2026-08-20"), art("a2", "en", "2026-08-21"), art("a3", "en", "2026-08-22"),
            art("d1", "de", "2026-08-20"), art("d2", "de", "2026-08-21"), art("f1", "fr", "2026-08-20")]
    seed(tmp_path, "ingest", arts, Article, skipped={"too-short": 4})
    pairs = [pair("p1", "a1", "a2", ("en", "en")), pair("p2", "d1", "a1", ("de", "en")),
             pair("p3", "d2", "a3", ("de", "en"))]
    seed(tmp_path, "pairs", pairs, ArticlePair, skipped={"dense-below-min-pair-similarity": 7})
    checked = [pairs[0].model_copy(update={"relevant": True}), pairs[1].model_copy(update={"relevant": True}),
               pairs[2].model_copy(update={"relevant": False})]
    seed(tmp_path, "relevance", checked, ArticlePair, skipped={"unsupported-language-pair": 16})
    questions = [qa("q1", "a1", "a2"), qa("q2", "d1", "a1")]
    seed(tmp_path, "questions", questions, QAItem, errors=3, failed=1)  # 1 without an answer, 2 final
    filtered = [questions[0].model_copy(update={"accepted": False, "rejected_by": "near_duplicate"}), questions[1]]
    seed(tmp_path, "filters", filtered, QAItem)
    seed(tmp_path, "instances", [instance("i1", "q2", "de"), instance("i2", "q2", "en")], Instance)

    funnel = build_funnel(BuildStore(tmp_path))
    rows = {r.language: (r.articles, r.paired, r.relevant, r.questions, r.accepted, r.instances)
            for r in funnel.languages}
    assert rows == {"en": (3, 3, 2, 2, 1, 1), "de": (2, 2, 1, 1, 1, 1), "fr": (1, 0, 0, 0, 0, 0)}
    assert funnel.drops == {"ingest": {"too-short": 4}, "pairs": {"dense-below-min-pair-similarity": 7},
                            "relevance": {"unsupported-language-pair": 16},
                            "filters": {"rejected-by-near_duplicate": 1}}
    assert funnel.failed == {"questions": 1} and funnel.missing_stages == []
    assert funnel.errors == {"questions": 2}  # final errors are not promised to a re-run

    # the run report carries it, and a narrow console prints every reason whole
    report = RunReport(stages=[StageReport(stage="pairs", skipped={"dense-below-min-pair-similarity": 7})],
                       funnel=funnel)
    assert report.to_dict()["funnel"]["drops"]["relevance"] == {"unsupported-language-pair": 16}
    out = io.StringIO()
    Console(file=out, width=60, force_terminal=False).print(report.render())
    text = out.getvalue()
    assert "pairs: dropped dense-below-min-pair-similarity = 7" in text
    assert "questions: 1 item(s) failed" in text
    assert "questions: 2 item(s) ended in an error (final" in text
    out = io.StringIO()  # at a common terminal width the table wraps the reason instead of cutting it
    Console(file=out, width=120, force_terminal=False).print(report.render())
    assert "dense-below-min-pai…" not in out.getvalue() and "=7" in out.getvalue()


def test_funnel_of_a_build_not_finished_names_the_stages_not_run(tmp_path):
    seed(tmp_path, "ingest", [art("a1", "en", "2026-08-20")], Article)
    funnel = build_funnel(BuildStore(tmp_path))
    assert [(r.language, r.articles, r.paired) for r in funnel.languages] == [("en", 1, 0)]
    assert funnel.missing_stages == ["pairs", "relevance", "questions", "filters", "instances"]
