"""Annotation projects are a registry: adding a project type is one module (issue 23 item 5, issue 24).

A tiny project type (tests/helpers/tiny_project.py) is declared the documented way and then works
everywhere a built-in one does: config, record building with suggestion modes, input checks, Argilla
settings, the CLI's `all`. Pushing it to a real server is in test_annotate_argilla.py.
"""
from __future__ import annotations

import pytest

from babelrag.annotate import input_checks, projects, registry
from babelrag.annotate.settings import AnnotateSettings
from babelrag.errors import ConfigError

TINY = "tests.helpers.tiny_project:ClaimCheck"
ROWS = [{"id": "c1", "claim": "Lisbon hosted 101 delegates.", "source": "101 delegates came to Lisbon.",
         "model_says": "yes"},
        {"id": "c2", "claim": "Porto hosted 900.", "source": "51 delegates came to Porto.", "model_says": "no"}]


@pytest.fixture
def tiny():
    registry.declare("claim_check", TINY)
    yield registry.get("claim_check")
    registry.forget("claim_check")  # leave the registry as other tests expect it
    projects.guideline.cache_clear()


def test_built_in_projects_are_all_declared_and_each_is_one_registered_module():
    assert registry.names() == ["qa_verification", "translation", "grounding", "forced_choice", "answer_judgement"]
    for name in registry.names():
        pt = registry.get(name)
        assert pt.name == pt.spec.name == name and type(pt).__module__ == f"babelrag.annotate.project_types.{name}"
        assert projects.guideline(name).id == name
    with pytest.raises(ConfigError, match="unknown annotation project 'nope'; known: qa_verification"):
        registry.get("nope")
    with pytest.raises(ValueError, match=r"annotate.projects: unknown project\(s\) \['nope'\]"):
        AnnotateSettings.model_validate({"projects": {"nope": {}}})


def test_a_tiny_project_added_the_documented_way_works_like_a_built_in_one(tiny):
    from babelrag.annotate.cli import _projects  # `all` in pull/status walks the registry

    assert "claim_check" in registry.names() and _projects("all")[-1] == "claim_check"
    settings = AnnotateSettings.model_validate({"projects": {"claim_check": {"suggestions": "show"}}})
    recs = projects.build_records("claim_check", ROWS, settings)
    assert [r.suggestions for r in recs] == [[], []]  # "show": a hint, not an Argilla suggestion
    assert recs[0].fields["hints"] == "Does the source support the claim? — *Yes* (tiny-model)"
    pre = projects.build_records("claim_check", ROWS, AnnotateSettings.model_validate(
        {"projects": {"claim_check": {"suggestions": "preselect"}}}))
    assert [s.value for r in pre for s in r.suggestions] == ["yes", "no"] and "hints" not in pre[0].fields
    assert input_checks.check_input(recs, tiny.spec) == []
    bad = projects.build_records("claim_check", [{**ROWS[0], "claim": " "}], settings)
    assert [str(p) for p in input_checks.check_input(bad, tiny.spec)] == [
        "record c1: field claim: empty, but annotators need it (required field)"]
    assert projects.guidelines_text("claim_check").endswith("_Guideline claim_check, version 1._")
    with pytest.raises(ConfigError, match="already declared"):
        registry.declare("claim_check", "elsewhere:Other")
