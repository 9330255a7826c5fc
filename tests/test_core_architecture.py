"""docs/architecture.md followed once: a stage and a metric added the documented way work end to end; the
seams it describes hold (stages declare themselves, the core imports no stage package, a stage may read
only the config sections it declares)."""
import ast
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from babelrag.config import config_from_dict
from babelrag.errors import ConfigError, StageError
from babelrag.pipeline import Pipeline
from babelrag.records import Article
from babelrag.stage import StageSpec, add_stage, get_stage, remove_stage, stage_names
from babelrag.store import BuildStore
from tests.helpers.qa_fixtures import seed_stage

ROOT = Path(__file__).resolve().parents[1]
STAGE_PACKAGES = ("babelrag.construct", "babelrag.annotate", "babelrag.release", "babelrag.evaluators")
# the two commands that compose every stage into one run; everything else in babelrag/ is the core
ENTRY_POINTS = {"babelrag/cli.py", "babelrag/demo.py"}


@pytest.fixture
def shout_stage():
    from tests.helpers.tiny_stage import STAGE

    add_stage(STAGE)
    yield STAGE
    remove_stage(STAGE.name)


def test_the_core_imports_no_stage_package():
    offenders = []
    for path in sorted((ROOT / "babelrag").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ENTRY_POINTS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{rel}: {n}" for n in names if n.startswith(STAGE_PACKAGES)]
    assert offenders == []


def test_every_build_stage_is_declared_with_its_sections():
    assert stage_names() == ("ingest", "index", "pairs", "relevance", "questions", "filters", "distractors",
                             "instances")
    schema = set(type(config_from_dict({})).model_fields)
    for name in stage_names():
        spec = get_stage(name)
        assert spec.owns, f"{name} owns no config section"
        assert spec.readable_sections <= schema, f"{name} declares sections the config does not have"
        assert callable(spec.load())


def test_a_new_stage_joins_pipeline_config_and_cli(tmp_path, shout_stage):
    # the config schema takes the stage's own section (and still rejects unknown keys in it)
    cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "build")}, "shout": {"suffix": "?"}})
    assert cfg.shout.suffix == "?"
    with pytest.raises(ConfigError, match="unknown key 'shout.sufix'"):
        config_from_dict({"shout": {"sufix": "?"}})
    # the pipeline runs it in its declared place (order 15): after ingest (10), before pairs (20)
    names = stage_names()
    assert names.index("ingest") < names.index("shout") < names.index("pairs")
    seed_stage(tmp_path / "build", "ingest", [Article(id="a1", title="Port reopens", text="x", language="en",
                                                      published="2026-08-01")], Article)
    report = Pipeline(cfg).run(only=["shout"])
    assert [s.status for s in report.stages] == ["ran"]
    assert [a.title for a in BuildStore(tmp_path / "build").read("shout", Article)] == ["PORT REOPENS?"]
    # and `babelrag construct` lists it with its description
    from babelrag.cli import app

    out = CliRunner().invoke(app, ["construct", "--help"])
    assert out.exit_code == 0 and "shout" in out.output and "Upper-case every title" in out.output


def test_a_stage_reading_an_undeclared_section_fails(tmp_path, shout_stage):
    sneaky = StageSpec("sneaky", "tests.helpers.tiny_stage:run_reading_undeclared", "Article", (), ("project",))
    add_stage(sneaky)
    try:
        cfg = config_from_dict({"project": {"build_dir": str(tmp_path / "build")}})
        with pytest.raises(StageError, match="stage 'sneaky' reads config section 'filters' but does not declare it"):
            Pipeline(cfg).run(only=["sneaky"])
    finally:
        remove_stage("sneaky")


def test_a_new_metric_joins_registry_cli_and_leaderboard(tmp_path):
    import tests.helpers.tiny_metric  # noqa: F401  (registers answer_words)
    from babelrag.evaluators import registry
    from babelrag.evaluators.cli import app
    from babelrag.evaluators.execution import run_evaluation
    from babelrag.evaluators.settings import EvalSettings
    from babelrag.llm.client import LLMRunner
    from babelrag.llm.settings import EndpointConfig, LLMSettings
    from babelrag.testing.scripted_server import ScriptedServer
    from tests.test_eval_runner import _instances

    assert "answer_words" in registry.names()
    listed = CliRunner().invoke(app, ["metrics"]).output
    assert "answer_words" in listed and "number of words in the answer" in listed

    def brain(body):
        if body["model"] == "judge-a":
            return {"correct": True, "reason": "scripted"}
        return "one two three"

    with ScriptedServer(brain) as srv:
        ep = dict(base_url=srv.base_url, timeout_s=2, max_retries=1, retry_backoff_s=0.01)
        runner = LLMRunner(LLMSettings(endpoints={"m": EndpointConfig(model="served-m", **ep),
                                                  "judge-1": EndpointConfig(model="judge-a", **ep)},
                                       progress=False), tmp_path / "cache")
        paths = run_evaluation(runner, _instances()[:2], ["m"], ["judge-1"], tmp_path / "eval",
                               EvalSettings(metrics=("answer_words",), rounds=20))
    data = json.loads(paths["json"].read_text())
    assert data["leaderboard"][0]["answer_words"] == 3.0
    assert data["metrics"]["m"]["answer_words"]["counts"] == {}


@pytest.mark.parametrize("name", ["cache", "annotate", "_shared", ".partial", "run_report.json"])
def test_a_stage_cannot_take_a_build_folder_name(name):
    with pytest.raises(ConfigError, match="taken by the build folder's layout"):
        add_stage(StageSpec(name, "m:f", "Article"))
    assert name not in stage_names()


def test_only_the_store_joins_build_folder_names_to_paths():
    """The build layout (``babelrag/build_layout.py``) is spelled out in one module: no other module
    writes ``build_dir / "annotate"`` or a ``".partial"`` path itself."""
    from babelrag import build_layout

    names = sorted(build_layout.RESERVED_NAMES)
    offenders = []
    for folder in ("babelrag", "construct", "annotate", "release", "evaluators"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ("babelrag/build_layout.py",):
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) \
                        and isinstance(node.right, ast.Constant) and node.right.value in names:
                    offenders.append(f"{rel}:{node.lineno}: / {node.right.value!r}")
    assert offenders == []


def test_a_new_question_filter_is_one_registered_module(tmp_path):
    from babelrag.construct.filters import FILTER_REGISTRY
    from babelrag.records import QAItem
    from tests.helpers.qa_fixtures import corpus, qa

    FILTER_REGISTRY.register_lazy("answer_words", "tests.helpers.tiny_filter:AnswerWordsFilter")
    try:
        with pytest.raises(ConfigError, match=r"unknown or built-in filter\(s\) \['nope'\].*answer_words"):
            config_from_dict({"filters": {"extra": ["nope"]}})
        build = tmp_path / "build"
        seed_stage(build, "ingest", list(corpus().values()), Article)
        items = [qa("q1", "a1", "a2"), qa("q2", "a1", "a2").model_copy(update={"answer": "three hundred new staff"})]
        seed_stage(build, "questions", items, QAItem)
        off = {k: False for k in ("well_formed", "named_entity", "near_duplicate", "needs_both_articles",
                                  "needs_retrieval")}
        cfg = config_from_dict({"project": {"build_dir": str(build)},
                                "filters": {**off, "extra": ["answer_words"],
                                            "options": {"answer_words": {"max_words": 3}}}})
        report = Pipeline(cfg).run(only=["filters"])
        out = {q.id: q for q in BuildStore(build).read("filters", QAItem)}
        assert out["q1"].accepted and not out["q2"].accepted and out["q2"].rejected_by == "answer_words"
        verdicts = {v.filter: v for v in out["q2"].filters}
        assert (verdicts["answer_words"].status, verdicts["answer_words"].detail) == ("fail", "4 words")
        assert verdicts["verbatim"].status == "not_run"  # order 25 runs before verbatim (30): never reached
        assert report.stages[0].skipped == {"rejected:answer_words": 1}
    finally:
        FILTER_REGISTRY.forget("answer_words")
