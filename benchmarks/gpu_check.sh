#!/usr/bin/env bash
# The GPU path on a machine with CUDA (not run in CI: no GPU there), estimated 10 to 20 minutes on one H100 (not run yet):
# 1. tokens/s of the local engines, CPU (llama.cpp; transformers batched) vs CUDA (transformers batched),
#    same SmolLM2-135M weights, `name: value` lines (benchmarks/generate_backends.py);
# 2. one SecPE run at the paper's operating point (L = 6, T = 5, temperature 1.2, N_syn 1,000, K 50, r/p 10,
#    1 seed) on the movie reviews through the platform's stages, generation and the encoder on CUDA
#    (generate.engine/device auto), timed.
# Usage: bash benchmarks/gpu_check.sh [N_SYN] [K]   (from the repository root, after `make setup`)
set -euo pipefail
export PYTHONPATH="$PWD/libs${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
PY=${PY:-.venv/bin/python}
N_SYN=${1:-1000}
K=${2:-50}  # K from benchmarks/secpe_noise_per_centre.py: per-direction centre noise 2 sigma K / N_pub ~ 0.09 at r/p 10
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print('gpu:', torch.cuda.get_device_name(0))"
echo "== CPU, one thread"
"$PY" benchmarks/generate_backends.py --device cpu --texts 32 --batch-sizes 1,8,32
echo "== CUDA (transformers), llama.cpp on CPU for the ratio"
"$PY" benchmarks/generate_backends.py --device cuda --texts 256 --batch-sizes 8,32,128,256
echo "== SecPE at the operating point"
start=$(date +%s)
"$PY" benchmarks/secpe_vs_augpe.py --n-syn "$N_SYN" --variations 6 --rounds 5 --clusters "$K" --r-over-p 10 \
    --seeds 0 --methods secpe --no-seed-baselines --temperature 1.2 --generate-batch 256
echo "secpe_operating_point_wall_s: $(( $(date +%s) - start ))"
