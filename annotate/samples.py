"""Small hand-made build records for tests, the bench and demos of the annotation projects (no server needed)."""
from __future__ import annotations



def qa_items(n: int = 4, reviewed: bool = False) -> list[dict]:
    """``QAItem`` rows as the filters stage writes them; ``reviewed``: as the qa_verification merge writes
    them (verified, with a passed ``human_review``), the input of the translation project."""
    items = []
    for i in range(1, n + 1):
        items.append({
            "id": f"qa{i}", "pair_id": f"pair{i}", "article_ids": [f"a{i}", f"b{i}"], "q_type": "comparison",
            "question": f"Which city hosted more delegates at summit {i}, Lisbon or Porto?",
            "answer": f"Lisbon hosted {100 + i} delegates, more than Porto.",
            "summaries": [f"Lisbon summit {i} drew {100 + i} delegates.", f"Porto summit {i} drew {50 + i} delegates."],
            "selected": [{"article_id": f"a{i}", "question": "How many came to Lisbon?", "answer": str(100 + i)},
                         {"article_id": f"b{i}", "question": "How many delegates came to Porto?", "answer": str(50 + i)}],
            "translations": [{"language": "de", "question": f"Welche Stadt, Lissabon oder Porto, Gipfel {i}?",
                              "answer": "Lissabon.", "model": "mt-small"}],
            "filters": [{"filter": "well_formed", "status": "pass"}],
            "provenance": {"model": "qwen-0.5b", "prompt_id": "crossdoc_qa", "prompt_version": "1"},
        })
        if reviewed:
            items[-1].update(verified=True, human_review={
                "passed": True, "votes": {"natural": "yes", "answerable": "yes", "answer_correct": "yes"},
                "annotators": [{"annotator": "ann1"}, {"annotator": "ann2"}], "dataset": "babelrag-qa-verification"})
    return items


def articles(n: int = 4) -> list[dict]:
    """The two source articles (``a<i>``, ``b<i>``) of each ``qa_items`` question; the sentence with each
    selected fact sits among sentences that do not carry it."""
    out = []
    for i in range(1, n + 1):
        out.append({"id": f"a{i}", "title": f"Lisbon hosts summit {i}", "language": "en", "published": "2024-05-01",
                    "url": f"https://news.example/lisbon-{i}",
                    "text": f"The city prepared for weeks. Lisbon summit {i} drew {100 + i} delegates from twelve "
                            f"countries. Talks focused on ocean policy.\n\nThe next meeting is planned for autumn."})
        out.append({"id": f"b{i}", "title": f"Porto summit {i}", "language": "de", "published": "2024-05-02",
                    "text": f"Der Gipfel in Porto begann am Montag. Zum Gipfel {i} kamen {50 + i} Delegierte. "
                            f"Das Wetter war gut."})
    return out


def instances(n: int = 2) -> list[dict]:
    out = []
    for i in range(1, n + 1):
        docs = [
            {"article_id": f"a{i}", "title": f"Lisbon summit {i}", "text": f"Lisbon welcomed {100 + i} delegates.",
             "language": "en", "published": "2024-05-01", "role": "supporting", "kind": "relevant"},
            {"article_id": f"b{i}", "title": f"Porto summit {i}", "text": f"Porto welcomed {50 + i} delegates.",
             "language": "en", "published": "2024-05-02", "role": "supporting", "kind": "relevant"},
            {"article_id": f"d{i}", "title": "Football results", "text": "Benfica won 2-0.", "language": "en",
             "published": "2024-04-01", "role": "distractor", "kind": "irrelevant"},
        ]
        out.append({"id": f"inst{i}", "qa_id": f"qa{i}", "setting": "mono", "language": "de",
                    "question": f"Welche Stadt hatte mehr Delegierte bei Gipfel {i}?", "answer": "Lissabon.",
                    "en_question": "Which city had more delegates?", "en_answer": "Lisbon.", "q_type": "comparison",
                    "documents": docs})
    return out


def contrastive_pairs(n: int = 6) -> list[dict]:
    """``ContrastivePair`` rows as ``construct contrastive`` writes them (the better option at either side)."""
    out = []
    for i in range(1, n + 1):
        good, bad, side = f"{100 + i} delegates came.", f"About {900 + i} people came.", "a" if i % 2 else "b"
        a, b = (good, bad) if side == "a" else (bad, good)
        out.append({"id": f"cp{i}", "kind": "faithfulness", "question": f"How many delegates came ({i})?",
                    "context": f"{100 + i} delegates came.", "option_a": a, "option_b": b, "better": side,
                    "judge_choice": side})
    return out


def model_answers(n: int = 3) -> list[dict]:
    """``AnswerRecord`` rows as ``evaluate run`` writes them to answers.jsonl (plus a judge verdict)."""
    return [{"id": f"ans{i}", "instance_id": f"inst{i}", "qa_id": f"qa{i}", "model": "m1",
             "question": f"Which city, summit {i}?",
             "gold_answer": "Lisbon.", "answer": "Lisbon" if i % 2 else "Porto", "language": "en",
             "setting": "mono", "judge_verdict": "correct" if i % 2 else "incorrect"} for i in range(1, n + 1)]
