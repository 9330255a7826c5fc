"""Human verdicts calibrate the judges: judge-human agreement and human-corrected accuracy.

Input: an evaluation folder's results.json (every answer's panel verdict and each judge's vote, written by
``evaluate run``) and human verdicts on some of those answers, as (instance id, model, correct?) triples —
from a JSONL file (``read_human_verdicts``) or any other source (the Argilla answer-judgement pull builds
``HumanVerdict`` objects and calls ``calibrate``).

Output per model: agreement of each judge and of the panel with the humans (raw agreement, Cohen's kappa,
Krippendorff's alpha, on the answers both labelled), and accuracy three ways: the judge panel's (naive), the
humans' alone on the labelled answers (classical), and the prediction-powered estimate (``stats.ppi_mean``,
Angelopoulos et al. 2023), which corrects the panel's accuracy on the unlabelled answers by its measured bias
on the labelled ones. PPI is valid when the labelled answers are a random sample of the scored ones.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from babelrag.atomic import atomic_write_bytes
from babelrag.errors import InputError
from babelrag.evaluators import strict_json
from babelrag.evaluators.human_labels import read_human_verdicts as read_decisions
from babelrag.rows import iter_jsonl
from babelrag.stats import clt_mean, cohen_kappa, krippendorff_alpha, ppi_mean, raw_agreement

HUMAN_FIELDS = ("instance_id", "model", "human")
PANEL = "panel"  # the agreement row of the panel's verdict (XRAG accuracy: panel vote and right language)


@dataclass(frozen=True)
class HumanVerdict:
    """One human judgement of one model's answer to one instance (True = correct)."""

    instance_id: str
    model: str
    human: bool
    source: str = ""  # where it came from (file:line, Argilla record), for error messages


def verdicts_from_triples(triples: Sequence[tuple[str, str, bool]], source: str = "") -> list[HumanVerdict]:
    """Human verdicts from (instance id, model, correct?) triples, e.g. the answer-judgement decisions pulled
    from Argilla; ``source`` names where they came from in error messages."""
    out = []
    for k, (instance_id, model, human) in enumerate(triples):
        if not isinstance(human, bool):
            raise InputError(f"{source or 'human verdicts'} #{k}: verdict on {model!r}/{instance_id!r} must be "
                             f"true or false, got {human!r}")
        out.append(HumanVerdict(str(instance_id), str(model), human, f"{source}#{k}" if source else f"#{k}"))
    return out


@dataclass(frozen=True)
class JudgedItem:
    """One scored answer: the panel's verdict (None = no verdict) and each judge's vote."""

    instance_id: str
    model: str
    correct: Optional[bool]
    judge_votes: Mapping[str, Optional[bool]] = field(default_factory=dict)


def _agreement(pairs: Sequence[tuple[bool, bool]]) -> dict[str, Any]:
    judge = [a for a, _ in pairs]
    human = [b for _, b in pairs]
    return {"n": len(pairs), "agreement": raw_agreement(judge, human) if pairs else None,
            "cohen_kappa": cohen_kappa(judge, human) if pairs else None,
            "krippendorff_alpha": krippendorff_alpha(list(zip(judge, human))) if pairs else None}


def _mean_ci(values: Sequence[float], confidence: float) -> dict[str, Any]:
    value, low, high = clt_mean(values, confidence)
    return {"value": value if values else None, "ci_low": low if math.isfinite(low) else None,
            "ci_high": high if math.isfinite(high) else None, "n": len(values)}


def calibrate(items: Sequence[JudgedItem], verdicts: Sequence[HumanVerdict], judges: Sequence[str] = (),
              confidence: float = 0.95) -> dict[str, Any]:
    """Per model: judge-human agreement and naive / human / prediction-powered accuracy (see module doc).

    Every human verdict must name a scored answer, once: an unknown or repeated (instance, model) is an
    InputError naming its source, so a label is never silently ignored."""
    by_key = {(it.instance_id, it.model): it for it in items}
    problems = []
    human: dict[tuple[str, str], bool] = {}
    for v in verdicts:
        key = (v.instance_id, v.model)
        where = f"{v.source}: " if v.source else ""
        if key not in by_key:
            problems.append(f"{where}no scored answer of model {v.model!r} to instance {v.instance_id!r} "
                            "(calibrate against the evaluation the humans judged)")
        elif key in human:
            problems.append(f"{where}a second verdict on model {v.model!r}, instance {v.instance_id!r}; "
                            "merge the annotators' verdicts first (one per answer)")
        else:
            human[key] = bool(v.human)
    if problems:
        raise InputError(f"{len(problems)} unusable human verdict(s):\n" + "\n".join(problems[:20]))
    judges = list(judges) or sorted({j for it in items for j in it.judge_votes})
    models: dict[str, Any] = {}
    for model in sorted({it.model for it in items}):
        mine = [it for it in items if it.model == model]
        decided = [it for it in mine if it.correct is not None]
        labelled = [it for it in decided if (it.instance_id, model) in human]
        unlabelled = [it for it in decided if (it.instance_id, model) not in human]
        y = [float(human[(it.instance_id, model)]) for it in labelled]
        agreement = {PANEL: _agreement([(bool(it.correct), human[(it.instance_id, model)]) for it in labelled])}
        for judge in judges:
            agreement[judge] = _agreement([(bool(it.judge_votes[judge]), human[(it.instance_id, model)])
                                           for it in mine if (it.instance_id, model) in human
                                           and it.judge_votes.get(judge) is not None])
        ppi = ppi_mean([float(bool(it.correct)) for it in unlabelled], [float(bool(it.correct)) for it in labelled],
                       y, confidence=confidence)
        naive = [float(bool(it.correct)) for it in decided]
        models[model] = {
            "answers": len(mine), "no_verdict": len(mine) - len(decided), "human_labelled": len(labelled),
            "agreement": agreement,
            "accuracy": {
                "judge": {"value": sum(naive) / len(naive) if naive else None, "n": len(naive)},
                "human_only": _mean_ci(y, confidence),
                "prediction_powered": ppi.as_dict() if math.isfinite(ppi.value) else
                {"value": None, "labelled": len(labelled),
                 "why": "needs at least 2 human-labelled answers with a panel verdict"},
            },
        }
    return {"method": "prediction-powered inference, mean estimation (Angelopoulos et al. 2023, Science 382:669)",
            "confidence": confidence, "judges": judges, "human_verdicts": len(human), "models": models}


def judged_items(results: Mapping[str, Any], where: str = "results.json") -> list[JudgedItem]:
    """Every scored answer of an evaluation (its results.json ``metrics.<model>.xrag.items``)."""
    out = []
    for model, metrics in sorted((results.get("metrics") or {}).items()):
        xrag = metrics.get("xrag")
        if not xrag:
            continue
        for row in xrag.get("items", []):
            out.append(JudgedItem(str(row["query_id"]), model, row.get("correct"), dict(row.get("judge_votes") or {})))
    if not out:
        raise InputError(f"{where} holds no XRAG judge verdicts; calibrate an `evaluate run` output folder "
                         "(with xrag among evaluate.metrics)")
    return out


def read_human_verdicts(path: str | Path) -> list[HumanVerdict]:
    """Human verdicts from JSONL: one object per line with ``instance_id``, ``model`` and ``human`` (true =
    the answer is correct), or the decisions file ``babelrag annotate pull answer_judgement`` writes
    (``id`` = ``<model>:<instance id>``, ``human_verdict`` correct|incorrect|null; undecided rows left out).
    Every bad line is named with its number."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--human {path}: file not found; pass a JSONL file with instance_id, model, human")
    rows = list(iter_jsonl(path))
    if rows and "human_verdict" in rows[0][1]:  # the Argilla answer-judgement decisions
        decided = read_decisions(path)
        return [HumanVerdict(answer_id.split(":", 1)[1], answer_id.split(":", 1)[0], verdict, f"{path}:{answer_id}")
                for answer_id, verdict in decided.items()]
    out, problems = [], []
    for lineno, row in rows:
        missing = [k for k in HUMAN_FIELDS if k not in row]
        unknown = sorted(set(row) - set(HUMAN_FIELDS))
        if missing or unknown or not isinstance(row.get("human"), bool):
            problems.append(f"{path}:{lineno}: " + "; ".join(
                ([f"missing {missing}"] if missing else []) + ([f"unknown field(s) {unknown}"] if unknown else [])
                + ([f"human must be true or false, got {row['human']!r}"]
                   if "human" in row and not isinstance(row["human"], bool) else [])))
            continue
        out.append(HumanVerdict(str(row["instance_id"]), str(row["model"]), row["human"], f"{path}:{lineno}"))
    if problems:
        raise InputError(f"{len(problems)} invalid line(s) in {path} (each needs instance_id, model, "
                         "human: true|false):\n" + "\n".join(problems[:20]))
    if not out:
        raise InputError(f"--human {path}: no verdicts in the file")
    return out


def calibrate_folder(folder: str | Path, verdicts: Sequence[HumanVerdict], out: Optional[Path] = None
                     ) -> tuple[dict[str, Any], Path]:
    """Calibrate an ``evaluate run`` output folder; writes ``calibration.json`` there (or to ``out``)."""
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise InputError(f"{path} not found; pass the output folder of `babelrag evaluate run`")
    results = json.loads(path.read_text(encoding="utf-8"))
    report = calibrate(judged_items(results, str(path)), verdicts, judges=(results.get("run") or {})
                       .get("settings", {}).get("judges", ()))
    report["evaluation"] = {"folder": str(folder), "dataset": results.get("run", {}).get("dataset"),
                            "dataset_revision": results.get("run", {}).get("dataset_revision")}
    target = out or Path(folder) / "calibration.json"
    atomic_write_bytes(target, strict_json.dumps(report).encode())
    return report, target


def _fmt(v: Any) -> str:
    return "–" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.3f}"


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The calibration as a few lines for the terminal (calibration.json has everything)."""
    lines = []
    for model, m in report["models"].items():
        acc = m["accuracy"]
        ppi = acc["prediction_powered"]
        interval = f" [{_fmt(ppi.get('ci_low'))}, {_fmt(ppi.get('ci_high'))}]" if ppi.get("value") is not None else ""
        lines.append(f"{model}: judge accuracy {_fmt(acc['judge']['value'])} (n={acc['judge']['n']}), "
                     f"human-corrected {_fmt(ppi.get('value'))}{interval} "
                     f"from {m['human_labelled']} human verdicts")
        for who, a in m["agreement"].items():
            lines.append(f"  {who}: agreement {_fmt(a['agreement'])}, Cohen's kappa {_fmt(a['cohen_kappa'])}, "
                         f"Krippendorff's alpha {_fmt(a['krippendorff_alpha'])} (n={a['n']})")
    return lines
