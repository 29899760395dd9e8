import os
import socket

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _refuse(*args, **kwargs):
    raise OSError("network access attempted during an offline test")


@pytest.fixture(scope="module")
def block_network():
    """Every outgoing connection (and DNS lookup) raises during the module using it (undone after:
    later Spark tests talk to the JVM over local sockets)."""
    patcher = pytest.MonkeyPatch()
    patcher.setattr(socket.socket, "connect", _refuse)
    patcher.setattr(socket.socket, "connect_ex", _refuse)
    patcher.setattr(socket, "create_connection", _refuse)
    patcher.setattr(socket, "getaddrinfo", _refuse)
    yield
    patcher.undo()


@pytest.fixture(scope="module")
def analyzer(block_network):
    """The rule ensemble's analyzer (``rules_only``: no trained NER; cached per process), used with the network
    blocked."""
    from privtext.pii.detect import get_analyzer
    from tests_support import rules_only

    return get_analyzer(rules_only())
