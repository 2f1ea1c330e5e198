"""``sharing=mps``: the run's own CUDA MPS control daemon, so the driver enforces each guest's share.

With time-slicing a guest's framebuffer cap is a framework promise
(``torch.cuda.set_per_process_memory_fraction``; nothing for a CAD guest).
Under MPS every CUDA client of the daemon gets
``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` (the SMs its contexts may use: the
profile's ``mps_share_pct``, else 100 / ``max_per_gpu``, the vGPU fixed-share
scheduler's share) and ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` (its framebuffer,
which the driver enforces whatever the framework).

The daemon is the run's: its pipe and log folders are under the run
directory (``CUDA_MPS_PIPE_DIRECTORY`` / ``CUDA_MPS_LOG_DIRECTORY``), so a
daemon of another user or run is never reached, and it is told ``quit`` when
the run ends, on every path (:class:`MpsDaemon` is a context manager). Compute
mode, MIG mode and clocks are never changed. A runner killed with SIGKILL cannot
say ``quit``: each daemon is noted in a ledger (suites/backends/leftovers.py),
and the next ``sharing=mps`` run quits those whose runner is gone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import psutil

from suites.backends.leftovers import Ledger
from suites.config.profiles import GpuAccess, ProfileConfig
from suites.errors import BenchError, ConfigError
from suites.poll import wait_until

CONTROL = "nvidia-cuda-mps-control"
# The daemon makes Unix sockets in its pipe folder (at most 108 bytes with their names): a deeper run directory
# gets a short folder under the system's temp dir instead.
PIPE_PATH_MAX = 80
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 15.0
LEDGER = Ledger("mps")


class MpsError(BenchError):
    """The run's MPS daemon could not be had: one line, before any guest starts."""


def share_pct(profile: ProfileConfig) -> int:
    """The SM share a guest of ``profile`` is promised: its own setting, else the fixed-share scheduler's."""
    if profile.mps_share_pct is not None:
        return profile.mps_share_pct
    return max(1, 100 // profile.max_per_gpu) if profile.gpu_access is GpuAccess.vgpu else 100


def guest_env(profile: ProfileConfig, gpus: int) -> dict[str, str]:
    """What each guest's CUDA contexts are told under MPS: its SM share and, per visible device, its framebuffer."""
    env = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": str(share_pct(profile))}
    if profile.framebuffer_MiB:
        env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = ",".join(f"{i}={profile.framebuffer_MiB}M" for i in range(gpus))
    return env


def control_binary() -> str:
    """The MPS control program on PATH, or one ConfigError saying where it comes from."""
    found = shutil.which(CONTROL)
    if not found:
        raise ConfigError(f"sharing=mps: {CONTROL} is not on PATH (it ships with the NVIDIA driver's CUDA "
                          "utilities); use sharing=timeslice or put it on PATH")
    return found


def socket_made(pipe_dir: Path) -> bool:
    """Whether a daemon made its control socket in ``pipe_dir`` (it listens from then on): how a fresh daemon of
    a fresh folder is seen to start. A connection is not asked for there: on the H200's sandboxed kernel one
    through /proc/self/fd/N/ never came, and the daemon was taken for one that did not start."""
    return (pipe_dir / "control").exists()


def daemon_running(pipe_dir: Path) -> bool:
    """Whether a daemon answers on ``pipe_dir``'s control socket: it accepts a connection, by its path, as CUDA's own
    clients reach it. The socket file alone proves nothing: the daemon leaves it behind when it quits (seen on an
    H200, driver 580.159.04, MPS 13.0). Pipe folders are short (PIPE_PATH_MAX), so the path fits a socket address."""
    path = pipe_dir / "control"
    return path.exists() and _accepts(str(path))


def _accepts(address: str) -> bool:
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(1.0)
            sock.connect(address)
        return True
    except OSError:  # refused (nobody listens), not a socket, or gone meanwhile
        return False


def gone(pipe_dir: Path) -> bool:
    """Whether the daemon told to quit stopped answering on its control socket, within STOP_TIMEOUT_S."""
    return wait_until(lambda: not daemon_running(pipe_dir), STOP_TIMEOUT_S, 0.05)


class MpsDaemon:
    """One control daemon for one run, in ``folder`` (``pipe/`` and ``log/``); started by ``with``, always quit."""

    def __init__(self, folder: Path, ledger: Ledger = LEDGER) -> None:
        self.folder = folder
        self.ledger = ledger
        self.log_dir = folder / "log"
        short = len(str((folder / "pipe").resolve())) <= PIPE_PATH_MAX
        self._own_tmp = None if short else Path(tempfile.mkdtemp(prefix="bench-mps-"))
        self.pipe_dir = folder / "pipe" if short else self._own_tmp  # type: ignore[assignment]
        self.binary = ""
        self.started = False
        self.stop_note = ""
        self.start_note = ""  # daemons of killed runs quit before this one started, said in the guests' notes
        self.key = uuid.uuid4().hex

    def env(self) -> dict[str, str]:
        """Where the daemon is: the guests (and this runner's control calls) need both."""
        return {"CUDA_MPS_PIPE_DIRECTORY": str(self.pipe_dir.resolve()),
                "CUDA_MPS_LOG_DIRECTORY": str(self.log_dir.resolve())}

    def _control(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return control(self.binary, self.env(), *args, stdin=stdin)

    def start(self) -> MpsDaemon:
        self.binary = control_binary()
        quit_ = quit_orphans(self.binary, self.ledger)
        self.start_note = f"quit MPS daemon(s) left by a killed run: {', '.join(quit_)}" if quit_ else ""
        self.pipe_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ledger.note(self.key, **self.env(), own_tmp=str(self._own_tmp or ""))  # first: a kill may come any time
        try:
            done = self._control("-d")
        except (OSError, subprocess.SubprocessError) as exc:
            self._cleanup()
            raise MpsError(f"sharing=mps: {CONTROL} -d failed: {exc}") from exc
        if done.returncode != 0 or not wait_until(lambda: socket_made(self.pipe_dir), START_TIMEOUT_S, 0.05):
            why = (done.stderr or done.stdout).strip().splitlines()[-1:] or self._log_tail()
            self._cleanup()
            raise MpsError(f"sharing=mps: the MPS control daemon did not start ({CONTROL} -d exited "
                           f"{done.returncode}{': ' + why[0] if why else ''})")
        self.started = True
        return self

    def stop(self) -> None:
        """``quit`` to the daemon, then wait until its control socket stops answering (idempotent)."""
        if not self.started:
            return
        self.started = False
        try:
            self._control(stdin="quit\n")
        except (OSError, subprocess.SubprocessError) as exc:
            self.stop_note = f"MPS daemon not told to quit ({exc})"
        if not gone(self.pipe_dir):
            self.stop_note = f"MPS daemon at {self.pipe_dir} still answering {STOP_TIMEOUT_S:.0f} s after quit"
            return  # its note stays: the next run tries again
        (self.pipe_dir / "control").unlink(missing_ok=True)  # the socket the daemon leaves behind
        self.ledger.forget(self.key)
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp, ignore_errors=True)

    def pid(self) -> int | None:
        """The control daemon's process (it leaves the runner's tree when it daemonises): the one of this user
        whose pipe folder is this run's; None when none is found."""
        want = str(self.pipe_dir.resolve())
        for proc in psutil.process_iter(["cmdline"]):
            try:  # the program itself, or a script of that name under its interpreter
                if CONTROL in [Path(a).name for a in (proc.info["cmdline"] or [])[:2]] and \
                        proc.environ().get("CUDA_MPS_PIPE_DIRECTORY") == want:
                    return proc.pid
            except psutil.Error:  # gone, or another user's
                continue
        return None

    def _log_tail(self) -> list[str]:
        log = self.log_dir / "control.log"
        try:
            return [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-1:]
        except OSError:
            return []

    def _cleanup(self) -> None:
        """A daemon that never started leaves no folder in the run directory (nothing ran), nor a ledger note."""
        self.ledger.forget(self.key)
        shutil.rmtree(self.folder, ignore_errors=True)
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp, ignore_errors=True)

    def __enter__(self) -> MpsDaemon:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def control(binary: str, env: dict[str, str], *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """One call of the control program, reaching the daemon whose pipe and log folders ``env`` names."""
    return subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, env={**os.environ, **env},
                          timeout=START_TIMEOUT_S)


def quit_orphans(binary: str, ledger: Ledger = LEDGER) -> list[str]:
    """Tell ``quit`` to the daemons of runs no longer alive (killed with SIGKILL); their pipe folders, to be said.
    One this user cannot reach (another user's) is left to its owner."""
    done = []
    for key, made in ledger.orphans():
        pipe = Path(made.get("CUDA_MPS_PIPE_DIRECTORY") or "/nonexistent")
        if daemon_running(pipe):
            if not os.access(pipe, os.W_OK):
                continue
            env = {k: made[k] for k in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY") if k in made}
            try:
                control(binary, env, stdin="quit\n")
            except (OSError, subprocess.SubprocessError):
                continue  # its note stays: tried again by the next run
            if not gone(pipe):
                continue
            done.append(f"{pipe} (pid {made.get('pid')})")
        if made.get("own_tmp"):
            shutil.rmtree(made["own_tmp"], ignore_errors=True)
        ledger.forget(key)
    return done
