"""Tests of ``suites/publish/publisher.py``: a bundle's command leaves this machine's paths behind, and a rerun takes
a bundle's command only where it is the suite's own measuring command with settings (a bundle is data)."""

from __future__ import annotations

import re

import pytest

from suites.bundle import Bundle
from suites.publish.publisher import public_command, rerun_command
from suites.publish.reference import reference_document
from tests.support.bundles import comparison


def bundle(command: str) -> Bundle:
    doc = reference_document()
    doc["command"] = command
    return Bundle(doc)


def test_the_published_command_names_no_local_path_or_store():
    rf = comparison({})
    got = public_command("python -m suites bench scenario=gpu-vs-cpu tracking_uri=sqlite:////home/a/m.db "
                         "artifact_dir=/home/a/art hydra.run.dir=/tmp/x data.root=../data profile=m60-8q", rf)
    assert got == "python -m suites bench scenario=gpu-vs-cpu profile=m60-8q  # 4 argument(s) naming local paths " \
                  "or stores left out: tracking_uri, artifact_dir, hydra.run.dir, data.root"
    assert public_command("", rf).startswith("make bench (the run's own command was not recorded")


def test_a_rerun_runs_the_suites_own_measuring_command_with_its_settings_only():
    assert rerun_command(bundle("python -m suites bench scenario=gpu-vs-cpu profile=m60-8q  # 2 left out")) == \
        ["bench", "scenario=gpu-vs-cpu", "profile=m60-8q"]


@pytest.mark.parametrize("command, says", [
    ("rm -rf /", "is not 'python -m suites <command> ...'"),
    ("python -m suites sync --to http://evil", "a rerun runs bench, study, size"),
    ("python -m suites bench --cfg job", "not a key=value setting"),
    ("python -m suites bench hydra.run.dir=/etc", "hydra.* steers how the command runs"),
    ("python -m suites bench 'unclosed", "not a command line"),
    ("python -m suites bench x=1; rm -rf /", "x is not a measurement setting"),
    # round 7 (issue 87), each of which ran on fa8ae96:
    ("python -m suites bench hydra.job_logging.handlers.file.filename=/tmp/x "
     "+hydra.job_logging.handlers.file.mode=w", "hydra.* steers how the command runs"),  # truncated /tmp/x
    ("python -m suites bench 'scenario.name=${oc.env:SECRET}'", "an interpolation"),  # printed and published it
    ("python -m suites bench 'workload.name=${oc.decode:x}'", "an interpolation"),
    ("python -m suites bench backend=ray ray.address=127.0.0.1:16379", "backend=ray connects elsewhere"),
    ("python -m suites bench ray.address=127.0.0.1:16379", "ray is not a measurement setting"),
    ("python -m suites bench hydra.mode=MULTIRUN", "hydra.* steers"),  # past the --multirun refusal
    ("python -m suites bench hydra/launcher=slurm", "not a key=value setting"),
    ("python -m suites bench tracking_uri=http://elsewhere:5000", "tracking_uri is not a measurement setting"),
    ("python -m suites bench data.root=/etc", "data.root names a place"),
    ("python -m suites study study.timings=timings.json", "study.timings names a place"),
    ("python -m suites bench workload.name=/etc/passwd", "its value names a file"),
    ("python -m suites bench ~profile", "not a key=value setting"),
    ("python -m suites bench ~profile.vcpus=2", "it deletes a setting"),
    ("python -m suites bench 'scenario.phases=[{label:x,overrides:[\"hydra.run.dir=/etc\"]}]'", "hydra.* steers"),
    ("python -m suites bench 'scenario.phases=[{label:x,overrides:[\"tracking_uri=sqlite:///x\"]}]'",
     "tracking_uri is not a measurement setting"),
    ("python -m suites bench " + " ".join(["seed=1"] * 65), "at most 64"),
    ("python -m suites bench 'workload.name=a\x1b[8m'", "control characters"),
])
def test_a_bundles_command_that_is_not_one_is_refused_in_one_line(command: str, says: str):
    with pytest.raises(ValueError, match=re.escape(says)):
        rerun_command(bundle(command))


def test_a_measurements_own_settings_are_taken_whole():
    words = ["+preset=smoke", "scenario=gpu-vs-cpu", "workload=fixed-step", "scenario.repeats=3", "backend=vm",
             "'scenario.phases=[{label:x,overrides:[\"profile=m60-3q\"]}]'", "sizing.mix={cad:40,ml:4}"]
    assert rerun_command(bundle("python -m suites bench " + " ".join(words)))[1:] == \
        [w.strip("'").replace('\\"', '"') for w in words]
