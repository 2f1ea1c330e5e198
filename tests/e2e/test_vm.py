"""backend=vm: guests as QEMU VMs. Real VMs (TCG here: this host's nested KVM does not boot a guest) run the idle
workload for the mechanics; GPU detection and QEMU's command lines run against fake sysfs trees."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from suites.backends import corelock
from suites.backends.leftovers import Ledger, own_dir
from suites.backends.vm import backend, devices, image, qemu, share
from suites.config.profiles import GpuAccess
from suites.errors import ConfigError, PlacementError
from suites.guest.protocol import GuestSpec
from suites.validity import TCG_EMULATION
from tests.support.helpers import (
    REPO,
    SMOKE,
    BenchRun,
    assert_gone,
    bench_args,
    one_error_line,
    run_bench,
    training,
    wait_for,
)
from tests.support.record_keys import json_paths, mlflow_keys
from tests.support.vms import MISSING, mdev_type, pci_gpu, profile

needs_vm = pytest.mark.skipif(bool(MISSING), reason=f"no VM set-up here ({MISSING}): make setup-vm")


VM = ["backend=vm", "vm.accel=tcg", "workload=idle"]


UUID = "8f1f6a5e-0c1d-4a53-9d0e-1a2b3c4d5e6f"


def grid_standin(tmp_path: Path, version: str = "580.95.05", cuda: str = "13.0") -> Path:
    """The default image, its manifest saying it holds a GRID guest driver serving CUDA ``cuda`` (no such file here:
    NVIDIA's is licensed): what a vGPU run needs to get as far as its mdev."""
    folder = tmp_path / f"vm-grid-{version}"
    folder.mkdir()
    for name in ("vmlinuz", "initrd.gz"):
        (folder / name).symlink_to(image.DEFAULT_DIR / name)
    meta = json.loads((image.DEFAULT_DIR / image.MANIFEST).read_text())
    meta["nvidia"] = {"version": version, "flavour": "grid", "file": f"NVIDIA-Linux-x86_64-{version}-grid.run",
                      "source": "GRID guest driver (a test's stand-in)", "modules": [], "cuda": cuda}
    (folder / image.MANIFEST).write_text(json.dumps(meta))
    return folder


def stale_mdev(sysfs: Path, uuid: str, ledger: Ledger | None = None) -> Path:
    """An instance the kernel holds (its device folder); with ``ledger``, noted there by a run that has died."""
    dev = devices.mdev_path(uuid, sysfs)
    dev.mkdir(parents=True)
    (dev / "remove").write_text("")
    if ledger is not None:
        dead = subprocess.Popen([sys.executable, "-c", ""])
        dead.wait()
        ledger.folder.mkdir(parents=True, exist_ok=True)
        (ledger.folder / uuid).write_text(json.dumps({"pid": dead.pid, "started": time.time(), "sysfs": str(sysfs)}))
    return dev


# --- real VMs (TCG) ----------------------------------------------------------------------------------------------
def vm_pids(run_dir: Path, gid: str) -> list[int]:
    """QEMU's and its virtiofsd's pids, as the backend wrote them."""
    meta = json.loads((run_dir / f"{gid}.vm.json").read_text())
    return [meta["qemu_pid"], meta["group"]]


def two_vms_training(start, *overrides: str) -> tuple[subprocess.Popen, Path, list[int]]:
    """Two guest VMs (scenario=concurrent) started by the ``start`` fixture and both training: (the runner, its run
    folder, both VMs' QEMU and virtiofsd pids)."""
    proc, run_dir = start("scenario=concurrent", *overrides)
    wait_for(lambda: training(run_dir, "g0") and training(run_dir, "g1"), timeout=180)
    return proc, run_dir, vm_pids(run_dir, "g0") + vm_pids(run_dir, "g1")


@pytest.fixture
def start(tmp_path: Path):
    """Start a bench with VMs in the background; one a test leaves running (a failed assertion) is stopped after
    it, with Ctrl-C, so it takes its VMs along."""
    procs: list[subprocess.Popen] = []

    def run(*overrides: str) -> tuple[subprocess.Popen, Path]:
        args, run_dir, _ = bench_args(tmp_path / str(len(procs)), *SMOKE, *VM, *overrides)
        procs.append(subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1"}))
        return procs[-1], run_dir

    yield run
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


def fake_image(where: Path, kernel: bytes, manifest: str | None = None) -> Path:
    """An image folder as make setup-vm leaves it, with the given kernel bytes (and manifest text)."""
    where.mkdir()
    (where / "vmlinuz").write_bytes(kernel)
    (where / "initrd.gz").write_bytes(b"\x1f\x8b" + bytes(64))
    meta = {"kernel": "vmlinuz", "initrd": "initrd.gz", "release": "6.1.0-test", "packages": {},
            "init_sha256": image.init_sha256()}
    (where / image.MANIFEST).write_text(manifest if manifest is not None else json.dumps(meta))
    return where


def vgpu_run(tmp_path: Path, hold_core: bool = False) -> tuple[BenchRun, list[str], Path, str]:
    """A vGPU VM run (m60-8q) on a fake sysfs tree where an earlier run, killed with SIGKILL, left an instance. The
    kernel's part is played by a thread: what the backend writes to the type's ``create`` (a FIFO here) makes the
    device; QEMU then fails on it (no IOMMU group in a fake tree). With ``hold_core``, another run (a lease in this
    test's own state: the two meet there) holds every core until the run says it waits, so it places more than once."""
    sysfs = tmp_path / "sys"
    t = mdev_type(sysfs, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 1)
    (t / "create").unlink()
    os.mkfifo(t / "create")
    made: list[str] = []

    def kernel() -> None:
        with open(t / "create") as f:
            made.append(f.read().strip())
        dev = devices.mdev_path(made[0], sysfs)
        dev.mkdir(parents=True)
        (dev / "remove").write_text("")

    thread = threading.Thread(target=kernel, daemon=True)
    thread.start()
    pci_gpu(sysfs, "0000:3b:00.0", "nvidia")
    stale = "33333333-0c1d-4a53-9d0e-1a2b3c4d5e6f"
    left = stale_mdev(sysfs, stale, devices.LEDGER)  # made by an earlier run of this host, killed with SIGKILL
    overrides = (*SMOKE, *VM, "profile=m60-8q", f"vm.sysfs={sysfs}", "wait_for_cores_s=120",
                 f"vm.image_dir={grid_standin(tmp_path)}")
    if not hold_core:
        run = run_bench(tmp_path, *overrides)
    else:
        args, run_dir, uri = bench_args(tmp_path, *overrides)
        with corelock.CoreLease("another run").acquire(sorted(os.sched_getaffinity(0))) as lease:
            proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1"})
            said = [proc.stdout.readline()]
            while said[-1] and "waiting for cores" not in said[-1]:  # placed, refused, probed: it waits for the cores
                said.append(proc.stdout.readline())
            lease.release()
        out, err = proc.communicate(timeout=300)
        run = BenchRun(subprocess.CompletedProcess(args, proc.returncode, "".join(said) + out, err), run_dir, uri)
    thread.join(timeout=5)
    return run, made, left, stale


def assert_mdevs_removed(run: BenchRun, made: list[str], left: Path, stale: str) -> None:
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    guest = run.results["guests"][0]
    note = guest["placement"]["note"]
    assert f"mdev {made[0]}" in note and "vGPU GRID M60-8Q (nvidia-18)" in note
    assert "the VM ended before its guest reported; QEMU: qemu-system-x86_64" in guest["result"]["error"]
    assert (devices.mdev_path(made[0], run.run_dir.parent / "sys") / "remove").read_text() == "1"
    assert not (devices.LEDGER.folder / made[0]).exists()
    assert f"removed mdev {stale} (pid " in note and "left by a killed run" in note
    assert (left / "remove").read_text() == "1"


@pytest.mark.vm
def test_an_mdev_instance_is_made_for_the_run_and_removed_after_it(tmp_path: Path):
    ledger = Ledger("ledger", tmp_path)
    mdev_type(tmp_path, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 1)
    t = devices.mdev_types(tmp_path)
    arg = devices.create_mdev(t[0], UUID, tmp_path, ledger)
    assert (t[0].path(tmp_path) / "create").read_text() == UUID
    assert arg == f"sysfsdev={tmp_path}/bus/mdev/devices/{UUID}"
    assert json.loads((ledger.folder / UUID).read_text())["pid"] == os.getpid()  # noted, for the next run if this dies
    assert devices.remove_mdev(UUID, tmp_path, ledger) is False  # the kernel made no device: nothing to remove
    assert not (ledger.folder / UUID).exists()
    dev = stale_mdev(tmp_path, UUID)
    assert devices.remove_mdev(UUID, tmp_path, ledger) is True and (dev / "remove").read_text() == "1"


@pytest.mark.vm
def test_an_mdev_left_by_a_killed_run_is_removed_by_the_next(tmp_path: Path):
    """A runner killed with SIGKILL cannot remove its instances; the ledger lets the next run do it."""
    ledger, sysfs = Ledger("ledger", tmp_path), tmp_path / "sys"
    left = stale_mdev(sysfs, UUID, ledger)
    other = stale_mdev(tmp_path / "other-sys", "11111111-0c1d-4a53-9d0e-1a2b3c4d5e6f", ledger)  # not this sysfs
    gone = "44444444-0c1d-4a53-9d0e-1a2b3c4d5e6f"
    shutil.rmtree(stale_mdev(tmp_path / "gone-sys", gone, ledger).parents[3])  # a fixture tree since deleted
    alive = "22222222-0c1d-4a53-9d0e-1a2b3c4d5e6f"
    mdev_type(sysfs, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 1)
    devices.create_mdev(devices.mdev_types(sysfs)[0], alive, sysfs, ledger)  # this process's: still running
    (line,) = devices.reclaim_mdevs(sysfs, ledger)
    assert line.startswith(f"{UUID} (pid ") and (left / "remove").read_text() == "1"
    assert not (ledger.folder / UUID).exists()
    assert (other / "remove").read_text() == "" and (ledger.folder / alive).exists()
    assert not (ledger.folder / gone).exists()  # its note dropped: no tree left to remove it from


@pytest.mark.vm
@needs_vm
def test_two_vms_run_concurrently_labelled_tcg_with_the_local_backends_keys(tmp_path: Path):
    vm = run_bench(tmp_path / "vm", *SMOKE, *VM, "scenario=concurrent")
    assert vm.proc.returncode == 0, vm.proc.stderr[-2000:]
    out = vm.proc.stdout
    assert "validity: not enforced (TCG emulation: not a performance measurement)" in out
    res = vm.results
    assert [g["result"]["status"] for g in res["guests"]] == ["ok", "ok"]
    assert all(g["validity"] == "not enforced" for g in res["guests"])
    assert res["guests"][0]["placement"]["vcpus"] != res["guests"][1]["placement"]["vcpus"]
    starts = [g["result"]["t_train_start"] for g in res["guests"]]
    assert abs(starts[0] - starts[1]) < 1.0  # one barrier, host-synchronised clocks in both VMs
    for g in ("g0", "g1"):
        assert "bench-vm: booted in" in (vm.run_dir / f"{g}.log").read_text(errors="replace")
        fsd = json.loads((vm.run_dir / f"{g}.vm.json").read_text())["virtiofsd"]  # each VM its own view, never "/"
        assert fsd[:4] == ["unshare", "--mount", "--propagation", "private"]
        assert re.search(rf"(source=|--shared-dir=)\S+/{g}\.view\b", fsd[-1]), fsd[-1]
    local = run_bench(tmp_path / "local", *SMOKE, "workload=idle", "scenario=concurrent")
    assert local.proc.returncode == 0, local.proc.stderr[-2000:]
    assert json_paths(res) == json_paths(local.results)
    assert mlflow_keys(vm.tracking_uri) == mlflow_keys(local.tracking_uri)
    from mlflow.tracking import MlflowClient

    runs = MlflowClient(vm.tracking_uri).search_runs(
        [MlflowClient(vm.tracking_uri).get_experiment_by_name("gpu-mixed-bench").experiment_id])
    assert len(runs) == 3 and {r.data.tags["bench.validity_reason"] for r in runs} == {TCG_EMULATION}


@pytest.mark.vm
@needs_vm
def test_a_vm_killed_mid_run_is_that_guests_recorded_failure(start):
    proc, run_dir, pids = two_vms_training(start, "workload.seconds=6")
    os.kill(pids[0], signal.SIGKILL)  # g0's QEMU
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-2000:]
    g0, g1 = (g["result"] for g in json.loads((run_dir / "results.json").read_text())["guests"])
    assert g0["status"] == "failed" and "killed by SIGKILL" in g0["error"]
    assert "the VM ended before its guest reported" in g0["error"]
    assert g1["status"] == "ok"
    assert_gone(pids)


@pytest.mark.vm
@needs_vm
def test_ctrl_c_leaves_no_qemu(start):
    proc, run_dir, pids = two_vms_training(start, "workload.seconds=600")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    errors = [g["result"]["error"] for g in json.loads((run_dir / "results.json").read_text())["guests"]]
    assert errors == ["interrupted (Ctrl-C)"] * 2
    assert_gone(pids)


@pytest.mark.vm
@needs_vm
def test_vcpus_are_pinned_one_per_core_and_a_sigkilled_runner_takes_its_vms(start):
    proc, run_dir = start("workload.seconds=600", "profile.vcpus=2")
    wait_for(lambda: training(run_dir, "g0"), timeout=180)
    pids = vm_pids(run_dir, "g0")
    try:
        cores = json.loads((run_dir / "g0.vm.json").read_text())["host_cpus"]
        threads = {t.id: Path(f"/proc/{pids[0]}/task/{t.id}/comm").read_text().strip()
                   for t in psutil.Process(pids[0]).threads()}
        vcpus = sorted((name, os.sched_getaffinity(tid)) for tid, name in threads.items() if name.startswith("CPU "))
        assert vcpus == [("CPU 0/TCG", {cores[0]}), ("CPU 1/TCG", {cores[1]})]  # one core each, in order
    finally:
        proc.kill()  # the runner, SIGKILLed: its VMs must go with it
        proc.communicate(timeout=30)
    wait_for(lambda: not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                             for p in pids), timeout=15)
    assert_gone(pids)
    stale = list(backend.socket_root().glob(f"gmb-vm-{proc.pid}-*"))  # its finally never ran ...
    assert len(stale) == 1
    mine = own_dir("gmb-vm-", backend.socket_root())  # ... so the next run clears its sockets away
    assert not stale[0].exists() and mine.is_dir()
    mine.rmdir()


@pytest.mark.vm
@needs_vm
def test_a_vm_that_does_not_boot_in_time_fails_with_its_console(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, *VM, "vm.boot_timeout_s=0.5")
    assert run.proc.returncode == 1, run.proc.stderr[-2000:]
    error = run.results["guests"][0]["result"]["error"]
    assert error.startswith("VM did not boot within vm.boot_timeout_s=0.5 s (console g0.log")
    assert (run.run_dir / "g0.log").exists()
    assert_gone(vm_pids(run.run_dir, "g0"))


def test_a_kvm_test_boot_that_hangs_is_given_up_at_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A hypervisor that never finishes booting (nested KVM here hangs after 'Probing EDD' with some CPU models):
    a stand-in QEMU that prints that and sleeps."""
    hang = tmp_path / "qemu-hangs"
    hang.write_text("#!/bin/sh\nfor a; do case $a in file:*) echo 'Probing EDD (edd=off to disable)... ok' "
                    ">\"${a#file:}\";; esac; done\nexec sleep 60\n")
    hang.chmod(0o755)
    monkeypatch.setattr(qemu, "kvm_usable", lambda: "")
    img = image.Image(tmp_path, tmp_path / "vmlinuz", tmp_path / "initrd.gz", "test", {})
    t0 = time.monotonic()
    accel = qemu.choose_accel("auto", img, str(hang), probe_s=1.5)
    assert 1.5 <= time.monotonic() - t0 < 5
    assert accel.name == "tcg" and "did not finish within 1.5 s" in accel.note and "Probing EDD" in accel.note
    monkeypatch.setattr(qemu, "kvm_usable", lambda: "/dev/kvm: Permission denied")
    assert qemu.choose_accel("auto", img, str(hang), 1.5).note == "KVM unusable (/dev/kvm: Permission denied)"
    with pytest.raises(ConfigError, match="vm.accel=kvm: /dev/kvm: Permission denied"):
        qemu.choose_accel("kvm", img, str(hang), 1.5)


@pytest.mark.vm
def test_bad_vm_set_up_is_one_error_line_before_anything_starts(tmp_path: Path):
    run = run_bench(tmp_path, *SMOKE, *VM, f"vm.image_dir={tmp_path / 'nowhere'}")
    assert run.proc.returncode == 2
    lines = run.proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: backend=vm: no VM image in"), run.proc.stderr
    assert "make setup-vm" in lines[0] and not run.run_dir.exists()


@pytest.mark.vm
def test_a_kernel_of_random_bytes_or_a_garbage_manifest_is_one_error_line_naming_it(tmp_path: Path):
    """QEMU given random bytes as a kernel says only "linux kernel too old to load a ram disk", and the console
    stays empty: the image is checked before any VM starts."""
    noise = fake_image(tmp_path / "noise", os.urandom(4096))
    with pytest.raises(ConfigError, match=r"vmlinuz is not a Linux kernel image \(no bzImage header"):
        image.find(noise)
    header = bytearray(4096)
    header[0x202:0x206] = b"HdrS"
    assert image.find(fake_image(tmp_path / "ok", bytes(header))).release == "6.1.0-test"
    with pytest.raises(ConfigError, match=r"image.json is not the manifest `make setup-vm` writes \(JSONDecodeError"):
        image.find(fake_image(tmp_path / "garbage", bytes(header), manifest="\x00{not json"))
    with pytest.raises(ConfigError, match=r"is not the manifest .*\(KeyError: 'kernel'"):
        image.find(fake_image(tmp_path / "partial", bytes(header), manifest="{}"))
    run = run_bench(tmp_path, *SMOKE, *VM, f"vm.image_dir={noise}")
    lines = run.proc.stderr.strip().splitlines()
    assert run.proc.returncode == 2 and len(lines) == 1, run.proc.stderr
    assert lines[0].startswith("error: backend=vm: ") and "not a Linux kernel image" in lines[0]


@pytest.mark.vm
@needs_vm
def test_tcg_vms_are_placed_counting_their_translation_cache(tmp_path: Path):
    """Guest memory that fits in the host's, but not with each TCG VM's translation cache beside it: refused."""
    each = int(psutil.virtual_memory().total / 2**20 / 2) - qemu.TCG_CACHE_MiB // 2
    run = run_bench(tmp_path, *SMOKE, *VM, "scenario=concurrent", "profile.vcpus=1", f"profile.memory_MiB={each}")
    assert run.proc.returncode == 2, run.proc.stderr[-2000:]
    (line,) = run.proc.stderr.strip().splitlines()
    assert f"2 VM(s) x ({each} MiB + {qemu.TCG_CACHE_MiB} MiB TCG translation cache)" in line, line
    assert not run.run_dir.exists()


@pytest.mark.vm
@needs_vm
def test_a_host_whose_gpus_are_not_bound_to_vfio_is_refused_naming_them(tmp_path: Path):
    sysfs = tmp_path / "sys"
    pci_gpu(sysfs, "0000:3b:00.0", "nvidia")
    run = run_bench(tmp_path, *SMOKE, *VM, "profile=passthrough-1gpu", f"vm.sysfs={sysfs}")
    assert run.proc.returncode == 2, run.proc.stderr[-2000:]
    lines = run.proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "bound to vfio-pci; this host has 0" in lines[0] and "0000:3b:00.0 (nvidia)" in lines[0]
    run = run_bench(tmp_path / "vgpu", *SMOKE, *VM, "profile=m60-8q", f"vm.sysfs={sysfs}",
                    f"vm.image_dir={grid_standin(tmp_path)}")
    assert run.proc.returncode == 2 and "mdev types offered: none" in run.proc.stderr
    assert not run.run_dir.exists()


@pytest.mark.vm
@needs_vm
def test_a_gpu_in_a_vm_whose_driver_cannot_serve_the_guests_cuda_is_refused_before_any_vm_starts(tmp_path: Path):
    """An image built for another venv, or before its build checked: its driver (535: CUDA 12.2) against the guest's
    torch (this venv's, read from its files) would end every GPU guest a CPU fallback; one line says so first."""
    from suites.backends.vm import cudaver

    needs = cudaver.guest_needs()
    if not needs:
        pytest.skip("this venv's torch and TensorFlow are CPU builds: they need no CUDA of a driver")
    sysfs = tmp_path / "sys"
    mdev_type(sysfs, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 1)
    pci_gpu(sysfs, "0000:3b:00.0", "nvidia")
    old = grid_standin(tmp_path, "535.261.03", "12.2")
    run = run_bench(tmp_path / "run", *SMOKE, *VM, "profile=m60-8q", f"vm.sysfs={sysfs}", f"vm.image_dir={old}")
    name, need = max(needs.items(), key=lambda item: cudaver.major_minor(item[1]))
    assert one_error_line(run.proc) == (
        f"error: backend=vm: the VM image in {old}: driver 535.261.03 supports CUDA 12.2; this {name} needs CUDA "
        f"{need} (driver >= {cudaver.min_branch(need)}): pass vm.guest_driver=<NVIDIA-Linux-x86_64-"
        f"{cudaver.min_branch(need)} or newer .run>")
    assert not run.run_dir.exists() and not (sysfs / "bus" / "mdev").exists()  # nothing made


@pytest.mark.vm
@needs_vm
def test_a_vgpu_run_whose_image_has_no_grid_guest_driver_is_refused_in_one_line(tmp_path: Path):
    sysfs = tmp_path / "sys"
    mdev_type(sysfs, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 1)
    pci_gpu(sysfs, "0000:3b:00.0", "nvidia")
    run = run_bench(tmp_path, *SMOKE, *VM, "profile=m60-8q", f"vm.sysfs={sysfs}")
    line = one_error_line(run.proc)
    assert line.startswith("error: backend=vm: vGPU profile m60-8q needs NVIDIA's GRID guest driver in the VM image, "
                           f"and {image.DEFAULT_DIR}'s driver is none: build one with make setup-vm VM_DRIVER=")
    assert not run.run_dir.exists() and not (sysfs / "bus" / "mdev").exists()  # nothing made


@pytest.mark.vm
@needs_vm
def test_a_vgpu_runs_mdev_is_removed_after_a_vm_that_failed(tmp_path: Path):
    assert_mdevs_removed(*vgpu_run(tmp_path))


@pytest.mark.vm
@needs_vm
def test_a_vgpu_run_that_waits_for_cores_still_records_the_mdev_it_removed(tmp_path: Path):
    """Placement only computes: a run placed while another held a core (refused, probed 'would it fit alone?',
    waited, placed again) removes a killed run's instance once, after it is placed, and says so (not
    removed by the discarded probe, its note lost with it)."""
    run, made, left, stale = vgpu_run(tmp_path, hold_core=True)
    assert "waiting for cores: 0 s of 120 s (wait_for_cores_s); held by" in run.proc.stdout
    assert_mdevs_removed(run, made, left, stale)


@pytest.mark.vm
def test_vgpu_placement_changes_nothing_on_the_host_and_counts_what_start_will_free(tmp_path: Path):
    """An instance of a killed run holds the type's only slot: placement counts it free and removes nothing."""
    sysfs = tmp_path / "sys"
    t = mdev_type(sysfs, "0000:3b:00.0", "nvidia-18", "GRID M60-8Q", 0)
    left = stale_mdev(sysfs, UUID, devices.LEDGER)
    (left / "mdev_type").symlink_to(t)
    assert devices.reclaimable(sysfs) == {("0000:3b:00.0", "nvidia-18"): 1}
    p = profile("m60-8q", GpuAccess.vgpu)
    (chosen,) = devices.vgpu_types_for(p, 1, sysfs, devices.reclaimable(sysfs))
    assert chosen.type_id == "nvidia-18" and (left / "remove").read_text() == ""
    assert (devices.LEDGER.folder / UUID).exists()
    with pytest.raises(PlacementError, match="this host has 0"):
        devices.vgpu_types_for(p, 1, sysfs)


@pytest.mark.vm
@needs_vm
def test_data_a_vm_would_not_see_is_refused_before_it_starts(tmp_path: Path):
    shm = Path("/dev/shm") / f"gmb-test-{os.getpid()}"
    try:
        run = run_bench(tmp_path, *SMOKE, "backend=vm", "vm.accel=tcg", "workload=mnist-torch",
                        f"data.cache_dir={shm}")
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    assert run.proc.returncode == 2, run.proc.stderr[-2000:]
    assert "which a VM mounts from its own memory" in run.proc.stderr and not run.run_dir.exists()


@pytest.mark.vm
@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace and bind mounts need root, as virtiofsd does")
def test_a_vm_sees_what_its_guest_needs_of_the_host_read_only_and_nothing_else(tmp_path: Path):
    """The view virtiofsd exports, built for real (mount namespace, tmpfs, read-only binds), looked at by a shell
    in place of virtiofsd: the run directory and the data are there; a secret beside them, /etc/shadow and /root are
    not; nothing can be written; the venv's Python runs chrooted in it; nothing stays mounted on the host."""
    run_dir, data, view = tmp_path / "run", tmp_path / "data", tmp_path / "g0.view"
    for d in (run_dir, data, view):
        d.mkdir()
    (run_dir / "g0.vm.sh").write_text("true\n")
    (data / "train.bin").write_text("digits\n")
    (tmp_path / "secret").write_text("token")
    spec = GuestSpec("g0", "cpu", "idle", {}, {"root": str(data)}, [0], [], None, 1024)
    look = (f"v={view}; cat $v{run_dir}/g0.vm.sh $v{data}/train.bin; ls $v{tmp_path}; ls $v/etc/shadow $v/root/.ssh; "
            f"touch $v{data}/new || echo read-only; chroot $v {sys.executable} -c 'import sys; print(sys.prefix)'")
    argv = share.virtiofsd_in_view(["/bin/sh", "-c", look], view, spec, run_dir)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["true", "digits", "data", "run", "read-only", sys.prefix], done.stderr
    missing = [ln for ln in done.stderr.splitlines() if "No such file" in ln]
    assert len(missing) == 2 and "/etc/shadow'" in missing[0] and "/root/.ssh'" in missing[1], done.stderr
    assert list(view.iterdir()) == [] and str(view) not in Path("/proc/self/mounts").read_text()


@pytest.mark.vm
@pytest.mark.slow
@needs_vm
def test_an_image_with_nvidias_open_driver_boots_says_no_device_and_gives_its_own_user_space(tmp_path: Path):
    """make setup-vm VM_DRIVER=open's image (the modules built for the image kernel: minutes once, then cached in
    ~/.cache/gpu-mixed-bench/vm-nvidia) carries the modules' GSP firmware and EGL, and boots under TCG on this
    GPU-less host: init says the module and firmware were not loaded for want of an NVIDIA device, nvidia-smi says
    it found no driver, the EGL vendor file is in the VM's view, CUDA inside says no device, and the guest loads the
    image's NVML, not the host's; all of it in the guest's placement note. Debian's driver (535: CUDA 12.2) cannot
    serve this project's torch (cu130), so the build is told the guest needs no CUDA: the refusal is
    test_vm_driver's; the newer drivers that pass it are NVIDIA's .run files, not fetchable here."""
    from tests.support.driver_runs import cpio_list

    img = image.build(tmp_path / "vm-nvidia", "open", needs={})
    version = str(img.driver["version"])
    assert img.driver["modules"] == ["nvidia/modules/nvidia.ko", "nvidia/modules/nvidia-uvm.ko",
                                     "nvidia/modules/nvidia-modeset.ko"]
    assert img.driver["source"].startswith("open kernel modules (Debian nvidia-open-kernel-source ")
    assert img.driver["flavour"] == "open" and img.holds("open") and image.find(img.dir).holds("open")
    assert img.driver["cuda"] == "12.2" and img.driver["cuda_from"] == f"read from libcuda.so.{version}"
    firmware = [f"lib/firmware/nvidia/{version}/gsp_ga10x.bin", f"lib/firmware/nvidia/{version}/gsp_tu10x.bin"]
    listed = cpio_list(img.initrd)
    assert set(firmware) | {"nvidia/egl_vendor.d/10_nvidia.json", "nvidia/lib/libEGL_nvidia.so.0"} <= set(listed)
    run = run_bench(tmp_path / "run", *SMOKE, *VM, "profile=passthrough-1gpu", f"vm.image_dir={img.dir}")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    console = (run.run_dir / "g0.log").read_text()
    said = [f"nvidia module: not loaded: no NVIDIA device on the VM's PCI bus (driver {version})",
            f"nvidia firmware: gsp_ga10x.bin gsp_tu10x.bin in /lib/firmware/nvidia/{version}, not loaded: no NVIDIA "
            "device",
            "nvidia EGL: vendor file /run/nvidia/egl_vendor.d/10_nvidia.json, library "
            "/run/nvidia/lib/libEGL_nvidia.so.0"]
    for line in said:
        assert f"bench-vm: {line}\n" in console, console[-3000:]
    smi = [ln for ln in console.splitlines() if ln.startswith("bench-vm: nvidia-smi: ")]
    assert smi and "NVIDIA driver" in smi[0], console[-3000:]  # it could not talk to a driver, and says so
    assert "bench-vm: cuda: no device (cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected; driver " \
        "CUDA 12.2)" in console
    assert f"bench-vm: NVML from /run/nvidia/lib/libnvidia-ml.so.{version}" in console
    guest = run.results["guests"][0]
    note = guest["placement"]["note"]
    assert f"NVIDIA driver {version}: open kernel modules" in note
    assert all(line in note for line in said) and "CUDA: no device (cuInit: CUDA_ERROR_NO_DEVICE" in note
    assert guest["placement"]["validity"] == "not enforced"  # no GPU here: the profile is not enforced, as without
    # the module is not loaded (nvidia-smi made /dev/nvidiactl regardless): nothing sampled inside, nothing said of it
    assert not any(n.startswith("g0: ") for n in run.results["sampler"]["notes"]), run.results["sampler"]["notes"]


@pytest.mark.vm
@needs_vm
def test_a_vm_samples_its_own_gpu_and_its_rows_join_the_runners_under_its_guest(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch):
    """A VFIO-bound GPU is not in the host's NVML: the guest inside the VM samples its GPU as the VM's driver sees it
    and sends the rows before its result. No GPU here: a recorded vGPU guest's NVML answers stand in for the VM's
    driver (the runner's sampler replays the same trace, so the two series must both be there, apart)."""
    import csv

    from gpu_probe.trace import TRACE_ENV

    monkeypatch.setenv(TRACE_ENV, str(REPO / "tests" / "traces" / "m60-8q-vgpu-guest.json"))
    run = run_bench(tmp_path, *SMOKE, *VM, "profile=cpu", "workload.seconds=3")
    assert run.proc.returncode == 0, run.proc.stderr[-2000:]
    with (run.run_dir / "samples.csv").open() as f:
        rows = list(csv.DictReader(f))
    util = [float(r["g0.gpu0.util_pct"]) for r in rows if r.get("g0.gpu0.util_pct")]
    assert len(util) >= 10 and set(util) <= set(range(55, 85)), util  # the trace's figures, from inside the VM
    assert all(not r.get("g0.gpu0.power_W") for r in rows)  # a vGPU guest's NVML has no power: empty, never 0
    notes = run.results["sampler"]["notes"]
    assert any(n.startswith("g0: GPU series sampled inside its VM at ") for n in notes), notes
    assert any("g0: the NVML answers inside its VM were replayed from" in n for n in notes), notes


@pytest.mark.vm
@needs_vm
def test_a_signal_while_the_vms_are_shut_down_is_honoured_once_they_are(tmp_path: Path):
    """Round 7: a SIGTERM that landed while the VM backend shut down (run_guests' shield) was noted and dropped, and
    the run exited 0. Delivered inside VmBackend.shutdown: the VMs are gone, the run is recorded whole, ended KILLED
    naming the signal, exit 130."""
    from tests.support.helpers import all_runs

    args, run_dir, uri = bench_args(tmp_path, *SMOKE, *VM, "workload.seconds=1")
    proc = subprocess.run([sys.executable, "-m", "tests.support.signal_inside",
                           "suites.backends.vm.backend:VmBackend.shutdown", "TERM", "1", "suites.commands.bench",
                           *args[3:]], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "none")})
    assert "signal-inside: sent SIGTERM in suites.backends.vm.backend:VmBackend.shutdown" in proc.stderr
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "interrupt noted: stopping the guests first" in proc.stderr
    assert json.loads((run_dir / "results.json").read_text())["status"] == "ok"  # measured whole
    [run] = all_runs(uri).query("`tags.bench.role` == 'scenario'").to_dict("records")
    assert run["status"] == "KILLED" and "SIGTERM" in run["tags.bench.stopped"]
