"""``make bench-peer``: this suite's ``cifar10-torch`` beside the published record it follows, in one process.

The peer is airbench94 as its author publishes it on PyPI (package ``airbench``, pinned in the dev extra):
``airbench.train94`` runs its own network (``make_net94``), its own data loader (``CifarLoader``: flips,
translations, batches) and its own training step, schedule and lookahead. Ours is the guest workload
(:class:`~suites.workloads.cifar10_torch.Cifar10Torch`: its ``prepare``, ``train`` and step meter). Both get the
same images (synthetic CIFAR-shaped ones, or the first images of real CIFAR-10 under ``--data-root``), batch,
precision and threads; rounds alternate which side goes first. Each side's images/s counts the steps after its
warm-up steps (the peer's timed from its loader handing out the first timed batch to the end of training, ours by
the guest's meter from the end of the warm-up steps); the ratio of round i is ours over the peer's.

Without CUDA the peer still runs unmodified: ``make_net94`` hard-codes ``.half().cuda()``, so for the length of
its call ``nn.Module.cuda`` moves to the CPU and ``nn.Module.half`` to the chosen precision (fp32 by default),
its CUDA timing events become no-ops, and its test loader reads from the CPU: said in the output. On a GPU host
nothing is redirected (fp16, as published).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from unittest import mock

from rich.console import Console
from rich.table import Table

from gpu_probe.stats import (
    FASTER,
    NO_SPREAD,
    SLOWER,
    WITHIN_NOISE,
    confidence_interval,
    goal,
    ratio_interval,
    verdict,
)
from suites.data import cifar
from suites.render import tables
from suites.workloads import timing
from suites.workloads.airbench94 import airbench94_net, cast_weights, dtype_of
from suites.workloads.base import GuestContext
from suites.workloads.cifar10_torch import Cifar10Torch, Cifar10TorchConfig
from suites.workloads.timing import StepMeter

if TYPE_CHECKING:  # for the annotations only: torch is imported where it runs
    import torch
    from torch import Tensor, nn

GOAL = 0.95  # ours must keep 95 % of the peer's images/s
VERDICTS = {SLOWER: "ours slower", WITHIN_NOISE: "within noise", FASTER: "ours faster", NO_SPREAD: "no spread (n = 1)"}


def redirection(device: torch.device, precision: str) -> str:
    """What :func:`redirected` changes for the peer on ``device`` at ``precision``, in words."""
    if device.type == "cuda" and precision == "fp16":
        return "nothing (the peer as published)"
    said = f"nn.Module.half -> {precision}"
    if device.type != "cuda":
        said += f"; nn.Module.cuda -> {device.type}; its CUDA timing events -> wall clock; its loaders -> CPU"
    return said


@contextlib.contextmanager
def redirected(device: torch.device, precision: str) -> Iterator[None]:
    """The peer's hard-coded ``.cuda()`` pointed at ``device`` and its ``.half()`` at ``precision`` while it runs;
    on CUDA at fp16 nothing changes."""
    import torch
    from torch import nn

    saved = nn.Module.cuda, nn.Module.half, torch.cuda.Event, torch.cuda.synchronize
    if not (device.type == "cuda" and precision == "fp16"):
        nn.Module.half = lambda self: self.to(dtype_of(precision))  # type: ignore[method-assign,assignment]
    if device.type != "cuda":
        nn.Module.cuda = lambda self, *a, **k: self.to(device)  # type: ignore[method-assign]
        torch.cuda.Event = WallEvent  # type: ignore[misc,assignment]
        torch.cuda.synchronize = lambda *a, **k: None
    try:
        yield
    finally:
        nn.Module.cuda, nn.Module.half, torch.cuda.Event, torch.cuda.synchronize = saved  # type: ignore


class WallEvent:
    """A stand-in for ``torch.cuda.Event`` on a host without CUDA (the peer's own timing, which we do not use)."""

    def __init__(self, **_: object) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = time.perf_counter()

    def elapsed_time(self, end: "WallEvent") -> float:
        return 1e3 * (end.t - self.t)


class TimedLoader:
    """The peer's own ``CifarLoader``, its batches handed on unchanged; counts them over every epoch and notes when
    the first timed one leaves (after ``warmup`` steps, queued device work finished first)."""

    def __init__(self, inner: Any, warmup: int, sync: Callable[[], object]) -> None:
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_warmup", warmup)
        object.__setattr__(self, "_sync", sync)
        object.__setattr__(self, "t_warm", None)
        object.__setattr__(self, "batches", 0)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inner, name, value)  # the peer sets its loader's epoch

    def __len__(self) -> int:
        return len(self._inner)

    def __iter__(self) -> Iterator[Any]:
        for batch in self._inner:
            if self.batches == self._warmup:
                self._sync()
                object.__setattr__(self, "t_warm", time.perf_counter())
            object.__setattr__(self, "batches", self.batches + 1)
            yield batch


def write_peer_data(folder: Path, images: Tensor, labels: Tensor) -> None:
    """The files the peer's loader reads (``<folder>/cifar10/{train,test}.pt``) from the same uint8 images."""
    import torch

    (folder / "cifar10").mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        torch.save({"images": torch.from_numpy(images), "labels": torch.from_numpy(labels),
                    "classes": list(cifar.CLASSES)}, folder / "cifar10" / f"{split}.pt")


def peer_rate(airbench: ModuleType, folder: Path, args: argparse.Namespace, device: torch.device) -> float:
    """One run of the peer's own training over the images in ``folder``, for the warm-up and timed steps (its
    epochs a fraction or a multiple of them): images/s after its warm-up steps."""
    import torch

    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    with redirected(device, args.precision), contextlib.chdir(folder):
        gpu = device.index if device.type == "cuda" else "cpu"
        loader = airbench.CifarLoader("cifar10", train=True, batch_size=args.batch, aug=airbench.lib_airbench94
                                      .hyp["aug"], altflip=True, gpu=gpu)
        loader.images = loader.images.to(dtype_of(args.precision))  # its .half() images, in the run's precision
        timed = TimedLoader(loader, args.warmup, sync)
        test_loader = functools.partial(airbench.utils.CifarLoader, gpu=gpu)
        epochs = (args.warmup + args.steps) / len(loader)  # its schedule's steps: ceil(len(loader) x epochs)
        with mock.patch.object(airbench.utils, "CifarLoader", test_loader):
            airbench.train94(train_loader=timed, epochs=epochs, verbose=False)
        sync()
        t_end = time.perf_counter()
    return args.batch * (timed.batches - args.warmup) / (t_end - timed.t_warm)


def our_workload(root: Path, args: argparse.Namespace, device: torch.device) -> Cifar10Torch:
    """Ours, prepared, over ``--steps`` timed steps, or (sized by time) as many as fill ``--window-s`` on this
    device (suites/workloads/timing.py; ``args.steps`` is set to them, and the peer trains as many)."""
    cfg = Cifar10TorchConfig(batch_size=args.batch, epochs=1, warmup_steps=args.warmup, precision=args.precision,
                             target_accuracy=None, compile=False, min_window_s=args.window_s or 2.0)
    gpus = ["0"] if device.type == "cuda" else []
    wl = Cifar10Torch(cfg, GuestContext("ours", list(range(args.threads)), gpus, None, {"root": str(root)}, 0))
    wl.prepare()
    if args.steps is None:
        args.steps = int(timing.calibrate(wl, cfg)["sized_steps"]) - args.warmup
    wl.sized_steps = args.warmup + args.steps
    return wl


def our_rate(wl: Cifar10Torch) -> float:
    wl.build()  # fresh weights and optimizer, as the peer builds its network each call
    meter = StepMeter(wl.cfg.warmup_steps, wl.total_steps())
    meter.start()
    wl.train(meter)
    return meter.finish()["images_per_sec"]


def images_for(args: argparse.Namespace, tmp: Path) -> tuple[Tensor, Tensor, Path, str]:
    """(uint8 images, labels, a data root holding them for our loader, what they are) of ``n`` images: ``--images``,
    else a batch per warm-up and timed step (``--steps``), else 20 batches (both sides cycle them)."""
    n = args.images or args.batch * (args.warmup + args.steps if args.steps else 20)
    real = Path(args.data_root) / cifar.FOLDER if args.data_root else None
    if real is not None and real.is_dir():
        source, what = str(args.data_root), f"the first {n:,} images of real CIFAR-10 ({args.data_root})"
    else:
        source = str(cifar.synthesize(tmp / "synthetic", n, 1000, seed=0))
        what = f"{n:,} synthetic CIFAR-shaped images (no real CIFAR-10 under --data-root)"
    x, y = cifar.load_split(source, train=True)
    x, y = x[:n], y[:n]
    root = cifar.write_look_alike(tmp / "ours", (x, y), (x[:1000], y[:1000]))  # the same images for our loader
    return x, y, root, what


def count(net: nn.Module, batch: int, device: torch.device, dtype: torch.dtype) -> tuple[int, float]:
    """(parameters, FLOPs per image of one forward and backward) by torch.utils.flop_counter."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.randn(batch, 3, 32, 32, device=device, dtype=dtype).contiguous(memory_format=torch.channels_last)
    with FlopCounterMode(display=False) as counter:
        net(x).float().sum().backward()
    return sum(p.numel() for p in net.parameters()), counter.get_total_flops() / batch


def flops(airbench: ModuleType, device: torch.device, precision: str) -> list[tuple[str, int, float]]:
    """Both networks' size and cost at their published widths (the whitening filters left at their init)."""
    import torch

    dtype = dtype_of(precision)
    ours = cast_weights(airbench94_net(3, Cifar10TorchConfig.width).to(device), dtype)
    ours = ours.to(memory_format=torch.channels_last)
    with redirected(device, precision):
        peer = airbench.make_net94()
    return [("cifar10-torch (ours)", *count(ours, 64, device, dtype)),
            ("airbench94 (peer, PyPI airbench 0.1.8)", *count(peer, 64, device, dtype))]




def ci_cell(values: list[float]) -> str:
    iv = confidence_interval(values)
    spread = f" [{iv.low:,.1f}, {iv.high:,.1f}]" if iv.spread else ""
    return f"{statistics.median(values):,.1f}{spread}"


def measure(airbench: ModuleType, args: argparse.Namespace, device: torch.device,
            out: Console) -> tuple[list[float], list[float], str, str]:
    """Rounds of both sides, alternating which goes first: (ours, peer's images/s per round, the data, what was
    redirected)."""
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        x, y, root, what = images_for(args, Path(tmp))
        write_peer_data(Path(tmp) / "peer", x, y)
        wl = our_workload(root, args, device)
        ours, peer = [], []
        for r in range(args.rounds):
            sides = [("ours", lambda: ours.append(our_rate(wl))),
                     ("peer", lambda: peer.append(peer_rate(airbench, Path(tmp) / "peer", args, device)))]
            for name, run in sides if r % 2 == 0 else sides[::-1]:
                out.print(f"bench-peer: round {r + 1}/{args.rounds}: {name} ({args.warmup} warm-up + {args.steps} "
                          f"timed steps of {args.batch}{sized_note(args)})", highlight=False)
                run()
    return ours, peer, what, redirection(device, args.precision)


def sized_note(args: argparse.Namespace) -> str:
    return f"; sized for a {args.window_s:g} s window" if args.window_s else ""


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m suites bench-peer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=512, help="images per step, both sides (default 512)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default: as many as fill --window-s "
                        "on this device, measured)")
    parser.add_argument("--window-s", type=float, default=2.0, help="the timed window both sides get when --steps "
                        "is not given: our step time is calibrated first (default 2 s)")
    parser.add_argument("--images", type=int, default=None, help="training images, cycled (default: a batch per "
                        "step with --steps, else 20 batches)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds: n of the CI (default 3)")
    parser.add_argument("--precision", choices=("auto", "fp32", "bf16", "fp16"), default="auto",
                        help="weights and data: auto = fp16 on a GPU (as published), fp32 on a CPU")
    parser.add_argument("--threads", type=int, default=None, help="torch threads, both sides (default: all cores)")
    parser.add_argument("--data-root", default=os.environ.get("BENCH_DATA_ROOT", ""),
                        help="a folder holding cifar-10-batches-py (else synthetic images)")
    parser.add_argument("--flops", action="store_true", help="print parameters and FLOPs per image, then stop")
    args = parser.parse_args(argv)
    for name in ("batch", "steps", "rounds", "images"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.exit(2, f"error: --{name} must be >= 1, got {getattr(args, name)}\n")
    if args.steps is not None:
        args.window_s = None  # a fixed count: no window aimed at
    elif not 0 < args.window_s <= 3600:
        parser.exit(2, f"error: --window-s must be seconds in (0, 3600], got {args.window_s}\n")
    if args.warmup < 1 or (args.threads is not None and args.threads < 1):
        parser.exit(2, "error: --warmup and --threads must be >= 1\n")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        import airbench
    except ImportError:
        print("error: the peer is not installed: pip install airbench==0.1.8 (the dev extra: make setup)",
              file=sys.stderr)
        return 2
    import torch

    device = torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    if args.precision == "auto":
        args.precision = "fp16" if device.type == "cuda" else "fp32"
    args.threads = args.threads or len(os.sched_getaffinity(0))
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        return compare(airbench, args, device)
    finally:
        torch.set_num_threads(threads)  # a caller's process keeps its own setting


def compare(airbench: ModuleType, args: argparse.Namespace, device: torch.device) -> int:
    import torch

    out = Console(width=tables.console_width())
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {args.threads} threads"
    table = Table(title=f"parameters and FLOPs per image (forward + backward, torch.utils.flop_counter; {where})",
                  title_justify="left")
    for col in ("network", "parameters", "FLOPs/img", "vs peer"):
        table.add_column(col, justify="left" if col == "network" else "right")
    rows = flops(airbench, device, args.precision)
    for name, params, f in rows:
        table.add_row(name, f"{params / 1e6:.3f} M", f"{f / 1e6:,.1f} M",
                      f"params {params / rows[1][1]:.3f}, FLOPs {f / rows[1][2]:.3f}")
    out.print(table)
    if args.flops:
        return 0
    return report(*measure(airbench, args, device, out), args, where, out)


def report(ours: list[float], peer: list[float], what: str, said: str, args: argparse.Namespace, where: str,
           out: Console) -> int:
    ratios = [a / b for a, b in zip(ours, peer, strict=True)]
    iv = ratio_interval(ratios)
    table = Table(title=f"cifar10-torch vs the published airbench94, {args.rounds} interleaved round(s) ({where}, "
                        f"{args.precision}, batch {args.batch}, {args.warmup} warm-up + {args.steps} timed steps"
                        f"{sized_note(args)})",
                  title_justify="left", caption=f"images/s: median [95 % CI] of the rounds; ratio: ours / peer per "
                  f"round; verdict against 1; goal >= {GOAL}: met if the CI lies above it, undecided if it spans it. "
                  f"Data: {what}. Peer redirected: {said}.")
    for col in ("ours images/s", "peer images/s", "ratio", "[95% CI]", "verdict", f"goal >= {GOAL}"):
        table.add_column(col, justify="right")
    spread = f"[{iv.low:.3f}, {iv.high:.3f}]" if iv.spread else "-"
    table.add_row(ci_cell(ours), ci_cell(peer), f"{iv.median:.3f}", spread,
                  VERDICTS.get(said := verdict(iv, higher_is_better=True), said), goal(iv, GOAL))
    out.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
