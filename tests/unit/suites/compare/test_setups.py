"""Tests of ``suites/compare/setups.py``: what differs between two set-ups, the named aspects first."""

from __future__ import annotations

from suites.compare.setups import differences, fingerprint

A = {"host.hostname": "h1", "host.cpu_model": "Xeon", "host.cpus_usable": "2", "host.gpu_names": "no GPU",
     "host.driver_version": "None", "profile.name": "m60-8q", "profile.scheduler": "best-effort", "backend": "local",
     "lib.torch": "2.9.0", "host.git_sha": "abc", "workload.step_ms": "5", "tracking_uri": "sqlite:////a/m.db",
     "artifact_dir": "/a/art", "data.cache_dir": "/a/data"}


def test_the_same_set_up_has_no_difference_whatever_it_wrote_to():
    assert differences(A, {**A, "tracking_uri": "sqlite:////b/m.db", "artifact_dir": "/b", "data.cache_dir": "/b"}) \
        == []


def test_a_changed_config_key_is_one_difference_said_as_a_to_b():
    (d,) = differences(A, {**A, "workload.step_ms": "6"})
    assert (d.aspect, str(d)) == ("config", "workload.step_ms: 5 → 6")


def test_named_aspects_come_first_and_a_key_on_one_side_only_is_a_dash():
    b = {**A, "host.driver_version": "580.65", "profile.scheduler": "equal-share", "lib.torch": "2.10.0",
         "host.git_sha": "def", "workload.width": "32"}
    assert [(d.aspect, d.key, d.a, d.b) for d in differences(A, b)] == [
        ("driver", "host.driver_version", "None", "580.65"),
        ("scheduler policy", "profile.scheduler", "best-effort", "equal-share"),
        ("suite", "host.git_sha", "abc", "def"), ("frameworks", "torch", "2.9.0", "2.10.0"),
        ("config", "workload.width", "-", "32")]


def test_a_whole_number_reads_without_its_point_zero_and_an_equal_value_is_no_difference():
    (d,) = differences(A, {**A, "workload.step_ms": "6.0"})
    assert str(d) == "workload.step_ms: 5 → 6"
    assert differences({**A, "workload.step_ms": "5.0"}, A) == [] and differences({"x": "1.05"}, {"x": "1.5"})


def test_a_fingerprint_is_the_machine_not_the_run():
    assert fingerprint(A) == "h1 | Xeon | 2 | no GPU" == fingerprint({**A, "workload.step_ms": "6"})
    assert fingerprint({**A, "host.cpus_usable": "16"}) != fingerprint(A)


def test_a_key_one_version_records_at_its_empty_value_and_the_old_names_are_no_set_up():
    old = {**A, "scenario.study.steps": "[]", "scenario.mixed.steps": "[]", "scenario.mix": "[]"}
    new = {**A, "scenario.study.steps": "None", "scenario.mixed.counts": "[]", "scenario.mixed.steps": "None"}
    assert differences(old, new) == []
    (d,) = differences(old, {**new, "scenario.mixed.counts": "[1, 2]"})
    assert str(d) == "scenario.mixed.counts: - → [1, 2]"


def test_a_git_sha_reads_as_git_abbreviates_it():
    (d,) = differences({**A, "host.git_sha": "297b47c5cae5d78b532785a0ec4a51f3fc254979-dirty"},
                       {**A, "host.git_sha": "14da8a12d3fe60be6e37d8734e4edff9d12f23c4"})
    assert str(d) == "host.git_sha: 297b47c5ca-dirty → 14da8a12d3"


def test_a_value_a_published_bundle_left_out_is_no_difference():
    from suites.bundle import LEFT_OUT

    a = {"host.hostname": LEFT_OUT, "data.root": LEFT_OUT, "workload.step_ms": "5"}
    b = {"host.hostname": "lab-7", "data.root": "/srv/data", "workload.step_ms": "6"}
    assert [(d.key, d.a, d.b) for d in differences(a, b)] == [("workload.step_ms", "5", "6")]
