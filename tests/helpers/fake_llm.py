"""A loopback OpenAI-compatible chat server: the test double for LLM endpoints in tests and benchmarks.

It serves ``POST /v1/chat/completions`` on 127.0.0.1 (a free port) from a background thread
and answers with whatever a *responder* function returns for the request, so a test can
script good answers, malformed answers, rate limits or slow replies::

    with FakeLLMServer(lambda request: '["A claim."]') as server:
        config = server.config(timeout=0.5)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pipeline.llm import LLMConfig


@dataclass
class FakeReply:
    """A scripted HTTP reply: chat ``content`` (status 200) or an error ``status``."""

    content: str = ""
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Responder = Callable[[dict], "str | FakeReply"]


def last_user_message(request: dict) -> str:
    """The text of the last user message of a chat-completions request body."""
    return next(m["content"] for m in reversed(request["messages"]) if m["role"] == "user")


def _completion_body(content: str, model: str) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class FakeLLMServer:
    """Context manager running the loopback server.

    ``requests`` records every request body, ``authorizations`` the Authorization header of
    each (None when absent), ``handling_seconds`` how long each took to answer and
    ``max_in_flight`` the most requests handled at the same time.
    """

    def __init__(self, responder: Responder, delay: float = 0.0):
        self.responder = responder
        self.delay = delay
        self.requests: list[dict] = []
        self.authorizations: list[str | None] = []
        self.handling_seconds: list[float] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False  # don't wait for handlers a client gave up on
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def config(self, model: str = "fake-model", **fields: object) -> LLMConfig:
        """An LLMConfig pointing at this server; ``fields`` set timeout, retries, concurrency."""
        return LLMConfig(base_url=self.base_url, model=model, **fields)

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _track(self, change: int) -> None:
        with self._lock:
            self._in_flight += change
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _reply_for(self, request: dict) -> FakeReply:
        with self._lock:
            self.requests.append(request)
        reply = self.responder(request)
        return reply if isinstance(reply, FakeReply) else FakeReply(content=reply)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else delayed ACKs add ~40 ms per keep-alive call

            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                with server._lock:
                    server.authorizations.append(self.headers.get("Authorization"))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                started = time.perf_counter()
                server._track(+1)
                try:
                    reply = server._reply_for(request)
                    time.sleep(server.delay + reply.delay)
                finally:
                    server._track(-1)
                    with server._lock:
                        server.handling_seconds.append(time.perf_counter() - started)
                if reply.status == 200:
                    body = _completion_body(reply.content, request.get("model", "fake"))
                else:
                    body = {"error": {"message": reply.content or "scripted error", "type": "fake"}}
                self._send(reply.status, body, reply.headers)

            def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left; nothing to tell it

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

        return Handler


def well_behaved_responder(request: dict) -> str:
    """Answer the pipeline's own prompts in the requested format (for tests and benchmarks).

    A decomposition prompt gets its sentence back as the decontextualised sentence and as the
    only atomic fact; a claim-category prompt gets ``factual``.
    """
    prompt = last_user_message(request)
    if prompt.rstrip().endswith("Label:"):
        return "factual"
    sentence = prompt.rstrip("\n").rsplit("The sentence is: ", 1)[-1]
    facts = json.dumps([sentence])
    return f"Decontextualised sentence: {sentence}\nAtomic facts for this sentence are: {facts}"
