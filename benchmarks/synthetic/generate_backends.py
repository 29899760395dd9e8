"""Local generator engines side by side: llama.cpp (``xllamacpp``'s prebuilt wheel, one sequence at a
time) vs transformers' GGUF loading of the same SmolLM2-135M-Instruct Q4_1 file (batched, each
``--batch-sizes``), on the same prompts (RANDOM_API for 2 labels), same sampling settings, one thread per
engine (tokens/s per core).

Prints ``name: value`` lines: the load average before and after, per engine and batch size the model
load time, texts/s and generated tokens/s (tokens/s per core = tokens/s / threads), perplexity texts/s,
then every engine's tokens/s over llama.cpp's side by side, and the fastest engine on this device
(``privtext.generate.settings.FASTEST_ENGINE`` says which ``engine: auto`` picks). ``--device cuda``
runs transformers on the GPU (llama.cpp stays on CPU: the wheel here is CPU-only). Tokens are counted
with the GGUF's own tokenizer for every engine. Perplexity is transformers' for both engines.
Usage: python benchmarks/synthetic/generate_backends.py [--texts 32] [--max-new-tokens 32] [--threads 1]
       [--batch-sizes 1,8,32] [--device cpu] [--model smollm2]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from privtext.generate import (  # noqa: E402
    GenerateSettings,
    backend_for,  # noqa: E402
    get_generator,
    perplexity,
)

ENGINES = {"llama_cpp": "xllamacpp", "transformers": "gguf"}  # engine -> module it needs
LABELS = ("billing", "delivery")
PPL_TEXTS = ["The package arrived damaged and two items were missing.",
             "I can't log in since the update, please reset my password."] * 4


def count_tokens(model: str, texts: list[str]) -> int:
    from transformers import AutoTokenizer

    from privtext.generate.local import resolve_model_path

    path = resolve_model_path(model)
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True)
    return sum(len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)


def measure(engine: str, batch_size: int, args) -> dict[str, float]:
    settings = GenerateSettings(engine=engine, max_new_tokens=args.max_new_tokens, batch_size=batch_size,
                                threads=args.threads, temperature=1.0, model=args.model,
                                device=args.device if engine == "transformers" else "cpu")
    start = time.perf_counter()
    backend_for(settings)
    load_s = time.perf_counter() - start
    generator = get_generator(settings, "default")
    generator.random(min(batch_size, 2), LABELS[0], seed=0)  # warm-up
    start = time.perf_counter()
    texts = [t for label in LABELS for t in generator.random(args.texts // len(LABELS), label, seed=1)]
    gen_s = time.perf_counter() - start
    start = time.perf_counter()
    perplexity(PPL_TEXTS, settings)
    ppl_s = time.perf_counter() - start
    tokens_per_s = count_tokens(args.model, texts) / gen_s
    return {"load_s": load_s, "texts_per_s": len(texts) / gen_s, "tokens_per_s": tokens_per_s,
            "tokens_per_s_per_core": tokens_per_s / args.threads, "ppl_texts_per_s": len(PPL_TEXTS) / ppl_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)  # 2+ threads spin (OpenMP) on a busy CPU
    parser.add_argument("--batch-sizes", default="1,8,32", help="transformers' batch sizes (comma-separated)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="transformers' device")
    parser.add_argument("--model", default="smollm2", help="generate.model: the bundled name or a GGUF path")
    args = parser.parse_args()
    print(f"texts: {args.texts}\nmax_new_tokens: {args.max_new_tokens}\nthreads: {args.threads}\n"
          f"device: {args.device}\nloadavg_1min_before: {os.getloadavg()[0]:.2f}\ncpus: {os.cpu_count()}")
    runs = [("llama_cpp", 1)] + [("transformers", int(b)) for b in args.batch_sizes.split(",")]
    results = {}
    for engine, batch in runs:
        if importlib.util.find_spec(ENGINES[engine]) is None:
            print(f"{engine}: not installed")
            continue
        name = engine if engine == "llama_cpp" else f"transformers_b{batch}"
        results[name] = measure(engine, batch, args)
        for key, value in results[name].items():
            print(f"{name}_{key}: {value:.3f}")
    print(f"loadavg_1min_after: {os.getloadavg()[0]:.2f}")
    if "llama_cpp" in results:
        base = results["llama_cpp"]["tokens_per_s"]
        print("tokens_per_s_over_llama_cpp: " + ", ".join(
            f"{name} {r['tokens_per_s'] / base:.2f}" for name, r in results.items()))
    if results:
        print(f"fastest: {max(results, key=lambda name: results[name]['tokens_per_s'])}")


if __name__ == "__main__":
    main()
