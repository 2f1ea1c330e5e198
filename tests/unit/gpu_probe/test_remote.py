"""Tests of ``gpu_probe/remote.py``."""

from __future__ import annotations

from gpu_probe.remote import RemoteUsage, merge_rows


def test_remote_rows_join_the_runner_rows_nearest_in_time_on_its_clock():
    rows = [{"t_s": 0.0, "host_cpu_pct": 1.0}, {"t_s": 0.1, "host_cpu_pct": 2.0}, {"t_s": 0.2, "host_cpu_pct": 3.0},
            {"t_s": 0.5, "host_cpu_pct": 4.0}]
    usage = RemoteUsage()
    # stamped on a node clock 10 s ahead: t 1010.1 there is 1000.1 here
    usage.add_rows([{"t": 1010.01, "g0.gpu0.util_pct": 50.0}, {"t": 1010.12, "g0.gpu0.util_pct": 60.0},
                    {"t": 1010.19, "g0.gpu0.util_pct": 70.0}], offset_s=10.0)
    merged = merge_rows(rows, 1000.0, usage.rows, within_s=0.1)
    assert [r.get("g0.gpu0.util_pct") for r in merged] == [50.0, 60.0, 70.0, None]  # 0.5 s: nothing within 0.1
    assert "g0.gpu0.util_pct" not in rows[0] and all("t" not in r for r in merged)  # inputs untouched
