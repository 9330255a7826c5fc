"""LLM-judged steps through the real LLM layer against the scripted OpenAI-compatible server."""
import re

import pytest

from babelrag.evaluators.bradley_terry import bradley_terry
from babelrag.evaluators.contrastive import ragas_compare
from babelrag.evaluators.garage import garage_judgements, score_garage
from babelrag.evaluators.judges import Support, prompt, scores_1_to_5
from babelrag.evaluators.mirage import all_matchups, pairwise_battles
from babelrag.evaluators.ragas import (PairPreference, forced_choice_agreement, ragas_decomposition,
                                       score_context_relevance, score_faithfulness)
from babelrag.evaluators.xrag_judge import panel_votes
from babelrag.evaluators.xrag import XragItem, score_panel
from babelrag.llm.client import LLMRunner
from babelrag.llm.settings import EndpointConfig, LLMSettings
from babelrag.testing.scripted_server import Fault, ScriptedServer


def _field(text, name):
    m = re.search(rf"^{name}: (.*)$", text, re.M)
    return m.group(1) if m else ""


def brain(body):
    """A deterministic judge: reads the rendered prompt and answers like a careful grader."""
    user = body["messages"][-1]["content"]
    model = body["model"]
    if "Gold answer:" in user and "Candidate answer:" in user:  # xrag judge
        if model == "judge-3" and "Madrid" in user:
            return Fault("400")  # permanent failure on one item -> abstention
        gold, cand = _field(user, "Gold answer"), _field(user, "Candidate answer")
        key = gold.split()[0]
        return {"correct": key in cand or model == "judge-3", "reason": "scripted"}
    if "Answer A:" in user:  # pairwise
        ref = _field(user, "Reference answer").split()[0]
        a, b = ref in _field(user, "Answer A"), ref in _field(user, "Answer B")
        return {"verdict": "tie" if a == b else ("A" if a else "B")}
    if "Reply as JSON: {\"deflected\"" in user:
        return {"deflected": "not enough information" in _field(user, "Response")}
    if "major_issues" in user:
        return {"eligible": "wrong" not in _field(user, "Response"), "major_issues": []}
    if "Sentences:" in user:
        passages = dict(re.findall(r"^\[(\w+)\] (.*)$", user, re.M))
        sents = re.findall(r"^\d+\. (.*)$", user, re.M)
        return {"support": [[pid for pid, t in passages.items() if s.split()[0] in t] for s in sents]}
    if "\"statements\"" in user:
        ctx = _field(user, "Context")
        return {"statements": [{"text": s, "supported": s.split()[0] in ctx}
                               for s in _field(user, "Answer").split(". ") if s]}
    if "\"questions\"" in user:
        return {"questions": ["What is the capital?", "Which city is the capital?"], "noncommittal": "know" in user}
    if "copied from the context" in user:
        ctx = _field(user, "Context")
        if "Outage" in ctx:
            return Fault("500")  # the judge call gets no answer (retried, then given up)
        if "Garbled" in ctx:
            return "I cannot tell which sentences matter."  # answered, unreadable (and so is the repair)
        return {"sentences": [s for s in re.split(r"(?<=\.) ", ctx) if "capital" in s]}
    if "Candidate A:" in user:
        return {"choice": "A" if "good" in _field(user, "Candidate A") else "B"}
    if "<integer 1-5>" in user:
        return {"score": 4}
    return "unexpected prompt"


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with ScriptedServer(brain) as srv:
        ep = dict(base_url=srv.base_url, timeout_s=2, max_retries=1, retry_backoff_s=0.01)
        settings = LLMSettings(
            endpoints={name: EndpointConfig(model=name, **ep) for name in ("judge-1", "judge-2", "judge-3")},
            progress=False,
        )
        r = LLMRunner(settings, tmp_path_factory.mktemp("llmcache"))
        yield r
        r.close()


def test_prompts_have_ids_and_versions():
    for name in ("xrag_judge", "mirage_pairwise", "garage_support", "ragas_compare"):
        p = prompt(name)
        assert p.ref.startswith("eval.") and p.version == "1"


def test_panel_votes_and_xrag_score(runner):
    items = [
        {"question": "Capital of Germany?", "gold": "Berlin", "answer": "Berlin ist die Hauptstadt."},
        {"question": "Capital of Spain?", "gold": "Madrid", "answer": "Barcelona ist die Hauptstadt."},
        {"question": "Capital of France?", "gold": "Paris", "answer": "Lyon ist die Hauptstadt."},
    ]
    votes = panel_votes(runner, ["judge-1", "judge-2", "judge-3"], items, ["q1", "q2", "q3"])
    assert votes == [[True, True, True], [False, False, None], [False, False, True]]
    res = score_panel(
        [XragItem(f"q{k + 1}", "mono", "de", it["answer"], v) for k, (it, v) in enumerate(zip(items, votes))],
        languages=("en", "de"), rounds=50,
    )
    assert [r["correct"] for r in res.items] == [True, False, False]
    assert res.counts["abstained_votes"] == 1


def test_pairwise_battles_both_orders_to_bt(runner):
    answers = {
        "good": {"q1": "Berlin is the capital.", "q2": "Paris it is."},
        "half": {"q1": "Berlin, I think.", "q2": "Maybe Lyon."},
        "bad": {"q1": "Munich.", "q2": "Lyon."},
    }
    jb = pairwise_battles(runner, "judge-1", all_matchups(answers), {"q1": "Capital of DE?", "q2": "Capital of FR?"},
                          {"q1": "Berlin", "q2": "Paris"})
    assert len(jb.battles) == 2 * 6 and jb.failed == 0 and jb.inconsistent == 0
    wins = {(b.model_a, b.model_b, b.winner) for b in jb.battles}
    assert ("bad", "good", "model_b") in wins and ("bad", "half", "tie") in wins
    res = bradley_terry(jb.battles, rounds=0, l2=0.01)
    assert res.leaderboard()[0]["model"] == "good"


def test_scores_1_to_5(runner):
    out = scores_1_to_5(runner, "judge-1", "mirage_fluency", [{"answer": "Gut.", "language": "de"}], ["a"])
    assert out == [4.0]


def test_garage_judgements_to_metrics(runner):
    passages = {"p1": "Berlin is the capital of Germany.", "p2": "Bonn was the old capital."}
    records = [
        {"query_id": "g1", "question": "Capital?", "gold": "Berlin", "response": "Berlin is the capital. Bonn was before.",
         "passages": passages, "relevant": ["p1"], "requires_deflection": False, "cited": ["p1"]},
        {"query_id": "g2", "question": "Capital?", "gold": "Berlin", "response": "Munich is wrong here.",
         "passages": passages, "relevant": ["p1"], "requires_deflection": False},
        {"query_id": "g3", "question": "Mayor in 2031?", "gold": "", "response": "There is not enough information.",
         "passages": passages, "relevant": [], "requires_deflection": True},
    ]
    items = garage_judgements(runner, "judge-1", records)
    assert items[0].sentence_support == [["p1"], ["p2"]] and items[0].eligible is True
    assert items[1].eligible is False and items[1].sentence_support == [[]]
    assert items[2].deflected is True
    res = score_garage(items, rounds=20)
    rows = {r["query_id"]: r for r in res.items}
    assert (rows["g1"]["factuality"], rows["g1"]["raf"]) == (1.0, 0.0)  # 2nd sentence only by p2 (not relevant)
    assert rows["g2"]["factuality"] == 0.0 and rows["g3"]["deflection_tp"] == 1.0


def test_ragas_decomposition_and_compare(runner):
    recs = [{"query_id": "r1", "question": "What is the capital?",
             "context": "Berlin is the capital. The sky is blue.", "answer": "Berlin is big. Paris is nice"}]
    d = ragas_decomposition(runner, "judge-1", recs)
    assert d["faithfulness"][0]["supported"] == [True, False]
    assert score_faithfulness(d["faithfulness"], rounds=10).items[0]["faithfulness"] == 0.5
    assert score_context_relevance(d["context_relevance"], rounds=10).items[0]["context_relevance"] == 0.5
    assert d["answer_relevance"][0]["generated"]
    pairs = [{"pair_id": f"p{k}", "question": "q", "context_a": "c", "context_b": "c",
              "answer_a": "good" if k % 2 else "poor", "answer_b": "poor" if k % 2 else "good"} for k in range(6)]
    choices = ragas_compare(runner, "judge-1", "faithfulness", pairs, seed=1)
    assert choices == ["b", "a", "b", "a", "b", "a"]  # the "good" side, whatever order it was shown in
    agree = forced_choice_agreement([PairPreference(p["pair_id"], c, choice=c) for p, c in zip(pairs, choices)], rounds=10)
    assert agree.aggregate["agreement"].value == 1.0


def test_contrastive_variants_against_human_choices(runner):
    from babelrag.evaluators.contrastive import compare_variants

    # faithfulness pairs: the "good" side's answer is supported by its context, the other is not
    pairs = []
    for k in range(4):
        good = {"context": "Berlin is the capital. It is big.", "answer": "Berlin is the capital, a good answer"}
        poor = {"context": "Berlin is the capital. It is big.", "answer": "Paris is the capital"}
        a, b = (good, poor) if k % 2 else (poor, good)
        pairs.append({"pair_id": f"p{k}", "question": "What is the capital?", "human": "a" if k % 2 else "b",
                      "context_a": a["context"], "answer_a": a["answer"],
                      "context_b": b["context"], "answer_b": b["answer"]})
    res = compare_variants(runner, "judge-1", "faithfulness", pairs, rounds=20, seed=2)
    # decomposition: statements start with "Berlin" (supported) or "Paris" (not) -> always right
    assert res["decomposition"].aggregate["agreement"].value == 1.0
    # direct: the scripted judge gives every side 4 -> all ties -> 0.5
    assert res["direct"].aggregate["agreement"].value == 0.5 and res["direct"].counts["ties"] == 4
    # comparative: the scripted judge prefers the side saying "good", whichever position it is shown in
    assert res["comparative"].aggregate["agreement"].value == 1.0 and res["comparative"].counts["judge_failed"] == 0
    assert res["decomposition"].metric == "ragas.faithfulness.decomposition"


def test_contrastive_pairs_whose_judge_got_no_answer_are_left_out(runner):
    """A context-extraction call answered by a 5xx (the scripted server's fault) is a failed judge call, as in
    `evaluate run` (``judge_calls``): its pair has no verdict, even though decomposition's arithmetic would
    score an empty extraction as "no essential sentence" (0, the poor side) and agree with the humans."""
    from babelrag.evaluators.contrastive import compare_variants

    good, poor = "Berlin is the capital. It is big.", "Lisbon is far. It is old."
    pairs = [{"pair_id": f"p{k}", "question": "What is the capital?", "human": "a", "context_a": good,
              "answer_a": "", "context_b": poor, "answer_b": ""} for k in range(3)]
    pairs.append({**pairs[0], "pair_id": "down", "context_b": "Outage ahead. It is old."})
    res = compare_variants(runner, "judge-1", "context_relevance", pairs, variants=("decomposition",), rounds=10)
    dec = res["decomposition"]
    assert [it["query_id"] for it in dec.items] == ["p0", "p1", "p2"], dec.items
    assert dec.counts["judge_no_answer"] == 1 and dec.counts["judge_failed"] == 1
    assert dec.aggregate["agreement"].value == 1.0


def test_contrastive_pairs_whose_judge_reply_is_unreadable_are_left_out_and_not_asked_again(tmp_path):
    """A context-extraction reply still unreadable after the repair re-ask is the call's final outcome: the
    ``JudgeRunner`` counts it as unusable, its pair has no verdict (``judge_failed``) and a second comparison on
    the same LLM cache sends no request for it. Before: the unreadable extraction was scored as "no essential
    sentence" (context relevance 0, the poor side) and the pair counted as agreeing with the humans."""
    from babelrag.evaluators.contrastive import compare_variants
    from babelrag.evaluators.metric import JudgeRunner

    good, poor = "Berlin is the capital. It is big.", "Lisbon is far. It is old."
    pairs = [{"pair_id": f"p{k}", "question": "What is the capital?", "human": "a", "context_a": good,
              "answer_a": "", "context_b": poor, "answer_b": ""} for k in range(3)]
    pairs.append({**pairs[0], "pair_id": "garbled", "context_b": "Garbled text. It is old."})
    with ScriptedServer(brain) as srv:
        settings = LLMSettings(endpoints={"judge-1": EndpointConfig(base_url=srv.base_url, model="judge-1",
                                                                      max_retries=0)}, progress=False)
        sent = []
        for _ in range(2):
            with LLMRunner(settings, tmp_path / "cache") as llm:
                judge = JudgeRunner(llm)
                dec = compare_variants(judge, "judge-1", "context_relevance", pairs, variants=("decomposition",),
                                       rounds=10)["decomposition"]
            sent.append(len(srv.log))
            assert [it["query_id"] for it in dec.items] == ["p0", "p1", "p2"], dec.items
            assert dec.counts["judge_failed"] == 1 and dec.counts["judge_no_answer"] == 0
            assert [(f.stage, f.item_id, f.reason) for f in judge.unusable] == [
                ("eval.ragas.context", "garbled:b", "invalid_json")]
        assert sent[1] == sent[0]  # the second comparison asked nothing


def test_a_misaligned_support_reply_is_re_asked_not_taken_as_a_verdict(tmp_path):
    """A support reply with another number of lists than sentences fails the structured call's validation
    (reason ``misaligned``): the repair re-ask gets a second chance, and a reply still misaligned after it is
    unjudged (None), cached as unreadable. Before: it was cached as a success and scored as unsupported."""
    from babelrag.evaluators.judges import sentence_support

    def judge(body):
        user = body["messages"][-1]["content"]
        if "Sentences:" in user:  # first ask: one list for two sentences
            return {"support": [["p1"]]}
        fixed = "Fixed" in body["messages"][0]["content"] + body["messages"][1]["content"]
        return {"support": [["p1"], []]} if fixed and "could not be used" in user else {"support": []}

    record = {"query_id": "r1", "response": "Berlin is the capital. Bonn was before.",
              "passages": {"p1": "Berlin is the capital of Germany."}}
    with ScriptedServer(judge) as srv:
        settings = LLMSettings(endpoints={"judge-1": EndpointConfig(base_url=srv.base_url, model="judge-1",
                                                                      max_retries=0)}, progress=False)
        with LLMRunner(settings, tmp_path / "cache") as llm:
            # the repair re-ask answers with one list per sentence: usable
            assert sentence_support(llm, "judge-1", [{**record, "passages": {"p1": "Fixed: Berlin is the capital."}}]
                                    ) == [[["p1"], []]]
            assert sentence_support(llm, "judge-1", [record]) == [None]  # still misaligned after the repair
            first = len(srv.log)
            res = llm.map_structured(endpoint="judge-1", prompt=prompt("garage_support"), schema=Support,
                                     stage="s", items=[{"passages": "[p1] Berlin is the capital of Germany.",
                                                        "sentences": "1. Berlin is the capital.\n2. Bonn was before."}],
                                     contexts=[{"sentences": 2}])
        assert len(srv.log) == first  # the final unreadable outcome comes from the cache
    assert not res[0].ok and res[0].reason == "misaligned" and res[0].cached
    assert "0 lists for 2 numbered sentences" in res[0].error  # the repair reply's
