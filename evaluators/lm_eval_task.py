"""``release export --format lm-eval``: an lm-evaluation-harness task folder for a release.

One YAML per config (task ``babelrag_<release>_<config>``, tagged ``babelrag_<release>``) that loads the
config with ``datasets`` from the release folder (``dataset_path``: its absolute path; replace it with the
Hub id after ``release push``) and one ``utils.py`` with the prompt and the metrics, so that::

    lm_eval --model local-chat-completions --model_args model=NAME,base_url=URL/v1/chat/completions \\
            --apply_chat_template --include_path DIR --tasks babelrag_<release>

scores a model behind any OpenAI-compatible chat endpoint with babelrag's citation prompt (the same text,
document order and labels ``evaluate run`` uses) and stand-alone metrics (token F1, citation precision and
recall). Judge-based metrics (XRAG's panel, GaRAGe, MIRAGE) stay in ``evaluate run``.

It lives in evaluators because it renders evaluators' answer prompt (``answers.answer_prompt``); the release
folder declares the format by name in ``release/export_formats.py`` and imports nothing from here.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from babelrag.evaluators.answers import answer_prompt
from babelrag.records import Instance
from babelrag.release.export_formats import FORMATS, ExportFormat, ReleaseRef

_TEMPLATE = Path(__file__).with_name("templates") / "lm_eval_utils.py.txt"
MAX_GEN_TOKS = 256


def task_name(release: str, config: str = "") -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", f"{release}_{config}".lower()).strip("_")
    return f"babelrag_{slug}"


@FORMATS.register
class LmEvalExport(ExportFormat):
    name = "lm-eval"
    description = "lm-evaluation-harness task folder: a YAML per config plus utils.py (prompt and metrics)"

    def cannot_hold(self, instances: Sequence[Instance]) -> Optional[str]:
        if not any(i.documents for i in instances):
            return "no documents to show (the task's prompt answers from documents)"
        return None

    def config_files(self, config: str, by_split: dict[str, list[Instance]], release: ReleaseRef) -> dict[str, str]:
        import yaml

        split = "test" if "test" in by_split else sorted(by_split)[0]
        task = {
            "task": task_name(release.name, config),
            "tag": [task_name(release.name)],
            "dataset_path": str(release.folder),
            "dataset_name": config,
            "test_split": split,
            "output_type": "generate_until",
            "doc_to_text": "!function utils.doc_to_text",
            "doc_to_target": "!function utils.doc_to_target",
            "process_results": "!function utils.process_results",
            "generation_kwargs": {"until": [], "max_gen_toks": MAX_GEN_TOKS, "do_sample": False,
                                  "temperature": 0.0},
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True}
                            for m in ("token_f1", "citation_precision", "citation_recall")],
            "metadata": {"version": 1.0, "babelrag_release": release.name, "split": split},
        }
        text = yaml.safe_dump(task, sort_keys=False, allow_unicode=True, width=1000)
        # lm-eval reads "!function" as a YAML tag, not a string
        text = re.sub(r"'(!function [\w.]+)'", r"\1", text)
        return {f"{config}.yaml": text}

    def shared_files(self, configs: Sequence[str], release: ReleaseRef) -> dict[str, str]:
        p = answer_prompt("citations", release.protocol)
        system = p.system or ""
        if not release.protocol.numbered:
            label = release.protocol.label
            system = system.replace("{cite_example}", f"[{label(1)}] or [{label(2)}][{label(3)}]")
        utils = _TEMPLATE.read_text(encoding="utf-8").format(
            release_name=release.name, prompt_id=p.id, prompt_version=p.version, order=release.protocol.document_order,
            seed=release.seed, label=release.protocol.citation_label, system=system, user=p.user)
        return {"utils.py": utils}
