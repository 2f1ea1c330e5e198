"""Device files (suites/config/device_file.py): only what make gpu-check measured, a step time keyed by how it
ran, and a file that is not one is one line, never a traceback."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from suites.config import device_file
from suites.errors import ConfigError
from tests.support.hosts import gpu_host, host


def test_every_shipped_device_file_is_a_measurement_with_what_the_rehearsal_plays():
    files = sorted(device_file.DEVICES.glob("*.json"))
    assert [p.stem for p in files] == ["h200"]  # the H100's was the H200's figures scaled: no measurement, no file
    for path in files:
        dev = device_file.load(path.stem)
        assert dev["source"].startswith("make gpu-check on "), dev["source"]
        assert device_file.step_ms(dev, "mnist-torch", 512) > 0 and dev["mem_total_MiB"] > 80_000
        assert all(key.split("/")[-1] == "eager" or key.split("/")[-1].startswith("compile=")
                   for key in dev["step_ms"]), dev["step_ms"]
    with pytest.raises(ConfigError, match="GPU=h100: .*no such file .*known: h200"):
        device_file.load("h100")


def test_a_step_time_not_measured_is_named_with_what_the_file_has():
    dev = device_file.load("h200")
    with pytest.raises(ConfigError, match=r"no step_ms\['cifar10-torch/1024/eager'\] \(it has mnist-torch/512/eager"):
        device_file.step_ms(dev, "cifar10-torch", 1024)


@pytest.mark.parametrize("content,says", [
    ("{}", "no gpu"), ("[1, 2]", "a JSON object is needed, this is a list"), ('"h200"', "this is a str"),
    ("{not json", "JSONDecodeError"),
    ('{"gpu": "X", "source": "s", "mem_total_MiB": 80000, "cuda_context_MiB": null}', "cuda_context_MiB must be"),
    ('{"gpu": "X", "source": "s", "mem_total_MiB": 1e12, "cuda_context_MiB": 600}', "mem_total_MiB must be"),
    ('{"gpu": "X", "source": "s", "mem_total_MiB": 80000, "cuda_context_MiB": -1e9}', "cuda_context_MiB must be"),
    ('{"gpu": "X", "source": "s", "mem_total_MiB": 80000, "cuda_context_MiB": 600, "step_ms": {"a": "fast"}}',
     "step_ms must map names to numbers"),
    ('{"gpu": "X", "source": "s", "mem_total_MiB": 80000, "cuda_context_MiB": 600, "step_ms": {"mnist/x/eager": 2}}',
     "step_ms's keys must be <workload>/<batch>/"),
    # round 7 (issue 87): each accepted on fa8ae96
    ('{"gpu": "X", "source": "s", "mem_total_MiB": 80000, "cuda_context_MiB": 600, '
     '"step_ms": {"mnist-torch/128/eager": 1e-300}}', "step_ms must map names to numbers in [0.001, 60000]"),
    ('{"gpu": "NVIDIA H200\\u001b[8m", "source": "s", "mem_total_MiB": 80000, "cuda_context_MiB": 600}',
     "gpu must be printable text"),
    ('{"gpu": "X", "source": "measured\\nverdict: ok", "mem_total_MiB": 80000, "cuda_context_MiB": 600}',
     "source must be printable text"),
])
def test_a_file_that_is_no_device_file_is_one_line(tmp_path: Path, content: str, says: str):
    path = tmp_path / "forged.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match="is not a device file") as exc:
        device_file.load(str(path))
    assert says in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_device_file_that_is_a_fifo_or_a_folder_is_said_to_be_one_never_read(tmp_path: Path, kind: str):
    """Round 7: both were 'no such file'; a FIFO must never be opened (it would block)."""
    import os

    path = tmp_path / "h999.json"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(ConfigError, match="not a plain file \\(a folder, a FIFO or a device"):
        device_file.load(str(path))


def test_a_device_file_that_is_a_link_is_refused(tmp_path: Path):
    link = tmp_path / "passwd.json"
    link.symlink_to("/etc/passwd")
    with pytest.raises(ConfigError, match="a link"):
        device_file.load(str(link))


def guest(workload: str, batch: int, rate: float, **config: object) -> dict:
    return {"spec": {"workload": workload, "workload_config": {"batch_size": batch, **config}},
            "result": {"metrics": {"images_per_sec": rate}, "info": {"cuda_context_MiB": 684}}}


def test_make_gpu_check_writes_the_device_file_from_what_it_measured_each_step_keyed_by_how_it_ran():
    b1 = {"guests": [guest("mnist-torch", 512, 109_196.0)]}
    b2 = {"guests": [guest("cifar10-torch", 1024, 182_675.0, compile=False)]}
    b3 = {"guests": [guest("cifar10-torch", 1024, 264_643.0, compile=True, compile_mode="reduce-overhead")]}
    e = {"guests": [{"spec": {"workload": "graphics-replay", "workload_config": {}},
                     "result": {"metrics": {"mechanical.fps": 1508.0, "images_per_sec": math.nan},
                                "info": {"viewsets": ["mechanical"]}}}]}
    made = device_file.measured(gpu_host("NVIDIA H200", 143_771.0), {"b1": b1, "b2": b2, "b3": b3, "e": e},
                                {"mnist-torch/full": 0.83})
    assert made is not None and made["gpu"] == "NVIDIA H200" and made["mem_total_MiB"] == 143_771.0
    assert made["step_ms"] == {"mnist-torch/512/eager": 4.689, "cifar10-torch/1024/eager": 5.606,
                               "cifar10-torch/1024/compile=reduce-overhead": 3.869}  # b3 never overwrites b2
    assert made["frame_ms"] == {"mechanical": 0.663}
    assert made["cuda_context_MiB"] == 684 and made["work_s"] == {"mnist-torch/full": 0.83}
    assert device_file.measured(host(), {}, {}) is None  # no GPU: no device file


def test_what_make_gpu_check_writes_loads_as_a_device_file(tmp_path: Path):
    made = device_file.measured(gpu_host("NVIDIA H200", 143_771.0),
                                {"b1": {"guests": [guest("mnist-torch", 512, 109_196.0)]}}, {})
    path = tmp_path / "device.json"
    path.write_text(json.dumps(made))
    assert device_file.step_ms(device_file.load(str(path)), "mnist-torch", 512) == 4.689
