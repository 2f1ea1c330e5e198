"""A real single-host Slurm cluster for the tests: munged, MariaDB, slurmdbd, slurmctld and slurmd, all on loopback.

Debian's own daemons (``make setup-cluster`` installs them), each started in
the foreground from a folder of its own with a generated configuration: one
node with this host's real cores and memory, one partition, accounting through
slurmdbd into MariaDB (so ``sacct`` answers, as on a site's cluster). Every
daemon runs in its own process group; :meth:`SlurmCluster.stop` ends them all
and removes the folder. ``SLURM_CONF`` in :attr:`SlurmCluster.env` points the
client commands (``sbatch``, ``sacct``, submitit) at it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from suites.poll import wait_until

from .helpers import free_ports, stop_group

DAEMONS = ("munged", "mariadbd", "mariadb-install-db", "slurmdbd", "slurmctld", "slurmd", "sbatch", "sacct",
           "sacctmgr", "scontrol")
PARTITION = "bench"
CLUSTER = "gmb"


def missing_tools() -> list[str]:
    return [d for d in DAEMONS if shutil.which(d) is None]



class SlurmCluster:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="slurm", dir="/tmp"))  # short: socket paths must fit 107 bytes
        self.dir.chmod(0o755)  # munged wants its socket's folder searchable by all
        self.procs: list[subprocess.Popen] = []
        self.ports = dict(zip(("mysql", "dbd", "ctld", "slurmd"), free_ports(4), strict=True))
        self.node = socket.gethostname().split(".")[0]
        self.own_env = {"SLURM_CONF": str(self.dir / "slurm.conf")}

    @property
    def env(self) -> dict[str, str]:
        """The calling test's environment now (its own BENCH_STATE_DIR, not the first test's) with the cluster's."""
        return {**os.environ, **self.own_env}

    # --- the daemons ------------------------------------------------------------------------------------
    def start(self) -> SlurmCluster:
        self.started_at = time.time()
        try:
            self._munge()
            self._mariadb()
            self._slurmdbd()
            self._slurmctld_and_slurmd()
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = (self.dir / f"{name}.log").open("w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=self.env)
        log.close()
        self.procs.append(proc)
        return proc

    def _wait(self, what: str, ready, timeout: float = 60) -> None:
        died = lambda: any(p.poll() is not None for p in self.procs)  # noqa: E731
        if not wait_until(lambda: ready() or died(), timeout, 0.3) or not ready():
            logs = "\n".join(f"--- {f.name}\n{f.read_text()[-1200:]}" for f in sorted(self.dir.glob("*.log")))
            raise RuntimeError(f"slurm test cluster: {what} did not come up\n{logs}")

    def _munge(self) -> None:
        key = self.dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        self.munge_socket = self.dir / "munge.sock"
        self._spawn("munged", ["munged", "--foreground", "--force", f"--key-file={key}",
                               f"--socket={self.munge_socket}", f"--pid-file={self.dir / 'munged.pid'}",
                               f"--seed-file={self.dir / 'munge.seed'}", f"--log-file={self.dir / 'munged.log'}"])
        self._wait("munged", self.munge_socket.exists)

    def _mariadb(self) -> None:
        data, sock = self.dir / "db", self.dir / "mysql.sock"
        subprocess.run(["mariadb-install-db", f"--datadir={data}", "--user=root", "--skip-test-db",
                        "--auth-root-authentication-method=socket"], check=True, capture_output=True, timeout=120)
        self._spawn("mariadbd", ["mariadbd", "--no-defaults", f"--datadir={data}", f"--socket={sock}",
                                 f"--port={self.ports['mysql']}", "--bind-address=127.0.0.1", "--user=root",
                                 f"--pid-file={self.dir / 'mariadbd.pid'}", "--innodb-buffer-pool-size=64M",
                                 "--innodb-log-file-size=16M", "--skip-name-resolve"])
        self._wait("mariadbd", sock.exists)
        sql = ("CREATE DATABASE slurm_acct_db; CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm-test'; "
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        subprocess.run(["mariadb", "--no-defaults", f"--socket={sock}", "-uroot", "-e", sql], check=True,
                       capture_output=True, timeout=60)

    def _slurmdbd(self) -> None:
        conf = self.dir / "slurmdbd.conf"
        conf.write_text("\n".join([
            "AuthType=auth/munge", f"AuthInfo=socket={self.munge_socket}", "DbdHost=localhost",
            "DbdAddr=127.0.0.1", f"DbdPort={self.ports['dbd']}", "SlurmUser=root",
            f"PidFile={self.dir / 'slurmdbd.pid'}", f"LogFile={self.dir / 'slurmdbd.log'}", "DebugLevel=info",
            "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1", f"StoragePort={self.ports['mysql']}",
            "StorageUser=slurm", "StoragePass=slurm-test", "StorageLoc=slurm_acct_db", ""]))
        conf.chmod(0o600)
        self.own_env["SLURM_DBD_CONF"] = str(conf)  # Debian's slurmdbd reads /etc/slurm/slurmdbd.conf otherwise
        self._spawn("slurmdbd-run", ["slurmdbd", "-D"])
        self._wait("slurmdbd", lambda: _listening(self.ports["dbd"]))

    def _slurmctld_and_slurmd(self) -> None:
        cpus = len(os.sched_getaffinity(0))
        mem = int(psutil.virtual_memory().total / 2**20 * 0.9)
        spool = self.dir / "spool"
        for d in ("state", "spool"):
            (self.dir / d).mkdir()
        (self.dir / "slurm.conf").write_text("\n".join([
            f"ClusterName={CLUSTER}", f"SlurmctldHost={self.node}(127.0.0.1)", f"SlurmctldPort={self.ports['ctld']}",
            f"SlurmdPort={self.ports['slurmd']}", "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={self.dir / 'state'}", f"SlurmdSpoolDir={spool}",
            f"SlurmctldPidFile={self.dir / 'slurmctld.pid'}", f"SlurmdPidFile={self.dir / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.dir / 'slurmctld.log'}", f"SlurmdLogFile={self.dir / 'slurmd.log'}",
            "ProctrackType=proctrack/pgid", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/linux",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory", "MpiDefault=none",
            "AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
            f"AccountingStoragePort={self.ports['dbd']}", f"AccountingStoragePass={self.munge_socket}",
            "ReturnToService=2", "SlurmctldTimeout=30",
            "SlurmdTimeout=30", "InactiveLimit=0", "KillWait=5", "MinJobAge=30",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP", ""]))
        self._spawn("slurmctld-run", ["slurmctld", "-D", "-i"])
        self._wait("slurmctld", lambda: _listening(self.ports["ctld"]))
        self._spawn("slurmd-run", ["slurmd", "-D", "-N", self.node])
        self._wait("slurmd", lambda: "idle" in self.sinfo())

    # --- reading it -------------------------------------------------------------------------------------
    def run(self, *args: str) -> str:
        return subprocess.run(list(args), capture_output=True, text=True, env=self.env, timeout=60).stdout

    def sinfo(self) -> str:
        return self.run("sinfo", "-h", "-o", "%P %t")

    def sacct(self, job_ids: list[str]) -> dict[str, str]:
        """Each job's state as the accounting database has it (job lines only, not steps)."""
        out = self.run("sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", ",".join(job_ids))  # "7_0" works
        return dict(line.split("|", 1) for line in out.splitlines() if "|" in line)

    # --- stopping -----------------------------------------------------------------------------------
    def stop(self) -> None:
        if self.procs:  # jobs first, while slurmd can still end their steps (their tasks outlive a killed slurmd)
            self.run("scancel", f"--partition={PARTITION}")
            wait_until(lambda: not self.run("squeue", "-h"), 60, 0.5)
        for proc in reversed(self.procs):  # slurmd first, munged last
            stop_group(proc, term_wait=15)
        for p in self.leftovers():  # a job step's slurmstepd runs in a session of its own
            p.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def leftovers(self) -> list[psutil.Process]:
        """Slurm, munge and MariaDB processes this cluster started that are still there."""
        names = {"slurmstepd", "slurmd", "slurmctld", "slurmdbd", "munged", "mariadbd"}
        out = []
        for p in psutil.process_iter(["name", "create_time"]):
            if p.info["name"] in names and p.info["create_time"] >= getattr(self, "started_at", 0.0) - 1:
                out.append(p)
        return out


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
