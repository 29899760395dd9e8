"""OpenAI-compatible ``/chat/completions`` backend, run on the driver's thread pool.

Requests are batched (``n`` completions per request, ``generate.openai.n_per_request``), at most
``max_concurrency`` are in flight, and 429 / 5xx / timeouts / connection errors are retried with
exponential backoff (``Retry-After`` honoured). A 401/403 stops at once with an error naming the
environment variable that holds the key. The key is read from that variable only; errors and logs
carry status codes and counts, never prompt or response text.
"""
from __future__ import annotations

import itertools
import logging
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import httpx

from privtext.errors import PrivtextError
from privtext.generate.base import Progress, clean
from privtext.generate.settings import GenerateSettings

log = logging.getLogger(__name__)
MAX_DELAY_S = 60.0


class EndpointError(PrivtextError, RuntimeError):
    """The endpoint failed for good (after retries, or on a non-retryable status)."""


class EndpointAuthError(EndpointError):
    """401/403: the key is missing, wrong or not allowed."""


class EndpointBackend:
    def __init__(self, settings: GenerateSettings):
        self.settings = settings
        self.config = settings.openai
        self.url = self.config.base_url.rstrip("/") + "/chat/completions"
        self._client = httpx.Client(timeout=self.config.timeout_s)

    def complete(self, prompts: Sequence[str], k: int, seed: int) -> list[list[str]]:
        results: list[list[str]] = [[] for _ in prompts]
        seeds = itertools.count(seed)  # distinct per request: equal seeds would give equal samples
        progress = Progress(len(prompts) * k, "generate (endpoint)")
        pool = ThreadPoolExecutor(max_workers=self.config.max_concurrency)
        try:
            while True:  # a server may return fewer choices than asked: ask again for the rest
                jobs = [(i, min(self.config.n_per_request, k - done))
                        for i in range(len(prompts))
                        for done in range(len(results[i]), k, self.config.n_per_request)]
                if not jobs:
                    return results
                futures = [pool.submit(self._request, prompts[i], n, next(seeds)) for i, n in jobs]
                added = 0
                for (i, _), future in zip(jobs, futures):
                    texts = future.result()[: k - len(results[i])]
                    results[i].extend(texts)
                    added += len(texts)
                    progress.update(len(texts))
                if added == 0:
                    raise EndpointError(f"{self.url} returned no choices")
        finally:
            pool.shutdown(cancel_futures=True)  # after a failure, queued requests are dropped
            progress.close()

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.config.api_key_env, "")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _request(self, prompt: str, n: int, seed: int) -> list[str]:
        body = {
            "model": self.config.model,
            "messages": [{"role": "user", "content": prompt}],
            "temperature": self.settings.temperature,
            "top_p": self.settings.top_p,
            "max_tokens": self.settings.max_new_tokens,
            "n": n,
            "seed": seed,
        }
        problem = ""
        for attempt in range(self.config.max_retries + 1):
            retry_after = None
            try:
                response = self._client.post(self.url, json=body, headers=self._headers())
            except httpx.TransportError as error:  # timeouts, refused / reset connections
                problem = type(error).__name__
            else:
                status = response.status_code
                if status in (401, 403):
                    unset = "" if os.environ.get(self.config.api_key_env) else " (it is not set)"
                    raise EndpointAuthError(
                        f"{self.url} refused the request with HTTP {status}: put a valid API key in the "
                        f"environment variable {self.config.api_key_env}{unset} "
                        f"(generate.openai.api_key_env)")
                if status == 429 or status >= 500:
                    problem = f"HTTP {status}"
                    retry_after = _seconds(response.headers.get("retry-after"))
                elif status >= 400:
                    raise EndpointError(f"{self.url} answered HTTP {status} (not retried)")
                else:
                    return [clean(choice["message"]["content"] or "") for choice in response.json()["choices"]]
            if attempt == self.config.max_retries:
                break
            delay = retry_after if retry_after is not None else self.config.backoff_s * 2 ** attempt
            delay = min(MAX_DELAY_S, delay * (1 + 0.1 * random.random()))
            log.warning("%s: %s, retry %d/%d in %.2fs", self.url, problem, attempt + 1,
                        self.config.max_retries, delay)
            time.sleep(delay)
        raise EndpointError(f"{self.url} failed after {self.config.max_retries + 1} attempts: {problem}")


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to the exponential schedule
        return None
