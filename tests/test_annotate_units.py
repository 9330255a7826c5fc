"""Annotation pieces that need no server: query-DSL evaluation, agreement, projects, merge, config, CLI errors."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from babelrag.annotate import agreement as ag
from babelrag.annotate import registry
from babelrag.annotate import merge, projects, samples
from babelrag.annotate.cli import app
from babelrag.annotate.settings import AnnotateSettings
from babelrag.annotate.server import es_dsl as dsl
from babelrag.errors import ConfigError, InputError, StageError
from babelrag.records import QAItem
from babelrag.stats import cohen_kappa, fleiss_kappa, raw_agreement

# ----------------------------------------------------------------------------- query DSL (what Argilla sends)

DOCS = [
    {"id": "r1", "status": "pending", "fields": {"text": "Lisbon summit drew delegates"}, "metadata": {"n": 3},
     "responses": [{"id": "x1", "user_id": "u1", "status": "draft"}, {"id": "x2", "user_id": "u2", "status": "submitted"}]},
    {"id": "r2", "status": "completed", "fields": {"text": "Porto football results"}, "metadata": {"n": 10},
     "responses": [{"id": "x3", "user_id": "u1", "status": "submitted"}, {"id": "x4", "user_id": "u2", "status": "submitted"}]},
    {"id": "r3", "status": "pending", "fields": {"text": "Lisbon weather"}, "metadata": {}},
]


def ids(query) -> list[str]:
    return [d["id"] for d in DOCS if dsl.match(d, query) > 0]


def nested_user_status(user: str, status: str) -> dict:
    return {"nested": {"path": "responses", "query": {"bool": {"must": [
        {"terms": {"responses.status": [status]}}, {"terms": {"responses.user_id": [user]}}]}}}}


def test_pending_queue_is_records_without_a_response_from_the_user():
    assert ids({"bool": {"must_not": {"term": {"responses.user_id": "u1"}}}}) == ["r3"]
    assert ids({"bool": {"must_not": {"exists": {"field": "responses"}}}}) == ["r3"]


def test_nested_clauses_match_within_one_response_only():
    # r1 has u1=draft and u2=submitted: a flat match would wrongly say "u1 submitted"
    assert ids(nested_user_status("u1", "submitted")) == ["r2"]
    assert ids(nested_user_status("u1", "draft")) == ["r1"]
    flat = {"bool": {"must": [{"terms": {"responses.status": ["submitted"]}}, {"terms": {"responses.user_id": ["u1"]}}]}}
    assert ids(flat) == ["r1", "r2"]  # include_in_root semantics for non-nested clauses


def test_range_ids_should_and_text_queries():
    assert ids({"range": {"metadata.n": {"gte": 3, "lte": 5}}}) == ["r1"]
    assert ids({"ids": {"values": ["r2", "zz"]}}) == ["r2"]
    should = {"bool": {"should": [{"term": {"status": "completed"}}, {"range": {"metadata.n": {"lte": 3}}}],
                       "minimum_should_match": 1}}
    assert ids(should) == ["r1", "r2"]
    sqs = {"simple_query_string": {"query": "lisbon deleg*", "fields": ["fields.*"], "default_operator": "AND"}}
    assert ids(sqs) == ["r1"]
    assert ids({"simple_query_string": {"query": "LISBON", "fields": ["fields.text"]}}) == ["r1", "r3"]
    with pytest.raises(ValueError, match="unsupported query clause 'fuzzy'"):
        dsl.match(DOCS[0], {"fuzzy": {"fields.text": "x"}})


def test_random_score_is_deterministic_per_seed():
    q = {"function_score": {"query": {"match_all": {}}, "functions": [{"random_score": {"seed": "u1", "field": "_seq_no"}}]}}
    first = [dsl.match(d, q) for d in DOCS]
    assert first == [dsl.match(d, q) for d in DOCS] and len(set(first)) == 3


def test_sort_puts_missing_values_last_in_both_directions():
    hits = [(1.0, i, d) for i, d in enumerate(DOCS)]
    asc = [h[2]["id"] for h in dsl.sort_hits(hits, [{"metadata.n": "asc"}])]
    desc = [h[2]["id"] for h in dsl.sort_hits(hits, [{"metadata.n": {"order": "desc"}}])]
    assert asc == ["r1", "r2", "r3"] and desc == ["r2", "r1", "r3"]
    by_status = [{"responses.status": {"order": "asc", "mode": "avg",
                                       "nested": {"path": "responses", "filter": {"terms": {"responses.user_id": ["u1"]}}}}}]
    assert [h[2]["id"] for h in dsl.sort_hits(hits, by_status)] == ["r1", "r2", "r3"]  # draft < submitted


def test_terms_aggregation_counts_documents_and_value_count_counts_values():
    agg = dsl.aggregate(DOCS, {"t": {"terms": {"field": "responses.status", "size": 10}},
                               "c": {"value_count": {"field": "responses.status"}},
                               "s": {"stats": {"field": "metadata.n"}}})
    assert agg["t"]["buckets"] == [{"key": "submitted", "doc_count": 2}, {"key": "draft", "doc_count": 1}]
    assert agg["c"]["value"] == 4
    assert (agg["s"]["min"], agg["s"]["max"], agg["s"]["count"]) == (3, 10, 2)


def test_update_scripts_argilla_sends():
    doc = json.loads(json.dumps(DOCS[0]))
    add = {"script": {"source": "... ctx._source.responses.remove(i); ... ctx._source.responses.add(params.response)",
                      "params": {"response": {"id": "x1", "user_id": "u1", "status": "submitted"}}}}
    doc = dsl.apply_update(doc, add)
    assert [(r["id"], r["status"]) for r in doc["responses"]] == [("x2", "submitted"), ("x1", "submitted")]
    delete = {"script": {"source": "if (...) { ctx._source.responses.remove(i); }", "params": {"response": {"id": "x2"}}}}
    assert [r["id"] for r in dsl.apply_update(doc, delete)["responses"]] == ["x1"]
    doc = dsl.apply_update(doc, {"doc": {"suggestions": {"q1": {"value": "yes"}}, "metadata": {"m": 1}}})
    doc = dsl.apply_update(doc, {"doc": {"suggestions": {"q2": {"value": "no"}}}})
    assert set(doc["suggestions"]) == {"q1", "q2"} and doc["metadata"] == {"n": 3, "m": 1}  # deep merge
    doc = dsl.apply_update(doc, {"script": 'ctx._source["suggestions"].remove("q1")'})
    assert set(doc["suggestions"]) == {"q2"}


# ----------------------------------------------------------------------------- statistics and agreement


def test_stats_against_hand_computed_values():
    a, b = ["y", "y", "n", "y"], ["y", "y", "n", "n"]
    assert raw_agreement(a, b) == 0.75
    assert cohen_kappa(a, b) == pytest.approx(0.5)  # p_e = 3/4*2/4 + 1/4*2/4 = 1/2
    # counts (y, n): (3,0) (2,1) (0,3) (1,2): P_bar = 2/3, P_e = 1/2 -> kappa = 1/3
    assert fleiss_kappa([["y"] * 3, ["y", "y", "n"], ["n"] * 3, ["y", "n", "n"]]) == pytest.approx(1 / 3)


def _rows(labels: dict[str, dict[str, str]], question: str = "verdict", status: str = "submitted") -> list[dict]:
    return [{"dataset": "ds", "record_id": rid, "annotator": user, "status": status, "values": {question: lab},
             "updated_at": "2026-01-01T00:00:00"} for rid, per_user in labels.items() for user, lab in per_user.items()]


def test_fleiss_for_three_annotators_skips_records_with_another_label_count():
    labels = {"i1": {"a": "y", "b": "y", "c": "y"}, "i2": {"a": "y", "b": "y", "c": "n"},
              "i3": {"a": "n", "b": "n", "c": "n"}, "i4": {"a": "y", "b": "n", "c": "n"},
              "i5": {"a": "y", "b": "n"}, "i6": {"a": "y"}}
    rows = _rows(labels) + _rows({"i1": {"d": "n"}}, status="draft")  # drafts never count
    [res] = [r for r in ag.agreement(rows, "answer_judgement")]
    assert res.fleiss_kappa == pytest.approx(1 / 3) and res.cohen_kappa is None
    assert res.items == 5 and res.skipped == 1 and res.annotators == 3  # i6 has one label: not an item
    assert res.raw_agreement == pytest.approx((1 + 1 / 3 + 1 + 1 / 3 + 0) / 5)
    assert res.disagreements == 3


def test_disagreements_export_jsonl_and_csv(tmp_path):
    rows = _rows({"i1": {"a": "correct", "b": "incorrect"}, "i2": {"a": "correct", "b": "correct"}})
    dis = ag.disagreements(rows, "answer_judgement")
    assert dis == [{"project": "answer_judgement", "dataset": "ds", "record_id": "i1", "question": "verdict",
                    "labels": {"a": "correct", "b": "incorrect"},
                    "responses": {"a": {"verdict": "correct"}, "b": {"verdict": "incorrect"}}, "fields": {}}]
    jl = ag.write_disagreements(dis, tmp_path / "d.jsonl")
    assert json.loads(jl.read_text())["labels"] == {"a": "correct", "b": "incorrect"}
    csv_text = ag.write_disagreements(dis, tmp_path / "d.csv").read_text().splitlines()
    assert csv_text[1].startswith("answer_judgement,ds,i1,verdict,")


# ----------------------------------------------------------------------------- projects


def test_every_project_uses_unique_names_across_fields_questions_and_metadata():
    for spec in [projects.spec(n) for n in registry.names()]:
        names = [f.name for f in spec.fields] + [q.name for q in spec.questions] + list(spec.metadata)
        assert len(names) == len(set(names)), spec.name
        assert projects.guideline(spec.name).version.isdigit()


def test_guidelines_and_per_project_distribution():
    s = AnnotateSettings(min_submitted=3, projects={"translation": {"min_submitted": 1, "workspace": "tr"}})
    assert s.project("qa_verification").min_submitted == 3 and s.project("qa_verification").workspace == "babelrag"
    assert s.project("translation").min_submitted == 1 and s.project("translation").workspace == "tr"
    text = projects.guidelines_text("grounding")
    assert text.startswith("# Grounding relevance") and text.endswith("_Guideline grounding, version 1._")
    assert list(projects.GROUNDING.questions[0].labels) == [
        "answer-the-question", "related-information", "outdated", "unknown", "irrelevant"]


def test_forced_choice_positions_are_seeded_recorded_and_balanced():
    pairs = samples.contrastive_pairs(40)
    recs = projects.forced_choice_records(pairs, seed=3)
    again = projects.forced_choice_records(pairs, seed=3)
    assert [r.fields for r in recs] == [r.fields for r in again]
    a_share = sum(r.metadata["better_position"] == "A" for r in recs) / len(recs)
    assert 0.25 < a_share < 0.75
    for pair, rec in zip(pairs, recs):
        shown = rec.fields["response_a"] if rec.metadata["better_position"] == "A" else rec.fields["response_b"]
        assert shown == pair["option_" + pair["better"]]
        # the judge picked the better option: the suggestion points at the better response's position
        assert rec.suggestions[0].value == rec.metadata["better_position"]
    other = projects.forced_choice_records(pairs, seed=4)
    assert [r.metadata["better_position"] for r in other] != [r.metadata["better_position"] for r in recs]


def test_record_builders_prefill_suggestions():
    qa = projects.qa_verification_records(samples.qa_items(1))[0]
    assert {s.question: s.value for s in qa.suggestions} == {
        "answer_correct": "yes", "corrected_answer": samples.qa_items(1)[0]["answer"], "natural": "yes"}
    tr = projects.translation_records(samples.qa_items(1), "de")[0]
    assert tr.suggestions[0].value.startswith("Welche Stadt") and tr.suggestions[0].agent == "mt-small"
    assert projects.translation_records(samples.qa_items(1), "zh")[0].suggestions == []  # no MT yet: blank
    g = projects.grounding_records(samples.instances(1))[0]
    sug = {s.question: s.value for s in g.suggestions}
    assert (sug["relevance_1"], sug["relevance_3"], sug["deflection"]) == ("answer-the-question", "irrelevant", "enough-grounding")
    assert "passage_4" not in g.fields


def test_qa_verification_shows_both_articles_with_the_used_facts_highlighted():
    arts = {a["id"]: a for a in samples.articles(1)}
    rec = projects.qa_verification_records(samples.qa_items(1), arts)[0]
    a, b = rec.fields["article_a"], rec.fields["article_b"]
    assert a.startswith("**Lisbon hosts summit 1** · en · 2024-05-01 · `a1` · [source](https://news.example/lisbon-1)")
    assert "How many came to Lisbon? → **101**" in a
    # exactly the sentence carrying the fact is marked, the rest of the article is shown unmarked
    assert a.count("<mark>") == 1 and "<mark>Lisbon summit 1 drew 101 delegates from twelve countries.</mark>" in a
    assert "The city prepared for weeks." in a and "The next meeting is planned for autumn." in a
    # the German article: the fact (asked in English) is found through its number
    assert "<mark>Zum Gipfel 1 kamen 51 Delegierte.</mark>" in b and b.count("<mark>") == 1
    # no articles given: no article fields (records stay valid); an unknown id says so instead of failing
    assert "article_a" not in projects.qa_verification_records(samples.qa_items(1))[0].fields
    missing = projects.qa_verification_records(samples.qa_items(1), {"a1": arts["a1"]})[0].fields["article_b"]
    assert "`b1` was not found" in missing and "How many delegates came to Porto?" in missing
    assert projects.missing_articles(samples.qa_items(2), arts) == ["a2", "b2"]


def test_long_articles_are_cut_to_the_passages_around_the_used_facts():
    from babelrag.annotate import sources
    from babelrag.records import Article, SimpleQA

    filler = [f"Filler sentence number {i} says nothing of note." for i in range(400)]
    text = " ".join(filler[:200] + ["The bridge opened on 4 May 2023 after nine years of work."] + filler[200:])
    art = Article(id="x", title="Bridge", text=text, language="en", published="2023-05-05")
    fact = SimpleQA(article_id="x", question="When did the bridge open?", answer="4 May 2023")
    md = sources.article_markdown(art, "x", [fact], limit=2000)
    assert len(md) < 2000 and f"passages of a {len(text):,}-character article" in md
    assert "<mark>The bridge opened on 4 May 2023 after nine years of work.</mark>" in md
    # one sentence of context before the first highlight (it must be on screen), two after
    assert "Filler sentence number 199" in md and "Filler sentence number 201" in md
    assert "Filler sentence number 198 " not in md and "Filler sentence number 202 " not in md
    assert "Filler sentence number 150 " not in md and md.count("[…]") == 2
    # the text starts right after the title line; the facts come after it
    assert md.index("<mark>") < md.index("Facts the question uses") and md.startswith("**Bridge** · en")
    # above PASSAGES_OVER characters an article with a highlight is cut even if it is under the limit
    short = sources.article_markdown(art.model_copy(update={"text": " ".join(filler[:25]) + " The bridge opened on 4 May 2023."}),
                                     "x", [fact])
    assert "passages of a" in short and "Filler sentence number 0 " not in short
    # markup in an article is shown as text, never as HTML
    art2 = art.model_copy(update={"text": "A <script>x</script> tag. The bridge opened on 4 May 2023."})
    assert "&lt;script&gt;" in sources.article_markdown(art2, "x", [fact])


def test_translation_shows_source_and_machine_translation_side_by_side():
    items = samples.qa_items(1)
    items[0]["answer"] = "Lisbon | by far."
    field = projects.translation_records(items, "de")[0].fields["source_and_mt"]
    header, _sep, question, answer = field.splitlines()
    assert header == "| English source | Machine translation (de, mt-small) |"
    assert question == f"| **Q:** {items[0]['question']} | **Q:** Welche Stadt, Lissabon oder Porto, Gipfel 1? |"
    assert answer == "| **A:** Lisbon \\| by far. | **A:** Lissabon. |"  # a pipe in the text does not split the cell
    assert "none, translate from scratch" in projects.translation_records(items, "zh")[0].fields["source_and_mt"]


def test_status_lists_every_configured_annotator_and_progress_per_project():
    from babelrag.annotate import pull as pl

    s = AnnotateSettings(workspaces=["other"], users=[{"username": "ann1"}, {"username": "ann2"},
                                                      {"username": "outsider", "workspaces": ["other"]}])
    assert pl.project_annotators(s, "translation") == ["ann1", "ann2"]
    records = [{"project": "translation", "dataset": f"babelrag-translation-{lang}", "record_id": f"q{i}",
                "status": "completed" if (lang, i) == ("de", 1) else "pending"} for lang in ("de", "fr") for i in (1, 2, 3)]
    responses = [{"dataset": "babelrag-translation-de", "record_id": "q1", "annotator": a, "status": "submitted"}
                 for a in ("ann1", "ann2")]
    responses.append({"dataset": "babelrag-translation-de", "record_id": "q2", "annotator": "ann1", "status": "draft"})
    rows = {(r["dataset"], r["annotator"]): r for r in pl.status_table(responses, records, pl.project_annotators(s, "translation"))}
    assert rows[("translation (2 datasets)", "(all)")] == {
        "dataset": "translation (2 datasets)", "annotator": "(all)", "records": 6, "completed": 1, "pending": 5,
        "submitted": None, "draft": None, "discarded": None, "progress": "17%"}
    assert rows[("babelrag-translation-de", "ann1")]["pending"] == 1 and rows[("babelrag-translation-de", "ann1")]["draft"] == 1
    assert rows[("babelrag-translation-fr", "ann2")] == {
        "dataset": "babelrag-translation-fr", "annotator": "ann2", "records": 3, "completed": None, "pending": 3,
        "submitted": 0, "draft": 0, "discarded": 0, "progress": None}  # listed with 0 done
    assert not any(a == "outsider" for _, a in rows)


def test_first_visit_script_is_added_once_to_every_page(tmp_path):
    from babelrag.annotate.server import ui_first_visit as ui

    (tmp_path / "sign-in").mkdir()
    for page in (tmp_path / "index.html", tmp_path / "sign-in" / "index.html"):
        page.write_text("<!doctype html><html><head><title>Argilla</title></head><body></body></html>")
    assert ui.inject_into(str(tmp_path)) == 2 and ui.inject_into(str(tmp_path)) == 0
    page = (tmp_path / "index.html").read_text()
    assert page.count(ui.MARKER) == 1 and page.index(ui.MARKER) < page.index("<title>")  # before the app's scripts


def test_bad_inputs_name_the_record_and_the_fix():
    bad = samples.qa_items(2)
    bad[1]["q_type"] = "riddle"
    with pytest.raises(InputError, match=r"record qa2: q_type: .*expected a QAItem"):
        projects.qa_verification_records(bad)
    inst = samples.instances(1)[0]
    inst["documents"] = inst["documents"] * 3
    with pytest.raises(InputError, match="inst1 has 9 documents; at most 8"):
        projects.grounding_records([inst])
    with pytest.raises(InputError, match="needs a target language"):
        projects.build_records("translation", samples.qa_items(1), AnnotateSettings())
    with pytest.raises(ConfigError, match="unknown annotation project 'qa'"):
        projects.spec("qa")


# ----------------------------------------------------------------------------- merge and config


def test_merge_waits_for_min_submitted_and_keeps_translation_provenance():
    items = [QAItem.model_validate(q) for q in samples.qa_items(2)]
    rows = [{"dataset": "babelrag-translation-de", "record_id": "qa1", "annotator": a, "status": "submitted",
             "updated_at": "2026-01-01", "values": {"question_translation": "Frage?", "answer_translation": "Antwort."}}
            for a in ("ann1", "ann2")]
    rows.append({**rows[0], "record_id": "qa2"})
    merged, report = merge.merge_translation(items, rows, "de", min_submitted=2)
    tr = merged[0].translation("de")
    assert tr.question == "Frage?" and tr.machine_translated is False and tr.post_edited is True
    assert tr.machine_translation.model == "mt-small" and len(tr.annotators) == 2
    assert merged[1] == items[1] and report.pending == 1 and report.merged == 1


def test_majority_needs_more_than_half():
    assert merge.majority(["a", "a", "b"]) == "a"
    assert merge.majority(["a", "b"]) is None and merge.majority([]) is None


def test_config_is_strict():
    with pytest.raises(ValueError, match="extra"):
        AnnotateSettings.model_validate({"min_submited": 2})
    with pytest.raises(ValueError, match="not declared"):
        AnnotateSettings.model_validate({"users": [{"username": "a", "workspaces": ["nowhere"]}]})
    with pytest.raises(ValueError, match="duplicate usernames"):
        AnnotateSettings.model_validate({"users": [{"username": "a"}, {"username": "a"}]})
    s = AnnotateSettings.model_validate({"projects": {"grounding": {"workspace": "g"}}})
    assert s.all_workspaces() == ["babelrag", "g"] and s.dataset_name("grounding") == "babelrag-grounding"


def test_cli_errors_are_one_line_and_say_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("ARGILLA_API_URL", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in samples.qa_items(1)))
    runner = CliRunner()
    res = runner.invoke(app, ["push", "qa_verification", "--input", "qa.jsonl"])
    assert isinstance(res.exception, InputError) and "--articles FILE" in str(res.exception)  # no sources anywhere
    (tmp_path / "articles.jsonl").write_text("".join(json.dumps(a) + "\n" for a in samples.articles(1)))
    res = runner.invoke(app, ["push", "qa_verification", "--input", "qa.jsonl", "--articles", "articles.jsonl"])
    assert isinstance(res.exception, StageError) and "babelrag annotate serve" in str(res.exception)
    res = runner.invoke(app, ["agreement", "qa_verification", "--out", str(tmp_path)])
    assert isinstance(res.exception, InputError) and "run `babelrag annotate pull qa_verification` first" in str(res.exception)
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\nnot json\n')
    res = runner.invoke(app, ["push", "qa_verification", "--input", "bad.jsonl"])
    assert isinstance(res.exception, InputError) and "bad.jsonl:2: not valid JSON" in str(res.exception)


def test_server_start_refuses_a_busy_port_and_a_second_server_on_one_home(tmp_path):
    import os
    import socket

    from babelrag.annotate.settings import ServerSettings
    from babelrag.annotate.server.process import ArgillaServer

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(StageError, match=f"port {port} on 127.0.0.1 is in use"):
            ArgillaServer(ServerSettings(home=tmp_path / "a", port=port)).start()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "server.json").write_text(json.dumps({"url": "http://127.0.0.1:1", "pid": os.getpid()}))
    with pytest.raises(StageError, match="already running at http://127.0.0.1:1"):
        ArgillaServer(ServerSettings(home=tmp_path / "b", port=0)).start()


def test_grounding_passage_relevance_is_also_pooled_over_passages():
    def row(user, rid, values):
        return {"dataset": "g", "record_id": rid, "annotator": user, "status": "submitted", "values": values,
                "updated_at": "t"}
    rows = [row("a", "r1", {"relevance_1": "answer-the-question", "relevance_2": "irrelevant"}),
            row("b", "r1", {"relevance_1": "answer-the-question", "relevance_2": "related-information"}),
            row("a", "r2", {"relevance_1": "answer-the-question"}),
            row("b", "r2", {"relevance_1": "answer-the-question"})]
    pooled = [r for r in ag.agreement(rows, "grounding") if r.question == "relevance"][0]
    # items r1#1 (agree), r1#2 (disagree), r2#1 (agree): p_o = 2/3, p_e = 2*2/9 -> kappa = (2/9)/(5/9) = 0.4
    assert pooled.items == 3 and pooled.raw_agreement == pytest.approx(2 / 3)
    assert pooled.cohen_kappa == pytest.approx(0.4)


def test_suggestions_are_compared_with_the_human_majority():
    human = {"r1": ("correct", "correct"), "r2": ("incorrect", "incorrect"), "r3": ("incorrect", "incorrect"),
             "r4": ("incorrect", "incorrect"), "r5": ("correct", "incorrect"), "r6": ("correct", "correct")}
    rows = _rows({rid: {"a": x, "b": y} for rid, (x, y) in human.items()})
    sugg = {"r1": "correct", "r2": "correct", "r3": "incorrect", "r4": "incorrect", "r5": "correct"}
    records = [{"dataset": "ds", "record_id": rid, "suggestions": {"verdict": v}, "suggestion_agents": {"verdict": "judge-panel"}}
               for rid, v in sugg.items()] + [{"dataset": "ds", "record_id": "r6", "suggestions": {}}]
    [res] = ag.suggestion_agreement(rows, records, "answer_judgement", min_submitted=2)
    # r5 is a tie and r6 has no suggestion: 4 items; p_o = 3/4, p_e = (2*1 + 2*3)/16 = 1/2 -> kappa 0.5
    assert (res.items, res.agent) == (4, "judge-panel")
    assert res.raw_agreement == 0.75 and res.cohen_kappa == pytest.approx(0.5)
    assert res.mode == "preselect"  # pulled Argilla suggestions, no local record of the push


def test_agreement_with_the_pipeline_is_reported_per_suggestion_mode_from_the_push_record(tmp_path):
    from babelrag.annotate.suggested import read_suggested, write_suggested
    from babelrag.annotate.settings import ProjectSettings

    answers = samples.model_answers(4)  # judge says correct, incorrect, correct, incorrect
    for ans in answers:
        ans["judge_verdict"] = "correct"
    modes = {"show": answers[:2], "off": answers[2:]}
    for mode, rows in modes.items():
        s = AnnotateSettings(projects={"answer_judgement": ProjectSettings(suggestions=mode)})
        recs = projects.build_records("answer_judgement", rows, s)
        assert all(r.suggestions == [] for r in recs)  # neither mode sends an Argilla suggestion
        assert all(("hints" in r.fields) == (mode == "show") for r in recs)
        write_suggested(tmp_path, "answer_judgement", f"ds-{mode}", mode, recs)
    suggested = read_suggested(tmp_path, "answer_judgement")
    assert [(r["dataset"], r["mode"], r["suggestions"]) for r in suggested][:1] == [
        ("ds-off", "off", {"verdict": "correct"})]
    # both annotators: ans1 correct, ans2 incorrect (show); ans3 correct, ans4 correct (off)
    human = {("ds-show", "ans1"): "correct", ("ds-show", "ans2"): "incorrect",
             ("ds-off", "ans3"): "correct", ("ds-off", "ans4"): "correct"}
    rows = [{"dataset": ds, "record_id": rid, "annotator": who, "status": "submitted", "values": {"verdict": v}}
            for (ds, rid), v in human.items() for who in ("a", "b")]
    res = {r.mode: r for r in ag.suggestion_agreement(rows, [], "answer_judgement", 2, suggested)}
    assert set(res) == {"show", "off"} and res["show"].dataset == "ds-show"
    assert (res["show"].items, res["show"].raw_agreement) == (2, 0.5)
    assert (res["off"].items, res["off"].raw_agreement, res["off"].agent) == (2, 1.0, "judge-panel")
    # pushing a dataset again replaces its rows only
    write_suggested(tmp_path, "answer_judgement", "ds-off", "off", [])
    assert {r["dataset"] for r in read_suggested(tmp_path, "answer_judgement")} == {"ds-show"}


def test_a_dead_hosted_server_gives_a_one_line_error(tmp_path, monkeypatch):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ARGILLA_API_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ARGILLA_API_KEY", "some-key")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["status", "qa_verification"])
    assert isinstance(res.exception, StageError), res.output
    assert f"Argilla at http://127.0.0.1:{port}: connecting failed" in str(res.exception)
    assert "is the server running?" in str(res.exception)


def test_push_reads_source_articles_from_the_builds_ingest_stage_by_id(tmp_path, capsys):
    from babelrag.annotate.cli import _source_articles
    from babelrag.records import Article
    from tests.helpers.qa_fixtures import seed_stage

    arts = [Article.model_validate(a) for a in samples.articles(3)]
    seed_stage(tmp_path / "build", "ingest", [a for a in arts if a.id != "b2"], Article)
    found = _source_articles(samples.qa_items(2), None, tmp_path / "build")
    assert sorted(found) == ["a1", "a2", "b1"]  # only the items' articles; b2 is not in the build
    assert "1 of 4 source articles not found" in capsys.readouterr().out
    records = projects.qa_verification_records(samples.qa_items(2), found)
    assert "<mark>" in records[1].fields["article_a"] and "`b2` was not found" in records[1].fields["article_b"]


def test_the_default_home_is_made_private_and_loose_files_of_an_older_version_are_tightened(tmp_path, monkeypatch):
    """No server needed: what `ArgillaServer.start` runs first on the home (default location included)."""
    import os
    import stat

    from babelrag.annotate.server.host_safety import private_home
    from babelrag.annotate.settings import ServerSettings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    home = ServerSettings().resolved_home()
    assert home == tmp_path / "share" / "babelrag" / "argilla"
    home.mkdir(parents=True, mode=0o755)
    os.chmod(home, 0o755)
    for name in ("argilla.db", "argilla.db-wal", "credentials.json", "users.json", ".migrated-2.8.0"):
        (home / name).write_text("x")
        os.chmod(home / name, 0o644)
    private_home(home)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "logs").stat().st_mode) == 0o700
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in home.iterdir() if p.is_file()} == {
        n: "0o600" for n in ("argilla.db", "argilla.db-wal", "credentials.json", "users.json", ".migrated-2.8.0")}


@pytest.mark.argilla
def test_a_new_home_gets_the_migrated_empty_database_without_running_migrate(tmp_path, monkeypatch):
    """`database migrate` runs once per server venv and Argilla version: its empty database is kept beside
    the venv and a new home starts from a copy, which a real server then runs on."""
    import sqlite3
    import uuid

    import httpx

    from babelrag.annotate.server import process
    from babelrag.annotate.server.venv import ensure_server_venv
    from babelrag.annotate.settings import ServerSettings

    monkeypatch.setattr(process, "EMPTY_DB", f"empty-argilla-test-{uuid.uuid4().hex}.db")  # none there yet
    venv = ServerSettings().resolved_venv()
    python = ensure_server_venv(venv)
    runs: list[list[str]] = []
    real_run = process.ArgillaServer._run
    monkeypatch.setattr(process.ArgillaServer, "_run",
                        lambda self, py, args, *a, **k: runs.append(args) or real_run(self, py, args, *a, **k))

    def schema(db):
        with sqlite3.connect(db) as con:
            return (sorted(con.execute("SELECT type, name, sql FROM sqlite_master")),
                    con.execute("SELECT version_num FROM alembic_version").fetchall())

    try:
        first = process.ArgillaServer(ServerSettings(home=tmp_path / "first", port=0))
        first.home.mkdir()
        first._migrate(python)  # no empty database yet: Argilla's migrate runs and leaves one
        assert runs == [["database", "migrate"]] and (venv / process.EMPTY_DB).exists()
        server = process.ArgillaServer(ServerSettings(home=tmp_path / "second", port=0)).start()
        try:
            assert ["database", "migrate"] not in runs[1:] and ["create-owner"] in runs
            assert schema(server.home / "argilla.db")[0] == schema(first.home / "argilla.db")[0]
            assert schema(server.home / "argilla.db")[1] == schema(first.home / "argilla.db")[1] != []
            me = httpx.get(f"{server.url}/api/v1/me", headers={"X-Argilla-Api-Key": server.api_key})
            assert me.status_code == 200 and me.json()["role"] == "owner"
        finally:
            server.stop()
    finally:
        (venv / process.EMPTY_DB).unlink(missing_ok=True)
