"""OpenAI-compatible chat client for the pipeline's LLM backends.

Any server speaking the OpenAI chat-completions API works (OpenAI, vLLM, Ollama, llama.cpp
server...). Retries with exponential backoff on 408/409/429/5xx, connection errors and
timeouts are the ``openai`` client's own (``max_retries``, ``timeout``), so they honour
``Retry-After`` headers and are not re-implemented here. What this module adds: configuration
from the environment or a project's settings, and running many independent calls at once with a
bounded thread pool, because the pipeline issues one call per sentence or claim and latency,
not throughput, dominates.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache

# Which backend produced a suggestion (recorded in every item's provenance).
OFFLINE = "offline"
LLM = "llm"

logger = logging.getLogger(__name__)

Message = Mapping[str, str]

# Local servers (vLLM, Ollama, llama.cpp) ignore the key, but the client insists on one.
_PLACEHOLDER_API_KEY = "not-needed"


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call the LLM. Unconfigured (no base_url or model) means offline."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # kept out of logs and reprs
    model: str | None = None
    timeout: float = 60.0
    """Seconds per HTTP attempt."""
    max_retries: int = 3
    """Retries after the first attempt, with the openai client's backoff."""
    concurrency: int = 4
    """At most this many calls in flight per batch."""
    temperature: float = 0.0

    @property
    def is_configured(self) -> bool:
        return bool(self.base_url and self.model)

    @classmethod
    def from_env(
        cls, overrides: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None
    ) -> LLMConfig:
        """Read ``LLM_BASE_URL``, ``LLM_API_KEY``, ``LLM_MODEL`` (and optionally ``LLM_TIMEOUT``,
        ``LLM_MAX_RETRIES``, ``LLM_CONCURRENCY``), then apply ``overrides`` (e.g. a project's
        pipeline settings; ``None`` values are ignored). Check ``is_configured`` before use.

        ``LLM_API_KEY`` belongs to ``LLM_BASE_URL``: when the overrides point at another base URL
        without a key of their own, the configuration has no key, so the server's key never
        reaches an endpoint someone else chose.
        """
        env = os.environ if environ is None else environ
        values: dict[str, object] = {
            "base_url": env.get("LLM_BASE_URL") or None,
            "api_key": env.get("LLM_API_KEY") or None,
            "model": env.get("LLM_MODEL") or None,
        }
        for name, convert in (("timeout", float), ("max_retries", int), ("concurrency", int)):
            raw = env.get(f"LLM_{name.upper()}")
            if raw:
                values[name] = convert(raw)
        known = {f.name for f in fields(cls)}
        unknown = set(overrides or {}) - known
        if unknown:
            raise ValueError(f"unknown LLM settings: {sorted(unknown)}")
        overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        drop_foreign_server_key(values, overrides)
        values.update(overrides)
        return cls(**values)


def drop_foreign_server_key(server: dict, overrides: Mapping[str, object]) -> None:
    """The server's key (``server["api_key"]``) belongs to the server's base URL: when
    ``overrides`` point elsewhere without a key of their own, the key is dropped."""
    if "api_key" not in overrides and not same_base_url(
        overrides.get("base_url", server["base_url"]), server["base_url"]
    ):
        server["api_key"] = None


def same_base_url(a: object, b: object) -> bool:
    """Whether two base URLs name the same endpoint (a trailing slash makes no difference)."""
    if not a or not b:
        return not a and not b
    return str(a).strip().rstrip("/") == str(b).strip().rstrip("/")


@dataclass(kw_only=True)
class Provenance:
    """Which backend (and model) produced a suggestion, and whether it is a fallback and why.

    Keyword-only, so each kind of suggestion lists its own fields first and these after them."""

    backend: str
    model: str | None = None
    fallback: bool = False
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def usable(config: LLMConfig | None) -> bool:
    """True when the LLM backend should be used for ``config`` (else: offline backend)."""
    return config is not None and config.is_configured


@dataclass
class ChatResult:
    """Outcome of one chat call: ``text`` on success, ``error`` once retries are exhausted."""

    text: str | None
    error: str | None
    seconds: float


class LLMClient:
    """A thin, thread-safe wrapper around ``openai.OpenAI`` for one configuration."""

    def __init__(self, config: LLMConfig):
        if not config.is_configured:
            raise ValueError("LLM is not configured: set LLM_BASE_URL and LLM_MODEL")
        self.config = config
        import openai  # heavy to import: only processes that call a model load it

        from pipeline import outbound  # the guard (httpx): loaded where a client is built

        # Every request (redirects too) goes through the outbound guard: the base URL is set by
        # staff or project admins, and private addresses pass only with
        # OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS.
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key or _PLACEHOLDER_API_KEY,
            timeout=config.timeout,
            max_retries=config.max_retries,
            http_client=openai.DefaultHttpxClient(transport=outbound.GuardedTransport(outbound.service_policy)),
        )

    def check_address(self) -> None:
        """Raise ``openai.APIConnectionError`` naming the reason when the guard refuses the base
        URL, before the client would retry a refused request."""
        # httpx: loaded where a client is built, not at start-up
        import httpx2
        import openai  # loaded already by __init__

        # the guard (httpx): loaded where a client is built
        from pipeline import outbound

        try:
            outbound.check_url(str(self._client.base_url), outbound.service_policy())
        except outbound.OutboundRefused as exc:
            raise openai.APIConnectionError(
                message=f"the LLM server's address is refused: {exc.reason}",
                request=httpx2.Request("POST", str(self._client.base_url)),
            ) from None

    def chat(self, messages: Sequence[Message]) -> str:
        """One chat completion; raises ``openai.OpenAIError`` when retries are exhausted."""
        self.check_address()
        response = self._client.chat.completions.create(
            model=self.config.model,
            messages=[dict(m) for m in messages],
            temperature=self.config.temperature,
        )
        return response.choices[0].message.content or ""

    def _timed_chat(self, messages: Sequence[Message]) -> ChatResult:
        import openai  # loaded already by __init__

        started = time.perf_counter()
        try:
            text = self.chat(messages)
        except openai.OpenAIError as exc:
            logger.warning("LLM call to %s failed: %s", self.config.base_url, exc)
            return ChatResult(None, f"{type(exc).__name__}: {exc}", time.perf_counter() - started)
        return ChatResult(text, None, time.perf_counter() - started)

    def chat_many(self, conversations: Sequence[Sequence[Message]]) -> list[ChatResult]:
        """Run independent chats concurrently (at most ``config.concurrency`` at a time).

        Results come back in input order; a failed call yields a result with ``error`` set
        instead of raising, so one bad sentence does not discard the others' answers.
        """
        if not conversations:
            return []
        workers = max(1, min(self.config.concurrency, len(conversations)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="llm") as pool:
            return list(pool.map(self._timed_chat, conversations))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@lru_cache(maxsize=16)
def shared_client(config: LLMConfig) -> LLMClient:
    """One client per configuration, reused across calls and threads.

    Building an ``openai.OpenAI`` client (TLS context, connection pool) can cost more than a
    fast model call, and reusing it keeps connections alive between items in a worker.
    """
    return LLMClient(config)


def run_chats(config: LLMConfig, conversations: Sequence[Sequence[Message]]) -> list[ChatResult]:
    """``chat_many`` on the shared client for ``config``."""
    return shared_client(config).chat_many(conversations)
