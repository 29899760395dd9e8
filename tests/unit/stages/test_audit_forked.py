"""The audit stage trains its releases' adversaries in forked processes (``_in_forked_processes``): what each
returns, in order, is what the trainings one after the other return, and an unauditable release still refuses."""
import pytest
import torch

from privtext.ampl.audit import UnauditableError
from privtext.stages.audit import _in_forked_processes
from privtext.torch_scope import torch_scope


def _training(seed: int):
    """Like ``train_adversary``: seeds torch's global generator, then draws from it."""
    def run():
        with torch_scope(seed=seed, threads=1):
            return torch.rand(4).tolist(), torch.randn(2).tolist()
    return run


def test_forked_jobs_return_in_order_what_one_after_the_other_return():
    jobs = [_training(seed) for seed in (11, 12, 13)]
    in_sequence = _in_forked_processes(jobs, 1)
    assert len({str(out) for out in in_sequence}) == 3  # three different draws: an order mix-up would show
    assert _in_forked_processes(jobs, 2) == in_sequence


def test_an_unauditable_release_raises_in_the_parent():
    def unauditable():
        raise UnauditableError("2 held-out secret(s) whose value the adversary never saw")

    with pytest.raises(UnauditableError, match="2 held-out"):
        _in_forked_processes([_training(1), unauditable, _training(2)], 2)


def test_a_child_forked_after_the_parents_thread_pool_ran_does_not_hang():
    """GNU OpenMP deadlocks on a parallel region in a child forked after the parent's pool ran (a 2-thread
    matmul in the parent, then the same in forked children hung until killed, checked by hand): the children
    run one torch thread. In a subprocess with a time limit, so a regression fails instead of hanging."""
    import os
    import signal
    import subprocess
    import sys

    script = """
import torch
from privtext.stages.audit import _in_forked_processes
torch.set_num_threads(2)
a = torch.randn(600, 600)
(a @ a).sum()
out = _in_forked_processes([lambda: (torch.get_num_threads(), float((a @ a).sum()))] * 3, 2)
assert [n for n, _ in out] == [1, 1, 1], out
print("ok")
"""
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:  # hung: its forked children too
            os.killpg(run.pid, signal.SIGKILL)
    assert run.returncode == 0 and out.strip() == "ok", err[-2000:]
