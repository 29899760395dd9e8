"""``torch_scope``: torch's global seed and thread count set for one block and restored after it;
``resolve_device``: a configured ``auto | cpu | cuda`` as the device to use."""
from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def torch_scope(seed: int | None = None, threads: int | None = None):
    """Seed torch's global RNGs (CPU and accelerators) and/or set its intra-op threads for the block;
    the previous RNG states and thread count are restored on exit, also on an error."""
    import torch

    previous = torch.get_num_threads()
    with torch.random.fork_rng(enabled=seed is not None):
        try:
            if threads:
                torch.set_num_threads(threads)
            if seed is not None:
                torch.manual_seed(seed)
            yield
        finally:
            if torch.get_num_threads() != previous:
                torch.set_num_threads(previous)


def resolve_device(device: str, key: str) -> str:
    """``auto``: ``cuda`` when ``torch.cuda.is_available()``, else ``cpu``; ``cuda`` without a CUDA
    device is an error naming the settings ``key``."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"{key} is 'cuda' but no CUDA device is available (allowed: auto, cpu, cuda)")
    return device
