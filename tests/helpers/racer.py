"""Real concurrent requests against the live server, released at the same moment: the race tests
of every versioned write (tests/races/test_races.py and the features' own)."""

import http.client
import json
import threading
from urllib.parse import urlsplit


class Racer:
    """Sends a batch of requests to the live server at the same moment."""

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port
        self.tokens: dict[str, str] = {}

    def token(self, user) -> str:
        if user.username not in self.tokens:
            from rest_framework.authtoken.models import Token

            self.tokens[user.username] = Token.objects.get_or_create(user=user)[0].key
        return self.tokens[user.username]

    def race(self, requests: list[tuple]) -> list[tuple[int, dict]]:
        """``requests``: (user, method, path, body) each, JSON with the user's token; answers in
        the same order."""
        return self.race_raw(
            [
                (
                    method,
                    path,
                    json.dumps(body).encode(),
                    {
                        "Authorization": f"Token {self.token(user)}",
                        "Content-Type": "application/json",
                    },
                )
                for user, method, path, body in requests
            ]
        )

    def race_raw(self, requests: list[tuple]) -> list[tuple[int, dict]]:
        """``requests``: (method, path, body bytes, headers) each (a multipart upload, a page's
        form post with its session cookie); answers (status, JSON or the start of the body)."""
        barrier = threading.Barrier(len(requests))
        answers: list = [None] * len(requests)

        def send(i: int) -> None:
            method, path, body, headers = requests[i]
            conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                conn.connect()
                barrier.wait(timeout=30)
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                raw = response.read()
                answers[i] = (
                    response.status,
                    json.loads(raw) if raw.startswith(b"{") else {"raw": raw[:200]},
                )
            except Exception as exc:  # reported as the answer, so the assertion shows it
                answers[i] = (None, {"error": repr(exc)})
            finally:
                conn.close()

        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers
