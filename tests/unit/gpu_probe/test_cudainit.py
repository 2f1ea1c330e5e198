"""Tests of ``gpu_probe/cudainit.py``."""

from __future__ import annotations

import os

import pytest

from gpu_probe import cudainit


def test_cuda_without_a_driver_says_so_and_is_asked_in_a_child(monkeypatch: pytest.MonkeyPatch):
    answer = cudainit.check("libcuda-not-here.so.1")
    assert answer["ok"] is False and answer["error"] == "no libcuda"
    assert answer["text"].startswith("no driver: libcuda-not-here.so.1 not loadable (")
    monkeypatch.setattr(cudainit, "probe", lambda lib: {"pid": os.getpid()})
    assert cudainit.check()["pid"] != os.getpid()  # this process never initialises CUDA (its forks could not use it)
    monkeypatch.setattr(cudainit, "probe", lambda lib: os._exit(3))
    assert cudainit.check()["text"] == "failed (the check's process ended with code 3 and no answer)"
