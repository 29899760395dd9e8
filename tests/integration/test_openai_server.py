"""The ``openai`` backend against a real OpenAI-compatible server: llama.cpp's own server (prebuilt
``xllamacpp``) serving the bundled SmolLM2 GGUF on a free local port, started and killed by PID
(tests_support.LlamaServer).

Concurrency (requests in flight at once), ``n > 1`` (the client asks again for any choices missing), retries
across a crash (SIGKILL mid-run, restarted on the same port), and a synthetic refresh whose server dies for good:
it fails closed (the one charge made before any private statistic stays, charged once; nothing staged, nothing
published). Replies are capped at a few tokens."""
from __future__ import annotations

import threading
import time

import pytest

from privtext.generate.base import Generator
from privtext.generate.endpoint import EndpointBackend, EndpointError
from privtext.generate.settings import DEFAULT_PROMPTS, GenerateSettings
from tests_support import LlamaServer

MAX_NEW_TOKENS = 6


def _settings(server: LlamaServer, **openai) -> GenerateSettings:
    return GenerateSettings(backend="openai", max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, openai={
        "base_url": server.base_url, "model": "smollm2", "api_key_env": "PRIVTEXT_TEST_NO_KEY",
        "max_concurrency": 3, "n_per_request": 2, "max_retries": 6, "backoff_s": 0.25, "timeout_s": 30.0,
        **openai})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LlamaServer(tmp_path_factory.mktemp("llama-server") / "server.log") as running:
        yield running


def _words_cap(texts) -> int:
    return max(len(t.split()) for t in texts)


def test_concurrent_requests_return_every_completion_in_order(server):
    backend = EndpointBackend(_settings(server))
    generator = Generator(backend, DEFAULT_PROMPTS["default"])
    texts = ["My parcel never came.", "I was charged twice.", "The app will not log me in."]
    out = generator.variation(texts, L=2, label="delivery", seed=5)
    # 3 inputs x 2 variations at n_per_request=2: every input gets its two, in order
    assert [len(v) for v in out] == [2, 2, 2]
    flat = [t for v in out for t in v]
    assert all(t.strip() for t in flat)
    assert _words_cap(flat) <= 2 * MAX_NEW_TOKENS  # max_tokens reached the server (a word is >= 1 token)
    assert len(set(flat)) > 1  # distinct seeds per request: not one sample repeated


def test_a_crash_mid_run_is_bridged_by_retries(server):
    """SIGKILL while requests are in flight, the server back on the same port 1 s later: the run completes,
    every prompt answered once (no duplicate, none missing)."""
    backend = EndpointBackend(_settings(server, n_per_request=1))
    prompts = [f"Write one word about topic {i}." for i in range(8)]
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(out=backend.complete(prompts, 1, seed=1)))
    answered = server.answered()
    worker.start()
    while server.answered() == answered:  # mid-run: after its first answer
        time.sleep(0.02)
    assert worker.is_alive()
    server.kill()
    time.sleep(1.0)
    server.start()
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert [len(r) for r in result["out"]] == [1] * len(prompts)


def test_a_dead_server_fails_after_its_retries(server, tmp_path):
    dead = LlamaServer(tmp_path / "never.log")  # a free port nobody listens on
    backend = EndpointBackend(_settings(dead, max_retries=2, backoff_s=0.05))
    started = time.monotonic()
    with pytest.raises(EndpointError, match="failed after 3 attempts: ConnectError"):
        backend.complete(["Say hi."], 1, seed=0)
    assert time.monotonic() - started < 5  # 0.05 + 0.1 s of backoff, not a hang


def test_refresh_whose_server_dies_fails_closed(server, tmp_path, spark):
    """synthesize on the openai backend, the server killed for good: the stage raises, the ledger holds
    exactly the one charge made before generation, and no synthetic or noisy-centre row is written."""
    from conftest import make_settings
    from integration.test_synthesize import _write_corpus
    from privtext.ledger import Ledger
    from privtext.platform.context import RunContext
    from privtext.platform.tables import NOISY_CENTERS, PUBLISHED_SYNTHETIC_DOCUMENTS, STAGED_SYNTHETIC_DOCUMENTS
    from privtext.stages import synthesize

    settings = make_settings(tmp_path / "lake", generate=_settings(server, max_retries=1, backoff_s=0.05).model_dump())
    ctx = RunContext.create(settings, date="2026-01-15")
    _write_corpus(ctx)
    server.kill()
    try:
        with pytest.raises(EndpointError):
            synthesize.run(ctx, method="secpe", n_syn=2, rounds=1, clusters=4, variations=1, r_over_p=10.0)
    finally:
        server.start()  # the module's other tests keep their server
    entries = Ledger(ctx.lakehouse, settings).entries()
    assert [e["stage"] for e in entries] == ["synthesize"]
    for spec in (NOISY_CENTERS, STAGED_SYNTHETIC_DOCUMENTS, PUBLISHED_SYNTHETIC_DOCUMENTS):
        assert not ctx.lakehouse.exists(spec) or ctx.lakehouse.read(spec).count() == 0
