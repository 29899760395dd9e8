"""torch_scope: seed and thread count hold inside the block only."""
import pytest
import torch

from privtext.torch_scope import torch_scope


@pytest.fixture(autouse=True)
def two_threads():
    """Two threads before each block (the session runs on one, tests/conftest.py): a block's one thread
    is then a change that must be undone."""
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(previous)


def test_seed_and_threads_are_restored_after_the_block_and_after_an_error():
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    expected = torch.rand(3)  # what the caller's RNG stream gives next
    torch.manual_seed(123)
    with torch_scope(seed=7, threads=1):
        assert torch.get_num_threads() == 1
        inside = torch.rand(3)
    assert torch.equal(torch.rand(3), expected) and torch.get_num_threads() == threads
    torch.manual_seed(7)
    assert torch.equal(torch.rand(3), inside)  # the block ran under seed 7

    torch.manual_seed(123)
    with pytest.raises(RuntimeError, match="boom"), torch_scope(seed=1, threads=1):
        raise RuntimeError("boom")
    assert torch.equal(torch.rand(3), expected) and torch.get_num_threads() == threads


def test_threads_only_leaves_the_rng_stream_alone():
    torch.manual_seed(5)
    a = torch.rand(2)
    b = torch.rand(2)
    torch.manual_seed(5)
    assert torch.equal(torch.rand(2), a)
    with torch_scope(threads=1):
        assert torch.equal(torch.rand(2), b)
