"""pycuda micro-benchmarks: what a guest's share of a GPU actually delivers.

Device-to-device bandwidth (bytes read + written), FP32 and FP16 (half2) FMA
throughput from a small autotuned kernel, kernel-launch latency, and pinned
host<->device copy rates. Run inside guests, they show what a profile gets:
four guests time-slicing one GPU should each see about a quarter.

pycuda is optional (extra ``cuda``): it is built from source against the CUDA
toolkit. Without it, or without a GPU, :func:`run` returns ``status:
skipped`` with the reason instead of failing.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any, TypeAlias

from gpu_probe.shapes import JsonObject

# pycuda's driver module, or a module or kernel of it: imported where a probe runs, so untyped here
Cuda: TypeAlias = Any

# Four independent FMA chains per thread hide the FMA latency; the seed is a
# kernel argument so the compiler cannot fold the loop, and the result is
# written only under an impossible condition so the work is kept but no
# memory traffic is added.
KERNELS = r"""
#include <cuda_fp16.h>
extern "C" {
__global__ void noop() {}

__global__ void fma_f32(float *out, int iters, float seed) {
    float c = 1.0001f, d = 0.9999f;
    float x0 = seed + threadIdx.x, x1 = seed * 0.5f, x2 = x0 + 1.0f, x3 = x1 + 1.0f;
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 16; ++j) {
            x0 = fmaf(x0, c, d); x1 = fmaf(x1, c, d); x2 = fmaf(x2, c, d); x3 = fmaf(x3, c, d);
        }
    }
    float r = x0 + x1 + x2 + x3;
    if (r == -1.2345f) out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

__global__ void fma_f16(__half2 *out, int iters, float seed) {
    __half2 c = __float2half2_rn(1.0001f), d = __float2half2_rn(0.9999f);
    __half2 x0 = __float2half2_rn(seed + threadIdx.x), x1 = __float2half2_rn(seed * 0.5f);
    __half2 x2 = __hadd2(x0, c), x3 = __hadd2(x1, c);
    for (int i = 0; i < iters; ++i) {
        #pragma unroll
        for (int j = 0; j < 16; ++j) {
            x0 = __hfma2(x0, c, d); x1 = __hfma2(x1, c, d); x2 = __hfma2(x2, c, d); x3 = __hfma2(x3, c, d);
        }
    }
    __half2 r = __hadd2(__hadd2(x0, x1), __hadd2(x2, x3));
    if (__low2float(r) == -1.2345f) out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}
}
"""
FLOPS_PER_THREAD_ITER = {"fma_f32": 16 * 4 * 2, "fma_f16": 16 * 4 * 2 * 2}  # FMA = 2 flops; half2 = 2 lanes
BLOCK_SIZES = (128, 256, 512)


def unavailable() -> str | None:
    """Why probes cannot run here, or None when they can."""
    try:
        import pycuda.driver as cuda
    except ImportError:
        return "pycuda not installed (optional extra 'cuda', built against the CUDA toolkit; see README)"
    except Exception as exc:  # pycuda present but libcuda missing: no driver, no GPU
        return f"no GPU: pycuda cannot load the CUDA driver ({exc})"
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            return "no GPU: CUDA sees no device"
        major, minor = cuda.Device(0).compute_capability()
    except Exception as exc:
        return f"no GPU: {exc}"
    return nvcc_problem(f"{major}{minor}")


def nvcc_problem(arch: str) -> str | None:
    """Why the probe's kernels cannot be compiled here for ``sm_<arch>`` (pycuda's SourceModule runs ``nvcc`` at
    run time), or None. Asked before the first GPU second is spent: a host with pycuda but no toolkit, or one too
    old for the GPU (sm_90 needs CUDA 11.8), would end in a compile traceback."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return ("nvcc not found: the probe compiles its kernels at run time (install the CUDA toolkit, or put its "
                "bin/ on PATH)")
    try:
        listed = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"nvcc at {nvcc} does not run ({exc})"
    if listed.returncode != 0:
        return f"nvcc at {nvcc} cannot list its GPU architectures (CUDA older than 11?): a newer toolkit is needed"
    if f"compute_{arch}" not in listed.stdout.split():
        return (f"nvcc at {nvcc} cannot compile for this GPU (sm_{arch} not among its architectures): a CUDA "
                "toolkit that knows it is needed")
    return None


def _timed(cuda: Cuda, fn: Callable[[], None], repeats: int) -> float:
    """Median seconds of ``fn`` between CUDA events (device time, not host time)."""
    times = []
    for _ in range(repeats):
        start, end = cuda.Event(), cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.time_till(end) / 1000.0)
    return statistics.median(times)


def _copies(cuda: Cuda, nbytes: int) -> dict[str, float]:
    import numpy as np

    host = cuda.pagelocked_empty(nbytes, np.uint8)
    src, dst = cuda.mem_alloc(nbytes), cuda.mem_alloc(nbytes)
    try:
        cuda.memcpy_htod(src, host)
        return {
            "h2d_GBps": nbytes / _timed(cuda, lambda: cuda.memcpy_htod_async(dst, host), 10) / 1e9,
            "d2h_GBps": nbytes / _timed(cuda, lambda: cuda.memcpy_dtoh_async(host, src), 10) / 1e9,
            # a device copy reads and writes every byte
            "d2d_GBps": 2 * nbytes / _timed(cuda, lambda: cuda.memcpy_dtod_async(dst, src, nbytes), 10) / 1e9,
        }
    finally:
        src.free()
        dst.free()


def _flops(cuda: Cuda, module: Cuda, kernel: str, sms: int) -> tuple[float, int]:
    """Best TFLOP/s over block sizes (a small autotune), and the block size that won."""
    import numpy as np

    fn = module.get_function(kernel)
    out = cuda.mem_alloc(4 * 512 * sms * 8)
    best = (0.0, 0)
    for block in BLOCK_SIZES:
        grid = sms * (2048 // block)  # enough resident warps to fill every SM
        threads = grid * block
        fn(out, np.int32(1), np.float32(1.0), block=(block, 1, 1), grid=(grid, 1))  # load + warm up
        iters = 256
        while True:  # lengthen until one launch takes >= 20 ms, so launch cost is noise
            t = _timed(cuda, lambda it=iters, b=block, g=grid: fn(out, np.int32(it), np.float32(1.0),
                                                                   block=(b, 1, 1), grid=(g, 1)), 3)
            if t >= 0.02 or iters >= 1 << 20:
                break
            iters *= 2
        tflops = threads * iters * FLOPS_PER_THREAD_ITER[kernel] / t / 1e12
        best = max(best, (tflops, block))
    out.free()
    return best


def _launch_latency(cuda: Cuda, module: Cuda) -> dict[str, float]:
    noop = module.get_function("noop")
    noop(block=(1, 1, 1), grid=(1, 1))
    cuda.Context.synchronize()
    n = 2000
    t0 = time.perf_counter()
    for _ in range(n):
        noop(block=(1, 1, 1), grid=(1, 1))
    cuda.Context.synchronize()
    queued = (time.perf_counter() - t0) / n
    round_trips = []
    for _ in range(200):
        t0 = time.perf_counter()
        noop(block=(1, 1, 1), grid=(1, 1))
        cuda.Context.synchronize()
        round_trips.append(time.perf_counter() - t0)
    return {"launch_us": queued * 1e6, "launch_sync_us": statistics.median(round_trips) * 1e6}


def run(device: int = 0, size_MiB: int = 256, on_step: Callable[[], None] | None = None) -> JsonObject:
    """All probes on one device; ``on_step`` is called after each (for progress)."""
    reason = unavailable()
    if reason:
        return {"status": "skipped", "reason": reason}
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    step = on_step or (lambda: None)
    dev = cuda.Device(device)
    ctx = dev.make_context()
    try:
        sms = dev.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
        module = SourceModule(KERNELS, no_extern_c=True)
        metrics: dict[str, float] = {}
        metrics.update(_copies(cuda, size_MiB * 2**20))
        step()
        metrics["fp32_TFLOPS"], block32 = _flops(cuda, module, "fma_f32", sms)
        step()
        metrics["fp16_TFLOPS"], block16 = _flops(cuda, module, "fma_f16", sms)
        step()
        metrics.update(_launch_latency(cuda, module))
        step()
        return {"status": "ok", "device": dev.name(), "sms": sms, "size_MiB": size_MiB,
                "block_fp32": block32, "block_fp16": block16, "metrics": metrics}
    finally:
        ctx.pop()
