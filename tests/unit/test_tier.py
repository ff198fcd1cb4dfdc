"""The fast tier keeps itself fast: a process or a connection started from one of its tests fails that test."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def test_a_child_process_fails_the_test() -> None:
    with pytest.raises(AssertionError, match="starts no process"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_a_connection_fails_the_test() -> None:
    with socket.socket() as s, pytest.raises(AssertionError, match="opens no connection"):
        s.connect(("127.0.0.1", 9))
