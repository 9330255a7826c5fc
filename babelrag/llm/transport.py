"""HTTP transports for OpenAI-compatible endpoints: ``post(path, body) -> parsed JSON``.

``SDKTransport`` (the default, ``transport: openai``) goes through ``AsyncOpenAI.post`` of the openai
SDK with the SDK's own retries off; ``transport: openai-aiohttp`` runs the same SDK over its
``DefaultAioHttpClient`` (aiohttp carrying httpx requests; a third less client CPU per request).

``AioHTTPTransport`` (``transport: aiohttp``, opt-in) talks to the endpoint with one pooled
aiohttp session: the request is our plain JSON, the reply is parsed with ``json.loads``. It sends
what the openai SDK sends for these calls (``Authorization: Bearer <key>``, ``OpenAI-Organization`` /
``OpenAI-Project`` from the usual environment variables, the SDK's timeouts) but skips the SDK's
request builder and httpx models, which cost ~1.3 ms of CPU per request: at 64 requests in flight
that alone kept the client below 75 % of the endpoint's capacity.

Choose it for endpoints driven at high concurrency, where the SDK's CPU per request caps throughput.

Neither retries (our retry loop does). Errors: a non-2xx reply raises ``HTTPStatusError`` (status,
headers, parsed body); network errors are aiohttp's / the SDK's own; ``retry.classify`` maps both.
"""
from __future__ import annotations

import json
import os
from typing import Any, Optional


class HTTPStatusError(Exception):
    """The endpoint answered with a non-2xx status."""

    def __init__(self, status_code: int, headers: Any, body: Any, text: str) -> None:
        self.status_code = status_code
        self.headers = headers
        self.body = body  # parsed JSON when the error body was JSON, else None
        shown = body if body is not None else text[:500]
        super().__init__(f"Error code: {status_code} - {shown}")


class AioHTTPTransport:
    """One aiohttp session (keep-alive connection pool) per endpoint, created on first use."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json",
                   "Accept": "application/json", "User-Agent": "babelrag (OpenAI-compatible; aiohttp)"}
        for env, header in (("OPENAI_ORG_ID", "OpenAI-Organization"), ("OPENAI_PROJECT_ID", "OpenAI-Project")):
            if os.environ.get(env):  # as the openai SDK does
                headers[header] = os.environ[env]
        self._headers = headers
        self._session: Any = None
        self._urls: dict[str, str] = {}

    def _open(self) -> Any:
        import aiohttp

        ssl_ctx: Any = None
        if self.base_url.startswith("https://"):
            import ssl

            try:  # the SDK (httpx) verifies against certifi's bundle
                import certifi

                ssl_ctx = ssl.create_default_context(cafile=certifi.where())
            except ImportError:
                ssl_ctx = ssl.create_default_context()
        # No pool limit: the endpoint semaphore already bounds requests in flight, and every
        # finished request leaves its connection in the pool (keep-alive) for the next one.
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=30,
                                         ssl=ssl_ctx if ssl_ctx is not None else True)
        t = self.timeout_s  # the SDK's meaning: connect, pool wait and each read get timeout_s
        timeout = aiohttp.ClientTimeout(total=None, connect=t, sock_connect=t, sock_read=t)
        self._session = aiohttp.ClientSession(connector=connector, timeout=timeout, headers=self._headers)
        return self._session

    async def post(self, path: str, body: dict) -> Any:
        session = self._session or self._open()
        url = self._urls.get(path)
        if url is None:
            url = self._urls[path] = self.base_url + path
        data = json.dumps(body, ensure_ascii=False).encode()
        async with session.post(url, data=data) as resp:
            raw = await resp.read()
            status = resp.status
            if status >= 300:
                text = raw.decode("utf-8", "replace")
                try:
                    parsed: Optional[Any] = json.loads(text)
                except ValueError:
                    parsed = None
                raise HTTPStatusError(status, resp.headers, parsed, text)
        return json.loads(raw)  # ValueError on a truncated / non-JSON body: classified bad_body

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()


class SDKTransport:
    """``AsyncOpenAI.post`` (its retries off) over httpx's own transport or, with ``http="aiohttp"``,
    the SDK's ``DefaultAioHttpClient`` (httpx requests carried by aiohttp, package ``httpx-aiohttp``)."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, http: str = "httpx") -> None:
        from openai import AsyncOpenAI

        kwargs: dict[str, Any] = {}
        if http == "aiohttp":
            from openai import DefaultAioHttpClient

            kwargs["http_client"] = DefaultAioHttpClient(timeout=timeout_s)
        self._client = AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout_s, **kwargs)

    async def post(self, path: str, body: dict) -> Any:
        return await self._client.post(path, body=body, cast_to=object)

    async def close(self) -> None:
        await self._client.close()


def make_transport(kind: str, base_url: str, api_key: str, timeout_s: float) -> Any:
    """The transport for an endpoint's ``transport`` setting."""
    if kind == "aiohttp":
        return AioHTTPTransport(base_url, api_key, timeout_s)
    if kind == "openai-aiohttp":
        return SDKTransport(base_url, api_key, timeout_s, http="aiohttp")
    return SDKTransport(base_url, api_key, timeout_s)
