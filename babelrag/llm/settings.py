"""Endpoint and LLM settings: the ``llm:`` section of the main YAML config.

Endpoints are named (``generator``, ``judge-1`` ...) so a judge panel can mix providers. The API key is
never part of the config: only the *name* of the environment variable that holds it.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from babelrag.errors import ConfigError
from babelrag.run_only import output_fields, run_only

#: Name of the endpoint that stands for the embedded llama.cpp server when nothing is configured.
LOCAL_ENDPOINT = "local"


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: how API keys of common providers begin (OpenAI/Anthropic/DeepSeek, Hugging Face, GitHub, Groq, Slack,
#: AWS, Google, Stripe-style)
_KEY_PREFIXES = ("sk-", "sk_", "hf_", "ghp_", "gho_", "github_pat_", "gsk_", "xox", "AKIA", "AIza", "pk_", "rk_")


def looks_like_secret(value: str) -> bool:
    """True for a value that is probably an API key rather than the name of a variable holding one: a
    known key prefix, or a long run of mixed-case letters and digits no one would name a variable."""
    if value.startswith(_KEY_PREFIXES):
        return True
    lower, upper, digit = (any(c.islower() for c in value), any(c.isupper() for c in value),
                           any(c.isdigit() for c in value))
    return (len(value) >= 32 and lower and digit) or (len(value) >= 20 and lower and upper and digit)


def check_env_name(value: str, key: str = "api_key_env") -> None:
    """``api_key_env`` (or another ``*_env`` key) must name an environment variable. The message never repeats
    the value: a key pasted here would end up in a terminal, a log or a CI transcript."""
    if looks_like_secret(value) or not _ENV_NAME.fullmatch(value):
        raise ValueError(
            f"{key} takes the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key "
            "itself; the value given looks like a key or is not a variable name (not shown). If it was a "
            "real key, revoke it and export a new one under a variable name"
        )


class EndpointConfig(BaseModel):
    """One OpenAI-compatible endpoint (vLLM, OpenAI, Azure, Ollama, llama.cpp, ...)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    model: str
    api_key_env: Optional[str] = run_only(None)  # NAME of the env var holding the key; None = no key needed
    json_mode: bool = True  # send response_format={"type": "json_object"} for structured chains
    max_concurrency: int = run_only(8, ge=1, le=1024)
    rpm: Optional[int] = run_only(None, ge=1)  # requests per minute; None = unlimited
    tpm: Optional[int] = run_only(None, ge=1)  # tokens per minute (prompt + completion); None = unlimited
    timeout_s: float = run_only(60.0, gt=0)
    max_retries: int = run_only(6, ge=0, le=50)
    retry_backoff_s: float = run_only(0.5, ge=0)  # first backoff; doubles per attempt, full jitter
    retry_backoff_max_s: float = run_only(30.0, ge=0)
    # give the endpoint up for the run after this many failed calls in a row (connection refused or
    # dropped, timeout, 5xx): the stage's remaining items are stored as failed at once and the run stops,
    # instead of each item spending its retries (a hanging endpoint costs timeout_s per try). 0 = never.
    max_consecutive_failures: int = run_only(20, ge=0)
    # openai: the openai SDK's AsyncOpenAI (default); openai-aiohttp: the SDK over its DefaultAioHttpClient
    # (a third less client CPU per request); aiohttp: babelrag's lean client speaking the same
    # protocol with the SDK's headers and timeouts, ~4x less client CPU per request, for endpoints
    # driven at high concurrency (vLLM with 64+ requests in flight)
    transport: Literal["openai", "openai-aiohttp", "aiohttp"] = run_only("openai")
    # Who answers, for the response cache and stage fingerprints, when base_url does not say it: the
    # embedded server listens on a fresh port each run, so its URL changes while its model does not.
    # None = base_url identifies the endpoint.
    cache_namespace: Optional[str] = None
    price_per_1k_input: float = run_only(0.0, ge=0)
    price_per_1k_output: float = run_only(0.0, ge=0)
    # sampling defaults (a prompt file or a call may override them)
    temperature: Optional[float] = Field(0.0, ge=0, le=2)
    max_tokens: Optional[int] = Field(512, ge=1)
    seed: Optional[int] = 0
    top_p: Optional[float] = Field(None, gt=0, le=1)

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https:// (got {v!r})")
        return v.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _looks_like_a_name(cls, v: Optional[str]) -> Optional[str]:
        if v is not None:
            check_env_name(v)
        return v

    @property
    def identity(self) -> str:
        """What stands for the endpoint in cache keys and fingerprints (never the API key)."""
        return self.cache_namespace or self.base_url

    def fingerprint_dump(self) -> dict:
        """The settings that change what the model returns, as stage fingerprints see them: ``base_url``
        replaced by ``identity`` (a port that changes per run is not a different model),
        ``cache_namespace`` folded into it; run-only settings (limits, retries, prices, key) left out."""
        dumped = self.model_dump(mode="json", include=set(output_fields(type(self))))
        dumped["base_url"] = self.identity
        dumped.pop("cache_namespace", None)
        return dumped

    def sampling(self) -> dict:
        """Sampling defaults as request parameters (None values left out)."""
        out = {"temperature": self.temperature, "max_tokens": self.max_tokens,
               "seed": self.seed, "top_p": self.top_p}
        return {k: v for k, v in out.items() if v is not None}

    def api_key(self, endpoint_name: str = "") -> str:
        """Read the key from the environment at call time (never stored anywhere)."""
        if not self.api_key_env:
            return "not-needed"
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"llm endpoint {endpoint_name or self.base_url!r}: environment variable "
                f"{self.api_key_env} is not set; export it or change llm.endpoints.*.api_key_env"
            )
        return key


class LLMSettings(BaseModel):
    """All endpoints plus the cache location; empty ``endpoints`` means 'use the embedded model'."""

    model_config = ConfigDict(extra="forbid")

    endpoints: dict[str, EndpointConfig] = Field(default_factory=dict)
    default_endpoint: Optional[str] = None
    cache_dir: Optional[Path] = run_only(None)  # None: <workdir>/cache/llm chosen by the caller
    cache: bool = run_only(True)  # False disables the disk cache (every call goes out)
    # ask again where the cache holds a reply that stayed unusable after the repair re-ask (invalid_json,
    # schema); off: such a reply is the item's final outcome and a re-run answers it from the cache
    retry_unreadable: bool = run_only(False)
    progress: bool = run_only(True)
    # embedded llama.cpp server: `babelrag run` starts it for the run's duration when this is true (or with
    # --embedded); it then serves every chain as endpoint "local"
    embedded: bool = run_only(False)
    local_port: int = run_only(0, ge=0, le=65535)  # 0 = pick a free port
    local_n_ctx: int = Field(4096, ge=512, le=32768)
    local_max_concurrency: int = run_only(2, ge=1)
    # CPU threads for the embedded model; None = every core (llama.cpp's own default is half of them,
    # which decodes ~1.7x slower on a 2-core machine)
    local_n_threads: Optional[int] = run_only(None, ge=1)
    # hard budget in USD for the build's LLM calls, all runs together (``babelrag.llm.budget``): no call
    # starts that could take the spend past it; None = no cap. Per stage: {stage or stage prefix: USD}
    max_cost_usd: Optional[float] = run_only(None, gt=0)
    max_cost_usd_per_stage: dict[str, float] = run_only({})

    @model_validator(mode="after")
    def _embedded_alone(self) -> "LLMSettings":
        if self.embedded and self.endpoints:
            raise ValueError(f"llm.embedded starts the packaged model for every chain, but llm.endpoints names "
                             f"{sorted(self.endpoints)}: remove llm.endpoints, or set llm.embedded: false")
        return self

    @field_validator("max_cost_usd_per_stage")
    @classmethod
    def _positive_caps(cls, v: dict[str, float]) -> dict[str, float]:
        bad = {k: c for k, c in v.items() if not c > 0}
        if bad:
            raise ValueError(f"every cap must be a positive amount in USD (got {bad})")
        return v

    @model_validator(mode="after")
    def _default_exists(self) -> "LLMSettings":
        if self.default_endpoint and self.endpoints and self.default_endpoint not in self.endpoints:
            raise ValueError(
                f"default_endpoint {self.default_endpoint!r} is not one of the configured endpoints "
                f"{sorted(self.endpoints)}"
            )
        return self

    def require(self, names: list[str], role: str) -> None:
        """Models and judges are named endpoints: ``endpoint()``'s fallback to the default would otherwise
        put one model's answers under another model's name. Checked before any work."""
        known = sorted(self.endpoints)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(f"{role} endpoint(s) {unknown} are not configured under llm.endpoints (have: {known})")

    def endpoint(self, name: Optional[str] = None) -> tuple[str, EndpointConfig]:
        """Look up an endpoint by name.

        ``None`` picks ``default_endpoint`` (or the only endpoint); a name that is not configured falls
        back to ``default_endpoint`` when one is set, so a config with a single endpoint serves every
        chain (generator, judge-1, ...).
        """
        if not self.endpoints:
            raise ConfigError(
                "no LLM endpoint configured: add llm.endpoints in the config, or use the packaged "
                "model for a trial build: `babelrag run --embedded` (or llm.embedded: true)"
            )
        if name is not None and name in self.endpoints:
            return name, self.endpoints[name]
        fallback = self.default_endpoint or (next(iter(self.endpoints)) if len(self.endpoints) == 1 else None)
        if fallback is None:
            raise ConfigError(
                f"llm endpoint {name!r} is not configured (have: {sorted(self.endpoints)}); "
                "add it under llm.endpoints or set llm.default_endpoint"
            )
        return fallback, self.endpoints[fallback]
