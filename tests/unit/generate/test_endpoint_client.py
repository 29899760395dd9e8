"""The OpenAI-compatible client against a fake /chat/completions server on 127.0.0.1 (a unit test of
the client: retries, auth errors, concurrency limit, batching; not of any model)."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from privtext.generate.base import Generator
from privtext.generate.endpoint import EndpointAuthError, EndpointBackend, EndpointError
from privtext.generate.settings import DEFAULT_PROMPTS, GenerateSettings

KEY_ENV = "PRIVTEXT_TEST_GENERATE_KEY"


class FakeServer:
    """Answers each request with ``n`` choices echoing the prompt's last word; ``script`` lists status
    codes to answer first (then 200s). Records requests and the most requests in flight at once."""

    def __init__(self, script=(), hold_s=0.0, ignore_n=False, key="secret-key"):
        self.script = list(script)
        self.hold_s, self.ignore_n, self.key = hold_s, ignore_n, key
        self.requests: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "auth": self.headers.get("Authorization")})
                    status = server.script.pop(0) if server.script else 200
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                time.sleep(server.hold_s)
                with server.lock:
                    server.in_flight -= 1
                if self.headers.get("Authorization") != f"Bearer {server.key}":
                    status = 401
                if status != 200:
                    self.send_response(status)
                    if status == 429:
                        self.send_header("Retry-After", "0")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                word = body["messages"][0]["content"].split()[-1]
                n = 1 if server.ignore_n else body["n"]
                payload = json.dumps({"choices": [{"index": i, "message": {"role": "assistant",
                                      "content": f' "{word} {i}" '}} for i in range(n)]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def backend(url, **openai) -> EndpointBackend:
    config = {"base_url": url, "model": "fake", "api_key_env": KEY_ENV, "backoff_s": 0.01,
              "timeout_s": 5.0, "max_retries": 3, **openai}
    return EndpointBackend(GenerateSettings(backend="openai", openai=config))


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "secret-key")


def test_success_batches_n_per_request_and_sends_the_key():
    with FakeServer() as server:
        out = backend(server.url, n_per_request=2).complete(["say alpha", "say beta"], 3, seed=7)
    assert out == [["alpha 0", "alpha 1", "alpha 0"], ["beta 0", "beta 1", "beta 0"]]  # cleaned, in order
    assert len(server.requests) == 4  # 2 prompts x (2 + 1)
    assert sorted(r["body"]["n"] for r in server.requests) == [1, 1, 2, 2]
    assert {r["path"] for r in server.requests} == {"/v1/chat/completions"}
    assert {r["auth"] for r in server.requests} == {"Bearer secret-key"}
    assert len({r["body"]["seed"] for r in server.requests}) == 4  # distinct seeds per request


def test_server_ignoring_n_is_asked_again_for_the_rest():
    with FakeServer(ignore_n=True) as server:
        out = backend(server.url, n_per_request=3).complete(["say gamma"], 3, seed=0)
    assert out == [["gamma 0"] * 3]
    assert len(server.requests) == 3


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retry_then_success(status):
    with FakeServer(script=[status, status]) as server:
        out = backend(server.url).complete(["say delta"], 1, seed=0)
    assert out == [["delta 0"]]
    assert len(server.requests) == 3


def test_gives_up_after_max_retries():
    with FakeServer(script=[500] * 10) as server:
        with pytest.raises(EndpointError, match="failed after 3 attempts: HTTP 500"):
            backend(server.url, max_retries=2).complete(["say eps"], 1, seed=0)
    assert len(server.requests) == 3


def test_client_error_is_not_retried():
    with FakeServer(script=[400]) as server:
        with pytest.raises(EndpointError, match="HTTP 400"):
            backend(server.url).complete(["say zeta"], 1, seed=0)
    assert len(server.requests) == 1


def test_auth_failure_names_the_env_var_and_is_not_retried(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong-key")
    with FakeServer() as server:
        with pytest.raises(EndpointAuthError, match=f"HTTP 401.*{KEY_ENV}") as info:
            backend(server.url).complete(["say eta"], 1, seed=0)
    assert "wrong-key" not in str(info.value)
    assert len(server.requests) == 1
    monkeypatch.delenv(KEY_ENV)
    with FakeServer() as server:
        with pytest.raises(EndpointAuthError, match="it is not set"):
            backend(server.url).complete(["say eta"], 1, seed=0)
    assert server.requests[0]["auth"] is None


def test_concurrency_limit_is_respected():
    with FakeServer(hold_s=0.1) as server:
        out = backend(server.url, max_concurrency=2).complete([f"say w{i}" for i in range(8)], 1, seed=0)
    assert out == [[f"w{i} 0"] for i in range(8)]
    assert server.max_in_flight == 2


def test_generator_fills_dataset_prompts_and_keeps_shapes():
    with FakeServer() as server:
        generator = Generator(backend(server.url), DEFAULT_PROMPTS["movie_reviews"])
        randoms = generator.random(2, "1", seed=3)
        variations = generator.variation(["a fine film", "dull"], 3, label="0", seed=3)
    assert randoms == ["only. 0", "only. 0"]
    assert [len(v) for v in variations] == [3, 3]
    assert variations[1][0] == "dull 0"
    prompts = [r["body"]["messages"][0]["content"] for r in server.requests]
    assert "positive movie review" in prompts[0] and "negative movie review" in prompts[-1]
    assert "Review: a fine film" in prompts[2]
