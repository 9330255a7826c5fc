"""Answer generation: every model answers every instance with the paper's prompt styles.

Styles: ``articles``, ``citations`` (IEEE ``[n]``), ``closed-book``. Documents are shown in an order
shuffled per instance by ``seed`` (so supporting articles are not always first), numbered from 1; the
record keeps that order so citation ids can be mapped back. Calls go through the LLM layer, whose disk
cache makes a re-run resume for free. Answers are stored with the endpoint and served model name,
sampling parameters, prompt id/version and dataset version. A failed generation (after the LLM layer's
retries) is kept with ``ok=False``: it measures the endpoint, not the model, so metrics leave it out.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from babelrag.atomic import atomic_write_bytes
from babelrag.errors import InputError
from babelrag.evaluators.judges import prompt
from babelrag.evaluators.settings import PromptStyle
from babelrag.llm.prompts import Prompt
from babelrag.records import AnswerRecord, Document, Instance
from babelrag.excerpt import excerpt
from babelrag.release.protocol import OURS, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from babelrag.llm.client import LLMRunner

_PROMPT_FILE = {"articles": "answer_articles", "citations": "answer_citations", "closed-book": "answer_closed_book"}
_KEYED_PROMPT = "answer_citations_keys"  # citations by published keys ([cite_N], see release/protocol.py)
PROMPTS = (*_PROMPT_FILE.values(), _KEYED_PROMPT)  # the prompt files answer generation owns


def answer_prompt(style: PromptStyle, protocol: Protocol = OURS) -> Prompt:
    """The prompt answers are generated with: per style, and for citations by published keys (``[cite_N]``)
    when the protocol does not number documents. ``release export --format lm-eval`` ships the same text."""
    if style not in _PROMPT_FILE:
        raise InputError(f"prompt style {style!r} is not one of {sorted(_PROMPT_FILE)}")
    return prompt(_KEYED_PROMPT if style == "citations" and not protocol.numbered else _PROMPT_FILE[style])


def document_order(inst: Instance, seed: int, protocol: Protocol = OURS) -> list[Document]:
    """The instance's documents in the order shown: ours are shuffled by a seed and the instance id only;
    an external benchmark's keep their published order (``release/protocol.py``)."""
    return protocol.order(inst.documents, inst.id, seed)


def render_documents(docs: Sequence[Document], max_chars: Optional[int] = None, protocol: Protocol = OURS) -> str:
    return "\n\n".join(f"[{protocol.label(k)}] {d.title}\n{excerpt(d.text, max_chars)}".strip()
                       for k, d in enumerate(docs, start=1))


def require_endpoints(runner: "LLMRunner", names: Sequence[str], role: str) -> None:
    """Models and judges must be configured by name (``LLMSettings.require``)."""
    runner.settings.require(list(names), role)


def generate_answers(
    runner: "LLMRunner",
    instances: Sequence[Instance],
    models: Sequence[str],
    style: PromptStyle = "citations",
    seed: int = 0,
    dataset_version: str = "",
    sampling: Mapping[str, Any] | None = None,
    max_doc_chars: Optional[int] = None,
    protocol: Protocol = OURS,
) -> list[AnswerRecord]:
    """Answers of every model endpoint on every instance (one batched call per model). ``max_doc_chars``
    cuts each document shown (for small context windows); the judges then see the same cut text.
    ``protocol``: document order and citation labels (an external benchmark's published ones)."""
    p = answer_prompt(style, protocol)  # an unknown style fails before anything else
    if not instances:
        raise InputError("no instances to evaluate")
    require_endpoints(runner, models, "model")
    keyed = style == "citations" and not protocol.numbered
    orders = [document_order(inst, seed, protocol) if style != "closed-book" else [] for inst in instances]
    items = [{"question": inst.question, "documents": render_documents(docs, max_doc_chars, protocol)}
             for inst, docs in zip(instances, orders)]
    if keyed:
        example = f"[{protocol.label(1)}] or [{protocol.label(2)}][{protocol.label(3)}]"
        items = [{**it, "cite_example": example} for it in items]
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
                language=inst.language, model=model, question=inst.question, gold_answer=inst.answer,
                served_model=res.model or endpoint.model,
                answer=(res.value or "").strip() if res.ok else "", ok=res.ok, error=res.error or "",
                doc_order=[d.article_id for d in docs], doc_chars=max_doc_chars or 0,
                relevant=[k for k, d in enumerate(docs, start=1) if d.role == "supporting"],
                prompt_id=p.id, prompt_version=p.version, style=style,
                sampling=params, dataset_version=dataset_version,
                cached=res.cached,
            ))
    return out


def write_answers(path: str | Path, answers: Iterable[AnswerRecord]) -> Path:
    path = Path(path)
    atomic_write_bytes(path, "".join(a.model_dump_json() + "\n" for a in answers).encode())
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


def passages_shown(inst: Instance, answer: AnswerRecord) -> dict[str, str]:
    """Documents as shown to the model, keyed by their 1-based position (what citations refer to)."""
    docs = {d.article_id: d for d in inst.documents}
    return {str(k): f"{docs[aid].title}: {excerpt(docs[aid].text, answer.doc_chars)}"
            for k, aid in enumerate(answer.doc_order, start=1)}
