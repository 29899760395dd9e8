"""LLM generators for Aug-PE / SecPE (RANDOM_API, VARIATION_API) and the local LM's perplexity.

``get_generator(settings.generate, dataset)`` -> ``Generator`` with ``random(n, label, seed=)`` and
``variation(texts, L, label=, seed=)``; ``perplexity(texts, settings.generate)`` scores texts under the
local model whatever the generation backend.
"""
from __future__ import annotations

from typing import Sequence

from privtext.generate.base import Generator, backend_for, get_generator
from privtext.generate.settings import GenerateSettings

__all__ = ["GenerateSettings", "Generator", "get_generator", "perplexity"]


def perplexity(texts: Sequence[str], settings: GenerateSettings) -> list[float]:
    """Per-text perplexity exp(mean token NLL) under the local LM (the configured engine), batched;
    the first token is conditioned on the model's BOS token. NaN for an empty text."""
    local = settings if settings.backend == "local" else settings.model_copy(update={"backend": "local"})
    return backend_for(local).perplexity(list(texts))
