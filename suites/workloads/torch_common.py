"""The PyTorch guest loop every torch classifier shares: data resident on the device, channels_last, the run's
precision, optional torch.compile warmed up outside the clock, a framebuffer cap that counts the CUDA context.

A classifier plugin says how to load its data, build its model and optimizer, and (optionally) how an epoch's
batches are made and a step is taken; this base runs the timed loop, the evaluation and the time-to-accuracy
check (evaluations off the clock). airbench94's recipe (suites/workloads/airbench94.py) is its main user.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, ClassVar, TypeVar

from gpu_probe.shapes import JsonObject
from suites.errors import BenchError, require
from suites.workloads.base import TRAIN_SMOKE, Classifier, TrainConfig
from suites.workloads.device_memory import measure_context, self_reported
from suites.workloads.sgd import StepOptimizer
from suites.workloads.timing import StepMeter

if TYPE_CHECKING:  # for the annotations only: torch is imported where it runs
    import torch
    from torch import Tensor, nn
    from torch.optim.lr_scheduler import LRScheduler

T = TypeVar("T")

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass
class TorchTrainConfig(TrainConfig):
    framework: str = "torch"
    precision: str = "auto"  # auto: bf16 autocast on GPU, fp32 on CPU
    channels_last: bool = True
    compile: bool = False  # torch.compile the model, compiled in the untimed warm-up
    compile_mode: str = "default"  # torch.compile's mode; airbench94's compiled run uses max-autotune

    def check(self) -> None:
        super().check()
        require(self.precision in PRECISIONS, "workload.precision", f"must be one of {', '.join(PRECISIONS)}")
        require(self.compile_mode in COMPILE_MODES, "workload.compile_mode",
                f"must be one of {', '.join(COMPILE_MODES)}, got {self.compile_mode!r}")


class TorchClassifier(Classifier):
    """Base of the PyTorch image classifiers; subclasses fill in the four hooks below."""

    process_ranks = True  # DDP: one process per rank
    smoke = TRAIN_SMOKE
    preload = ("torch", "torch.nn.functional")  # forked after the import, before CUDA's start (suites/guest/zygote.py)
    drop_last: ClassVar[bool] = False  # whether a last partial batch is dropped (then never warmed up)
    gpu_precision: ClassVar[str] = "bf16"  # what precision=auto means on a GPU (fp32 on a CPU)

    def load_data(self) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(x_train, y_train, x_test, y_test) on ``self.device``, the training split cut to :meth:`train_rows` before
        it is moved there (a guest never holds more of it on its device than it trains)."""
        raise NotImplementedError

    def train_rows(self, n: int) -> slice:
        """The rows of an n-image training split this rank trains: the first workload.train_limit, then this rank's
        equal contiguous shard (so every rank takes the same number of steps)."""
        limit = min(n, self.cfg.train_limit or n)
        per = limit // self.ctx.world_size
        return slice(self.ctx.rank * per, (self.ctx.rank + 1) * per)

    def inputs(self, x: Tensor) -> Tensor:
        """A slice of the stored split as the model's input: the stored tensors as they are, unless a recipe keeps
        its data compact on the device and converts it here."""
        return x

    def build_model(self) -> nn.Module:
        raise NotImplementedError

    def make_optimizer(self, model: nn.Module, total_steps: int) -> tuple[StepOptimizer, LRScheduler | None]:
        """(optimizer, per-step LR scheduler)."""
        raise NotImplementedError

    def augment(self, x: Tensor, gen: torch.Generator) -> Tensor:
        return x

    # -- the recipe ---------------------------------------------------------------
    def prepare(self) -> None:
        import torch

        ctx = self.ctx
        torch.manual_seed(ctx.seed)  # the same on every rank: DDP starts from identical weights
        torch.set_num_threads(max(1, len(ctx.vcpus) // ctx.world_size))
        self.device = rank_device(torch, bool(ctx.gpus), ctx.rank)
        ctx.info["device"] = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu"
        ctx.info.update(cap_framebuffer(torch, self.device, ctx.framebuffer_MiB, world=ctx.world_size))
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
            torch.backends.cudnn.benchmark = True  # autotuned kernels, chosen in the warm-up below
        self.x_train, self.y_train, self.x_test, self.y_test = self.load_data()
        if self.cfg.channels_last and self.x_train.dim() == 4:
            self.x_train = self.x_train.contiguous(memory_format=torch.channels_last)
            self.x_test = self.x_test.contiguous(memory_format=torch.channels_last)
        ctx.info["train_images"] = len(self.x_train)
        ctx.info["precision"] = self.precision()
        self.build()
        if self.device.type == "cuda" or self.cfg.compile:
            ctx.info["warmup_untimed_s"] = round(self.warm_up(), 3)

    def warm_up(self) -> float:
        """Compile (torch.compile), cudnn autotuning and CUDA lazy start-up before the start barrier, outside every
        timed region: forward and backward at each batch shape training will use, then the weights and buffers put
        back (no optimizer step is taken, so the timed run starts from the same state). Seconds it took."""
        import time

        import torch
        import torch.nn.functional as F

        t0 = time.perf_counter()
        state = {k: v.detach().clone() for k, v in self.net.state_dict().items()}
        n, bs = len(self.x_train), self.cfg.batch_size
        shapes = {min(bs, n)} | ({n % bs} if n % bs and n > bs and not self.drop_last else set())
        gen = torch.Generator(device=self.device).manual_seed(self.ctx.seed)
        self.model.train()
        for size in sorted(shapes, reverse=True):
            for _ in range(2):
                with self.autocast():
                    out = self.model(self.augment(self.inputs(self.x_train[:size]), gen))
                    loss = F.cross_entropy(out.float(), self.y_train[:size])
                loss.backward()
                self.opt.zero_grad(set_to_none=True)
        self.net.load_state_dict(state)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter() - t0

    def build(self) -> None:
        """Fresh weights and optimizer: called once per repeat. Later repeats copy fresh weights into the modules
        built first, so torch.compile's graphs (and CUDA graphs, which hold the tensors' addresses) made in the
        warm-up serve every repeat: a new model per repeat recompiled inside the timed repeats."""
        import torch

        torch.manual_seed(self.ctx.seed)
        model = self.build_model().to(self.device)
        if self.cfg.channels_last:
            model = model.to(memory_format=torch.channels_last)
        if getattr(self, "net", None) is not None:
            self.net.load_state_dict(model.state_dict())  # in place: the same tensors, fresh values
            self.opt, self.sched = self.make_optimizer(self.model, self.total_steps())
            self.weights_changed()
            return
        self.net = model  # evaluated directly: a DDP forward would wait for the other ranks
        if self.ctx.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None  # this rank's own GPU
            model = DistributedDataParallel(model, device_ids=ids)
        self.model = torch.compile(model, mode=self.cfg.compile_mode) if self.cfg.compile else model
        self.opt, self.sched = self.make_optimizer(self.model, self.total_steps())
        self.weights_changed()

    def device_memory(self) -> dict[str, float]:
        if self.device.type != "cuda":
            return {}
        import torch

        reserved, allocated = (float(f(self.device)) / 2**20 for f in (torch.cuda.max_memory_reserved,
                                                                         torch.cuda.max_memory_allocated))
        return self_reported(reserved, allocated, self.ctx.info.get("cuda_context_MiB"))

    def compiled_frames(self) -> int:
        """Frames torch.compile has compiled in this process so far (0 without it): a count that grows during a
        timed repeat is a recompile inside the clock."""
        if not self.cfg.compile:
            return 0
        from torch._dynamo.utils import counters

        return int(counters["frames"]["ok"])

    def precision(self) -> str:
        if self.cfg.precision != "auto":
            return self.cfg.precision
        return self.gpu_precision if self.device.type == "cuda" else "fp32"

    def autocast(self) -> contextlib.AbstractContextManager[object]:
        import torch

        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.precision())
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=dtype)

    def total_steps(self) -> int:
        return self.sized_steps or self.cfg.total_steps(len(self.x_train), drop_last=self.drop_last)

    def train(self, meter: StepMeter) -> None:
        """Epochs of :meth:`batches` through :meth:`train_step` until the schedule's steps are done; the test
        accuracy checked against ``target_accuracy`` after each epoch (eval_each_epoch) or at the end, with the
        meter's clock stopped (time to accuracy counts training only)."""
        import torch

        if self.device.type == "cuda":
            meter.sync = lambda: torch.cuda.synchronize(self.device)
        meter.target = self.cfg.target_accuracy
        total = self.total_steps()
        gen = torch.Generator(device=self.device).manual_seed(self.ctx.seed)
        epoch = 0
        while not meter.over(total):
            self.model.train()
            for x, y in self.batches(epoch, gen):
                loss = self.train_step(x, y, meter.steps, total)
                self.weights_changed()
                meter.step(len(y) * self.ctx.world_size)  # images across all ranks
                if meter.over(total):
                    break
            self.check_finite(float(loss.detach()), meter.steps)
            epoch += 1
            if self.cfg.target_accuracy and (self.cfg.eval_each_epoch or meter.over(total)):
                with meter.untimed():
                    met = meter.checked(self.accuracy_for_target(), min(float(epoch), float(self.cfg.epochs)))
                if met:
                    break
        self.ctx.info["eval_untimed_s"] = round(meter.untimed_s, 3)

    def batches(self, epoch: int, gen: torch.Generator) -> Iterator[tuple[Tensor, Tensor]]:
        """One epoch's (images, labels) batches: a fresh order, each batch through :meth:`augment`."""
        import torch

        n, bs = len(self.x_train), self.cfg.batch_size
        order = torch.randperm(n, generator=gen, device=self.device)
        for i in range(0, n, bs):
            idx = order[i : i + bs]
            yield self.augment(self.inputs(self.x_train[idx]), gen), self.y_train[idx]

    def train_step(self, x: Tensor, y: Tensor, step: int, total: int) -> Tensor:
        """One optimizer step (``step`` of ``total`` taken before it); the loss, left on the device."""
        import torch.nn.functional as F

        with self.autocast():
            out = self.model(x)
            loss = F.cross_entropy(out.float(), y, label_smoothing=getattr(self.cfg, "label_smoothing", 0.0))
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.sched.step()
        return loss

    def accuracy_for_target(self) -> float:
        """Rank 0 evaluates; with several ranks its figure is broadcast so all stop together."""
        import torch

        acc = self.evaluate()["test_accuracy"] if self.ctx.rank == 0 else 0.0
        if self.ctx.world_size == 1:
            return acc
        import torch.distributed as dist

        figure = torch.tensor([acc], device=self.device)
        dist.broadcast(figure, src=0)
        return float(figure.item())

    def test_accuracy(self, batches: int | None = None) -> float:
        """The accuracy on the test split; of its first ``batches`` batches only where given (a count of the
        evaluation's bytes needs two: the second holds the first's logits beside its own, as every later one does)."""
        import torch

        self.net.eval()
        correct, seen = 0, 0
        bs = self.eval_batch()
        with torch.no_grad(), self.autocast():
            for i in range(0, len(self.x_test), bs)[:batches]:
                logits = self.logits(self.inputs(self.x_test[i : i + bs]))
                correct += (logits.argmax(1) == self.y_test[i : i + bs]).sum().item()
                seen += len(logits)
        return correct / seen

    def eval_batch(self) -> int:
        """``eval_batch_size``, at most the training batch under a framebuffer cap (it changes no figure, only the
        peak: mnist-torch at 2,000 images held 257 MiB to training's 230, past m60-1q's share on an H200)."""
        bs = self.cfg.eval_batch_size
        return min(bs, self.cfg.batch_size) if self.ctx.framebuffer_MiB is not None else bs

    def logits(self, x: Tensor) -> Tensor:
        """The evaluation's logits of a test batch (a recipe adds test-time augmentation here)."""
        return self.net(x)


def rank_device(torch: ModuleType, has_gpu: bool, rank: int) -> torch.device:
    """This rank's device: with GPUs, one per rank (``cuda:<rank>`` of the guest's visible GPUs, as
    ``suites.guest.ranks.init`` set it), never a bare "cuda" that would put every rank's model on one GPU."""
    if not has_gpu or not torch.cuda.is_available():
        return torch.device("cpu")
    count = torch.cuda.device_count()
    if rank >= count:
        raise RuntimeError(f"rank {rank} has no GPU of its own: the guest sees {count} GPU(s)")
    return torch.device("cuda", rank)


def cap_framebuffer(torch: ModuleType, device: torch.device, framebuffer_MiB: int | None,
                    context: Callable[[ModuleType, torch.device], tuple[float, str]] | None = None,
                    world: int = 1) -> JsonObject:
    """Bound this process's whole device footprint on ``device`` to the profile framebuffer, as a vGPU's does: the
    CUDA context (and the handles outside torch's allocator) is measured after start-up (``context``: how; default
    :func:`measure_context`) and the allocator gets the rest. The guest's info entries: the cap, the context, the
    allocator's share. sharing=mps adds a limit the driver enforces over the whole footprint. With ``world`` > 1
    ranks, NCCL's communicator (made at the first collective, after this) is outside the cap: said."""
    if device.type != "cuda":
        return {"framebuffer_cap": "not applied (no GPU)"}
    if framebuffer_MiB is None:
        return {"framebuffer_cap": "whole GPU"}
    ctx_MiB, how = (context or measure_context)(torch, device)
    total_MiB = torch.cuda.get_device_properties(device.index).total_memory / 2**20
    fraction = allocator_fraction(framebuffer_MiB, ctx_MiB, total_MiB)
    torch.cuda.set_per_process_memory_fraction(fraction, device.index)
    mps = " (sharing=mps: the driver's pinned limit counts the context too)" if os.environ.get(
        "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") else ""
    nccl = (f"; not counted: NCCL's communicator buffers of the {world} ranks, made after this (outside torch's "
            "allocator)") if world > 1 else ""
    return {"framebuffer_cap": f"{framebuffer_MiB} MiB: allocator {fraction * total_MiB:.0f} MiB + CUDA context "
                               f"{ctx_MiB:.0f} MiB ({how}){mps}{nccl}",
            "cuda_context_MiB": round(ctx_MiB, 1), "allocator_cap_MiB": round(fraction * total_MiB, 1)}


def allocator_fraction(framebuffer_MiB: float, context_MiB: float, total_MiB: float) -> float:
    """The share of the GPU torch's allocator may hold: the framebuffer less the context, or one BenchError line
    when the context alone does not fit it (an M60-0Q's 512 MiB on a current GPU)."""
    left = framebuffer_MiB - context_MiB
    if left <= 0:
        raise BenchError(f"{framebuffer_MiB:.0f} MiB framebuffer < {context_MiB:.0f} MiB CUDA context on this GPU: "
                         "nothing left for the guest's tensors (a profile with a larger framebuffer)")
    return min(1.0, left / total_MiB)
