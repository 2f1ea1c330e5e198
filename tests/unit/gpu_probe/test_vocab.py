"""Tests of ``gpu_probe/vocab.py``: one key and one unit per metric, and the key builders every recorder uses."""

from __future__ import annotations

from gpu_probe import vocab


def metrics() -> list[vocab.Metric]:
    return [v for v in vars(vocab).values() if isinstance(v, vocab.Metric)]


def test_every_metric_has_its_own_key_a_unit_and_says_what_it_measures():
    keys = [m.key for m in metrics()]
    assert len(keys) == len(set(keys)) and len(keys) > 30
    assert all(m.unit and m.doc and "." not in m.key for m in metrics())
    # a key's suffix names its unit where it has one: one vocabulary, read the same everywhere
    for m in metrics():
        for suffix, unit in (("_pct", "%"), ("_MiB", "MiB"), ("_ms", "ms"), ("_W", "W"), ("_J", "J")):
            if m.key.endswith(suffix):
                assert m.unit == unit, m


def test_the_key_builders_compose_and_are_read_back():
    assert vocab.gpu_key(0) == "gpu0" and vocab.gpu_key(3, vocab.GPU_UTIL) == "gpu3.util_pct"
    assert vocab.gpu_key(1, "mem_used_MiB") == "gpu1.mem_used_MiB"
    assert vocab.is_gpu_key("gpu12.util_pct.mean", vocab.GPU_UTIL, "mean")
    assert not vocab.is_gpu_key("gpux.util_pct", vocab.GPU_UTIL) and not vocab.is_gpu_key("g0.util_pct", vocab.GPU_UTIL)
    assert vocab.scoped_key("mechanical", vocab.FRAME_TIME, "p95") == "mechanical.frame_time_ms.p95"
    assert vocab.scoped_key("", vocab.FRAME_TIME) == "frame_time_ms"
    assert vocab.guest_key("g1", vocab.GUEST_CPU) == "g1.cpu_pct"
