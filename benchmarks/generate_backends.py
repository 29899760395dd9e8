"""Local generator engines side by side: llama.cpp vs transformers' GGUF loading of the same
SmolLM2-135M-Instruct Q4_1 file, on the same prompts (RANDOM_API for 2 labels), same sampling settings.

Prints ``name: value`` lines: model load time, texts/s and generated tokens/s per engine, perplexity
texts/s, and the llama.cpp / transformers ratios. Engines that are not installed are skipped.
Usage: python benchmarks/generate_backends.py [--texts 8] [--max-new-tokens 32] [--threads 1]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.generate import GenerateSettings, get_generator, perplexity  # noqa: E402
from privtext.generate import backend_for  # noqa: E402

ENGINES = {"llama_cpp": "llama_cpp", "transformers": "gguf"}  # engine -> module it needs
LABELS = ("billing", "delivery")
PPL_TEXTS = ["The package arrived damaged and two items were missing.",
             "I can't log in since the update, please reset my password."] * 4


def count_tokens(backend, texts: list[str]) -> int:
    if hasattr(backend, "llm"):
        return sum(len(backend.llm.tokenize(t.encode(), add_bos=False)) for t in texts)
    return sum(len(backend.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)


def measure(engine: str, args) -> dict[str, float]:
    settings = GenerateSettings(engine=engine, max_new_tokens=args.max_new_tokens, batch_size=args.texts,
                                threads=args.threads, temperature=1.0)
    start = time.perf_counter()
    backend = backend_for(settings)
    load_s = time.perf_counter() - start
    generator = get_generator(settings, "default")
    generator.random(1, LABELS[0], seed=0)  # warm-up
    start = time.perf_counter()
    texts = [t for label in LABELS for t in generator.random(args.texts // len(LABELS), label, seed=1)]
    gen_s = time.perf_counter() - start
    start = time.perf_counter()
    perplexity(PPL_TEXTS, settings)
    ppl_s = time.perf_counter() - start
    return {"load_s": load_s, "texts_per_s": len(texts) / gen_s,
            "tokens_per_s": count_tokens(backend, texts) / gen_s, "ppl_texts_per_s": len(PPL_TEXTS) / ppl_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)  # 2+ threads spin (OpenMP) on a busy CPU
    args = parser.parse_args()
    print(f"texts: {args.texts}\nmax_new_tokens: {args.max_new_tokens}\nthreads: {args.threads}")
    results = {}
    for engine, module in ENGINES.items():
        if importlib.util.find_spec(module) is None:
            print(f"{engine}: not installed")
            continue
        results[engine] = measure(engine, args)
        for key, value in results[engine].items():
            print(f"{engine}_{key}: {value:.3f}")
    if len(results) == 2:
        for key in ("texts_per_s", "tokens_per_s", "ppl_texts_per_s"):
            print(f"ratio_llama_cpp_over_transformers_{key}: "
                  f"{results['llama_cpp'][key] / results['transformers'][key]:.2f}")
        print(f"ratio_transformers_over_llama_cpp_load_s: "
              f"{results['transformers']['load_s'] / results['llama_cpp']['load_s']:.1f}")


if __name__ == "__main__":
    main()
