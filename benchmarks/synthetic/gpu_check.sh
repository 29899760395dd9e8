#!/usr/bin/env bash
# The GPU path on a machine with CUDA (CI has none), from the repository root:
# 1. tokens/s of transformers' batched generation of the bundled SmolLM2-135M (dequantized GGUF), one CPU
#    thread vs CUDA, in one run (benchmarks/synthetic/generate_backends.py; llama.cpp's CPU figure where it is installed);
# 2. SecPE at the paper's operating point on 20 Newsgroups (L 6, T 5, temperature 1.2, N_syn 1,000, K 50,
#    700 random-word secrets: 34% of the posts private), generation and the encoder on CUDA, through the
#    algorithm layer (benchmarks/synthetic/secpe_gpu.py: the synthesize stage's steps without Spark), each run timed,
#    runs in the order of RUNS until DEADLINE seconds would be passed.
# Usage: bash benchmarks/synthetic/gpu_check.sh
#   PY (default .venv/bin/python, else python3), MODEL (a GGUF path; default: the bundled smollm2),
#   ENCODER (default: the bundled all-MiniLM-L6-v2), BUNDLE (default .gpu/data, made by
#   `secpe_gpu.py prepare` when missing: that step needs the project's venv), RUNS, DEADLINE, OUT (JSON),
#   TOKENS=0 to skip step 1, ALL_PRIVATE=1 with a BUNDLE of its own (e.g. .gpu/data-all-private) for every
#   training post private (D_pub from round 0's generated pool; K 50 then means n_k ~ 1,000 x 6 / 50 = 120). On a machine without the venv or network: benchmarks/synthetic/gpu_carry.sh packs it all.
# Measured on an H200 on 2026-11-26 (the model and encoder carried in parts): docs/products/synthetic.md.
set -euo pipefail
export PYTHONPATH="$PWD/libs${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
MODEL=${MODEL:-smollm2}
ENCODER=${ENCODER:-all-MiniLM-L6-v2}
BUNDLE=${BUNDLE:-.gpu/data}
RUNS=${RUNS:-secpe:10:0 secpe:2:0 aug_pe:2:0 secpe:10:1 secpe:10:2}
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('gpu:', torch.cuda.get_device_name(0))"
[ -f "$BUNDLE/bundle.json.gz" ] || "$PY" benchmarks/synthetic/secpe_gpu.py prepare --out "$BUNDLE" ${ALL_PRIVATE:+--all-private}
if [ "${TOKENS:-1}" != 0 ]; then
    echo "== one CPU thread (transformers batched)"
    "$PY" benchmarks/synthetic/generate_backends.py --device cpu --texts 32 --batch-sizes 32 --model "$MODEL"
    echo "== CUDA (transformers batched)"
    "$PY" benchmarks/synthetic/generate_backends.py --device cuda --texts 512 --batch-sizes 64,256,512 --model "$MODEL"
fi
echo "== SecPE at the operating point"
# shellcheck disable=SC2086
"$PY" benchmarks/synthetic/secpe_gpu.py run --bundle "$BUNDLE" --model "$MODEL" --encoder "$ENCODER" --n-syn 1000 \
    --variations 6 --rounds 5 --clusters 50 --temperature 1.2 --generate-batch 512 --runs $RUNS \
    --deadline "${DEADLINE:-330}" ${OUT:+--out "$OUT"}
