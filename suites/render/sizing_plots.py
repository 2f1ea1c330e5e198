"""A sizing's figure: one panel per limited QoS metric, each measured profile's median by CAD guests per GPU with its
band to the upper 95 % bound, the metric's own limit as a line inside the axes, and every count marked by what it
is: meets QoS (green), misses (red), or inconclusive (grey: measured on noise, no verdict)."""

from __future__ import annotations

import math
from pathlib import Path

from suites.capacity.result import SizingResult, title_label
from suites.render.plots import pyplot, save, titled

__all__ = ["draw"]

MEETS, MISSES, INCONCLUSIVE = "tab:green", "tab:red", "tab:gray"


def finite(values: list[float]) -> list[float]:
    return [v for v in values if v == v and not math.isinf(v)]


def draw(result: SizingResult, folder: Path) -> list[Path]:
    """sizing.png (nothing where no profile was measured)."""
    if not result.capacities or not result.limits:
        return []
    plt = pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    metrics = list(result.limits)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.9), constrained_layout=True,
                             squeeze=False)
    doubt = bool(result.doubt)
    for ax, metric in zip(axes[0], metrics, strict=True):
        limit, seen = result.limits[metric], [result.limits[metric]]
        for profile, cap in result.capacities.items():
            xs = [r.guests for r in cap.readings]
            med = [r.median.get(metric, math.nan) for r in cap.readings]
            up = [r.upper.get(metric, math.nan) for r in cap.readings]
            line = ax.plot(xs, med, color="0.35" if doubt else None, label=profile, zorder=2)[0]
            ax.fill_between(xs, med, [u if u == u else m for u, m in zip(up, med, strict=True)],
                            color=line.get_color(), alpha=0.18)
            colours = [INCONCLUSIVE if doubt else MEETS if (r.median.get(metric, math.nan) <= limit) else MISSES
                       for r in cap.readings]
            ax.scatter(xs, med, c=colours, s=36, zorder=3, edgecolors="black", linewidths=0.4)
            seen += finite(med) + finite(up)
        ax.axhline(limit, color="red", linestyle="--", linewidth=1)
        low, high = min(0.0, *seen), max(seen)
        pad = 0.08 * ((high - low) or 1.0)
        ax.set_ylim(low - pad if low < 0 else 0.0, high + pad)  # the limit and every point within the axes
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # guest counts: whole numbers
        ax.set_title(f"{metric} (limit {limit:g})", fontsize=9)
        ax.set_xlabel("CAD guests per GPU (beside one ML guest)", fontsize=8)
        ax.grid(alpha=0.3)
    handles = [Line2D([], [], color="red", linestyle="--", label="QoS limit")] + [
        Line2D([], [], marker="o", linestyle="", color=c, label=text)
        for c, text in ((MEETS, "meets its limit (median)"), (MISSES, "misses it"),
                        (INCONCLUSIVE, "inconclusive (measured on noise)")) if (c == INCONCLUSIVE) == doubt]
    axes[0][0].legend(handles=[*axes[0][0].get_legend_handles_labels()[0], *handles], fontsize=7)
    title = "each QoS metric by CAD guests per GPU: median, band to the upper 95 % bound, its limit dashed"
    reasons = result.doubt.split("; to size:")[0].split("; ")  # the title's line: the first reason, the count
    titled(fig, title, title_label(result), reasons[0] + (f" (and {len(reasons) - 1} more: sizing.md)"
                                                          if len(reasons) > 1 else ""))
    return [save(fig, folder / "sizing.png", title, result.weakest)]
