"""Versioned prompt templates that live in files beside the chain that uses them.

A prompt file is YAML::

    id: questions.crossdoc
    version: "3"
    description: write a question that needs both articles
    system: |
      You write questions ...
    user: |
      Article A: {summary_a}
      Reply as JSON like {{"question": "..."}}     # literal braces are doubled (str.format)
    sampling: {temperature: 0.7}                    # optional overrides of the endpoint defaults

``id`` and ``version`` go into every output record's provenance and into the cache key, so bumping the
version after editing a template invalidates exactly the affected cache entries.
"""
from __future__ import annotations

import string
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from babelrag.errors import ConfigError, InputError

Message = dict[str, str]


class Prompt(BaseModel):
    """One chat prompt: optional system template + user template, rendered with ``str.format``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    version: str = Field(min_length=1)
    description: str = ""
    system: Optional[str] = None
    user: str
    sampling: dict[str, Any] = Field(default_factory=dict)
    source: str = ""  # file the prompt came from (set by load; used in error messages)

    @property
    def ref(self) -> str:
        """``id@version``: how records and reports name this prompt."""
        return f"{self.id}@{self.version}"

    @property
    def variables(self) -> set[str]:
        """Placeholder names used by the templates."""
        names: set[str] = set()
        for tpl in (self.system or "", self.user):
            for _, field, _, _ in string.Formatter().parse(tpl):
                if field:
                    names.add(field.split(".")[0].split("[")[0])
        return names

    @classmethod
    def load(cls, path: str | Path) -> "Prompt":
        """Read a prompt YAML file; errors name the file and the problem."""
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"prompt file {path} does not exist") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"prompt file {path} is not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"prompt file {path} must be a mapping with id, version, user (and system)")
        data["version"] = str(data.get("version", ""))
        data["source"] = str(path)
        try:
            prompt = cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"prompt file {path}: field {loc!r}: {first['msg']}") from None
        prompt.variables  # parse templates now so a bad brace fails at load time
        return prompt

    @classmethod
    def beside(cls, module_file: str | Path, name: str) -> "Prompt":
        """Load ``name`` from the folder of ``module_file`` (call with ``__file__``)."""
        return cls.load(Path(module_file).resolve().parent / name)

    def render(self, **variables: Any) -> list[Message]:
        """Fill the templates; a missing variable is an InputError naming prompt and variable."""
        missing = self.variables - set(variables)
        if missing:
            raise InputError(
                f"prompt {self.ref} ({self.source or 'inline'}) needs variable(s) "
                f"{sorted(missing)}; got {sorted(variables)}"
            )
        messages: list[Message] = []
        if self.system:
            messages.append({"role": "system", "content": self.system.format(**variables).strip()})
        messages.append({"role": "user", "content": self.user.format(**variables).strip()})
        return messages
