"""LLM generators for Aug-PE / SecPE (RANDOM_API, VARIATION_API) and the local LM's perplexity.

``get_generator(settings.generate, dataset)`` -> ``Generator`` with ``random(n, label, seed=)`` and
``variation(texts, L, label=, seed=)``; ``perplexity(texts, settings.generate)`` scores texts under the
local model whatever the generation backend.
"""
from __future__ import annotations

from typing import Sequence

from privtext.generate.base import Backend, Generator
from privtext.generate.settings import GenerateSettings
from privtext.worker_cache import per_process

__all__ = ["GenerateSettings", "Generator", "backend_for", "get_generator", "perplexity"]


def backend_for(settings: GenerateSettings) -> Backend:
    """The process's backend for these settings (prompts aside), built on first use."""
    return per_process(("generator", settings.model_dump_json(exclude={"prompts", "seed"})), lambda: _build(settings))


def _build(settings: GenerateSettings) -> Backend:
    if settings.backend == "openai":
        from privtext.generate.endpoint import EndpointBackend

        return EndpointBackend(settings)
    from privtext.generate.local import local_backend

    return local_backend(settings)


def get_generator(settings: GenerateSettings, dataset: str = "default") -> Generator:
    """The generator of ``dataset``'s prompts (``generate.prompts``) on the configured backend, its
    replies capped at the prompt set's ``max_new_tokens`` where it sets one."""
    if dataset not in settings.prompts:
        raise KeyError(f"no prompts for dataset {dataset!r} in generate.prompts; configured: "
                       f"{', '.join(sorted(settings.prompts))}")
    prompts = settings.prompts[dataset]
    if prompts.max_new_tokens is not None:
        settings = settings.model_copy(update={"max_new_tokens": prompts.max_new_tokens})
    return Generator(backend_for(settings), prompts, settings.seed)


def perplexity(texts: Sequence[str], settings: GenerateSettings, max_tokens: int | None = None) -> list[float]:
    """Per-text perplexity exp(mean token NLL) under the local LM (the configured engine), batched;
    the first token is conditioned on the model's BOS token. Each text is scored on its first ``max_tokens``
    tokens (at most the context window). NaN for an empty text."""
    local = settings if settings.backend == "local" else settings.model_copy(update={"backend": "local"})
    return backend_for(local).perplexity(list(texts), max_tokens)
