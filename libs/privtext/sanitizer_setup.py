"""The settings' CluSanT sanitizer and its phrase encoder, built the same way wherever they are needed:
the ``sanitize`` stage (which sanitizes with it), the ``audit`` stage (which measures mPL in the metric
of its guarantee) and ``privtext tune sanitize``. Vocabularies and the static piece table are cached on
disk; candidates never depend on the data.
"""
from __future__ import annotations

from privtext.clusant.sanitizer import ClusantSanitizer, build_vocabularies
from privtext.worker_cache import per_process


def tier_function(settings):
    """The PII/PoII tier of an entity type under ``settings.pii`` (an unknown type: the stricter tier)."""
    pii = settings.pii

    def tier_of(entity_type: str) -> str:
        try:
            return pii.tier_of(entity_type)
        except KeyError:
            return "PII"  # unknown type: the stricter tier

    return tier_of


def piece_table(settings):
    """The static encoder's piece table (None for the transformer encoder): built once, cached on disk."""
    if settings.clusant.phrase_encoder != "static":
        return None
    from privtext.embed.static_phrases import piece_table as build
    from privtext.settings import resolve_uri

    return build(settings.embed, resolve_uri(settings.embed.cache_dir))


def phrase_encoder(settings, table):
    """The encoder of span values and candidates (``clusant.phrase_encoder``) and its cache-key name;
    ``table``: ``piece_table(settings)`` (a worker gets it by broadcast)."""
    if settings.clusant.phrase_encoder == "transformer":
        from privtext.embed.encoder import encode_phrases

        return (lambda phrases: encode_phrases(phrases, settings.embed)), settings.embed.model
    from privtext.embed.static_phrases import encode_static, get_tokenizer

    tokenizer = per_process(("tokenizer", settings.embed.model_dump_json()), lambda: get_tokenizer(settings.embed))
    return (lambda phrases: encode_static(phrases, table, tokenizer)), f"{settings.embed.model}+static-pieces"


def cache_dir(settings) -> str:
    from privtext.settings import resolve_uri

    return resolve_uri(settings.clusant.cache_dir)


def vocabularies(settings, encode, model_name: str) -> dict:
    """Every type's (phrases, embeddings), built once per vocabulary version and encoder (disk cache)."""
    return build_vocabularies(settings.clusant, encode, model_name, cache_dir=cache_dir(settings))


def build_sanitizer(settings):
    """(sanitizer, its phrase encoder): the settings' sanitizer as the stage builds it (``privtext tune
    sanitize`` tunes this one), with the encoder that embeds a span's value for it."""
    encode, name = phrase_encoder(settings, piece_table(settings))
    vocab = vocabularies(settings, encode, name)
    return ClusantSanitizer.from_vocabularies(settings.clusant, vocab, tier_function(settings)), encode
