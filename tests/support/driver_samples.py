"""A busy GPU's sampler rows and the driver's own utilisation samples, recorded or lagging, for the timed-window
readers (gpu_probe/windows.py, the sampler, the b2 judge)."""

from __future__ import annotations

from gpu_probe.trace import FORMAT

T0 = 1_795_697_537.0


PERIOD = 1 / 6  # the driver's sample period (1/6 s to 1 s by product)


WINDOWS = [(T0 + 1.0, T0 + 3.0), (T0 + 4.0, T0 + 6.0)]


def busy(t: float) -> bool:
    return any(a <= t <= b for a, b in WINDOWS)


def lagging_rows() -> list[dict[str, float]]:
    """10 Hz rows whose utilisation is the driver's last finished period, 0.2 s late: idle at each window's start."""
    return [{"t_s": k / 10, "gpu0.util_pct": 99.0 if busy(T0 + k / 10 - 0.2) else 0.0,
             "gpu0.power_W": 500.0 if busy(T0 + k / 10) else 80.0} for k in range(70)]


def driver_samples(start: float = T0, end: float = T0 + 7.0) -> list[tuple[float, float]]:
    """The driver's periods: 99 % where the period lies in a window, 0 % outside, a share where it straddles."""
    out, t = [], start
    while t + PERIOD <= end:
        a, b = t, t + PERIOD
        ran = sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in WINDOWS) / PERIOD
        out.append((b, round(99.0 * ran, 3)))
        t = b
    return out


def trace(samples: list[dict]) -> dict:
    return {"format": FORMAT, "version": 1, "static": {
        "nvmlDeviceGetCount()": 1, "nvmlDeviceGetHandleByIndex(0)": "gpu0",
        "nvmlDeviceGetUtilizationRates(gpu0)": {"gpu": 0, "memory": 0},
        "nvmlDeviceGetSamples(gpu0,1)": [1, samples]}, "frames": []}
