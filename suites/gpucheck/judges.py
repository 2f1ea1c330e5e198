"""What each ``make gpu-check`` check decides from what the suite wrote: pure functions, results in (the
``results.json`` dicts of its runs, gpu_probe's probe output), a :class:`Verdict` out. Each states its rule as
numbers (the constants below, also in docs/gpu-check.md) and fails, naming the guest and the figures, when the
figures do not hold it; tests feed each one results that fail it and results that pass it."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from gpu_probe import vocab
from gpu_probe.datasheet import datasheet
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import summarize
from suites.render.tables import fmt, unfold

OK, FAILED, SKIPPED, INCONCLUSIVE = "ok", "failed", "skipped", "inconclusive"
CIFAR_MAX_COV = 0.02  # b2/b3: images/s over 5 repeats
CIFAR_MIN_UTIL_PCT = 90.0
CAP_FILL = (0.90, 1.00)  # c1: a guest driven to its cap holds this share of its framebuffer, by NVML's count
DATASHEET_MIN = 0.50  # f: measured bandwidth and FMA throughput at least this share of the datasheet's
MPS_SHARE_SOLO_MAX = 0.40  # g: one guest at a 25 % share does at most this much of what the whole GPU does
MPS_SUM_TOLERANCE = 0.15  # g: the four guests together within this of the whole GPU


@dataclass
class Verdict:
    result: str  # ok | failed: why | skipped: why | inconclusive: why (a timing rule missed on a busy host)
    figure: str = ""
    data: JsonObject = field(default_factory=dict)


def failed(why: list[str] | str) -> str:
    whys = [why] if isinstance(why, str) else [w for w in why if w]
    return f"{FAILED}: {'; '.join(whys)}" if whys else OK


def guests(results: JsonObject) -> list[JsonObject]:
    return results.get("guests", [])


def metric(guest: JsonObject, key: str) -> float:
    value = guest["result"]["metrics"].get(key)
    return float(value) if isinstance(value, (int, float)) else math.nan


def shown(value: float, pattern: str, blank: str = "unmeasured") -> str:
    """A verdict's figure: :func:`suites.render.tables.fmt`, a figure nothing measured said in words."""
    return fmt(value, pattern, blank)


def not_ok(results: JsonObject) -> list[str]:
    """Why a run's guests did not all finish ok on their GPU."""
    out = []
    for g in guests(results):
        gid, r = g["result"]["guest_id"], g["result"]
        if r["status"] != "ok":
            out.append(f"guest {gid}: {r.get('error') or r['status']}")
        elif r.get("info", {}).get("device") == "cpu":
            out.append(f"guest {gid} trained on the CPU although the profile gave it a GPU")
    return out or ([] if guests(results) else ["no guest recorded"])


def inventory(gpus: list[JsonObject], driver: str | None) -> Verdict:
    """a: NVML named every GPU and its memory, and the driver."""
    missing = [f"GPU {i}: no {what}" for i, g in enumerate(gpus) for what, ok in
               (("name", bool(g.get("name"))), ("memory", isinstance(g.get(vocab.GPU_MEM_TOTAL.key), (int, float))))
               if not ok]
    missing += [] if gpus else ["NVML lists no GPU"]
    missing += [] if driver else ["no driver version"]
    g = gpus[0] if gpus else {}
    mem = g.get(vocab.GPU_MEM_TOTAL.key)
    figure = (f"{len(gpus)} x {g.get('name')}, driver {driver}, "
              f"{f'{mem:,.0f}' if isinstance(mem, (int, float)) else mem} MiB, MIG "
              f"{g.get('mig_mode') or 'n/a'}, virtualization {g.get('virtualization_mode') or 'n/a'}")
    return Verdict(failed(missing), figure)


def mnist(results: JsonObject, target: float = 0.99, max_epochs: float | None = None) -> Verdict:
    """b1: every guest ok on its GPU, and its time to ``target`` (evaluated at each epoch's end, as MLPerf times
    training): met within ``max_epochs``, after how many epochs said; missed at the cap is a failure naming it."""
    why = not_ok(results)
    if why:
        return Verdict(failed(why))
    g = guests(results)[0]
    acc, tta = metric(g, vocab.TEST_ACCURACY.key), metric(g, "time_to_accuracy_s")
    epochs = metric(g, "epochs_trained")
    within = f" of at most {max_epochs:g}" if max_epochs else ""
    after = f"after {epochs:g}{within} epoch(s)" if epochs == epochs else "epochs not reported"
    rate = f"{shown(metric(g, vocab.IMAGES_PER_SEC.key), '{:,.0f}')} images/s"
    reached = shown(acc, "{:.2%}", "no test accuracy")
    figure = f"{tta:.2f} s to {reached} {after}, {rate}" if tta == tta else f"{reached} {after}, {rate}"
    return Verdict(failed([f"reached {reached} < {target:.0%} {after}" if not acc >= target else "",
                           "no time_to_accuracy_s" if math.isnan(tta) and acc >= target else ""]), figure,
                   {"metrics": g["result"]})


def played(results: JsonObject, unplayed: str) -> Verdict:
    """A rehearsal's stand-in of a check whose rule rests on what only the real workload gives (``unplayed``): every
    guest ok, its window carrying a rate; the rest said."""
    why = not_ok(results)
    if why:
        return Verdict(failed(why))
    g = guests(results)[0]
    rate, train = metric(g, vocab.IMAGES_PER_SEC.key), metric(g, "train_time_s")
    blank = g["result"].get("info", {}).get("images_per_sec_blank")
    figure = (f"{shown(train, '{:.2f} s')} of training at the device's step, {shown(rate, '{:,.0f}')} images/s; "
              f"{unplayed}: not played")
    return Verdict(failed([f"its window carries no rate ({blank})" if blank else ""]), figure)


def cifar(results: JsonObject, timing_judged: bool = True, sampled: bool = True) -> Verdict:
    """b2/b3: images/s CoV <= 2 % over the repeats, GPU util >= 90 %, energy counted. Where ``timing_judged`` is
    false (b2: eager steps, whose rate waits on the CPU's kernel launches) a missed timing rule is a finding said
    with its figures, not a failure: the GPU is what it is there; the suite is wrong only where nothing is counted.
    Where nothing was ``sampled`` on a GPU (a rehearsal's stand-in), the CoV, util and energy are not judged, said:
    the played steps' spread is this host's (a CPU burner beside the rehearsal made b3's 'CoV > 2 %' in a CI run);
    that each repeat's window carries a rate still is."""
    why = not_ok(results)
    if why:
        return Verdict(failed(why))
    g = guests(results)[0]
    rates = [r["images_per_sec"] for r in g["result"].get("repeats") or []] or [metric(g, "images_per_sec")]
    blank = g["result"].get("info", {}).get("images_per_sec_blank")
    if blank or not all(r == r for r in rates):  # a window too short for a rate carries no CoV either
        return Verdict(failed(f"a repeat's timed window carries no rate ({blank or 'no images/s'}): too short "
                              "for a 2 % CoV"), f"images/s per repeat: {rates}")
    recompiled = g["result"].get("info", {}).get("recompiles_in_timed_repeats")
    s = summarize(rates)
    host = results.get("host_metrics", {})
    whole, energy = host.get("gpu0.util_pct.mean", math.nan), host.get(vocab.ENERGY.key, math.nan)
    # judged over the guest's timed windows: the whole run holds imports, data, compile and evaluations
    util = g["sampled"].get(f"{vocab.TIMED}gpu0.util_pct.mean", math.nan)
    where = (f"in its timed windows ({timed_count(g['sampled'])}; whole run {shown(whole, '{:.0f} %')})"
             if util == util else "(no sample inside a timed window)")
    figure = (f"{s.median:,.0f} images/s median of {s.n}, CoV {s.cov:.1%}; GPU util {shown(util, '{:.0f} %')} "
              f"{where}; energy {shown(energy, '{:,.0f} J', 'not counted')}"
              + (f"; {recompiled} recompile(s) inside timed repeats" if recompiled else ""))
    timing = [f"CoV {s.cov:.1%} > {CIFAR_MAX_COV:.0%}" if not s.cov <= CIFAR_MAX_COV else "",
              f"util {util:.1f} % < {CIFAR_MIN_UTIL_PCT:.0f} %" if not util >= CIFAR_MIN_UTIL_PCT else ""]
    if not sampled:  # a stand-in: the GPU's utilisation, energy and spread are the GPU's own, not played
        timing, energy = [], 1.0  # the played steps' spread is this host's scheduling of them (a busy host's: wide)
        figure += "; CoV, util and energy not judged (a stand-in: this host's spread, not the device's)"
    if not timing_judged and any(timing):
        figure += f"; finding: launch-bound without CUDA graphs ({'; '.join(w for w in timing if w)})"
        timing = []
    result = failed([*timing, "no energy counted" if not energy > 0 else ""])
    busy = results.get("host_busy") or ""
    if busy:  # other processes took CPU from the guest's launches: what they did to the spread is not the GPU's
        figure += f"; {busy}"
        if any(timing) and energy > 0:
            result = f"{INCONCLUSIVE}: {busy}: {'; '.join(w for w in timing if w)}: run again on a quiet host"
    return Verdict(result, figure, {"images_per_sec": rates, "median": s.median, "cov": s.cov, "util_pct": util,
                                    "energy_J": energy, "host_busy": busy})


def timed_count(sampled: JsonObject) -> str:
    """What a guest's timed utilisation averages: the driver's periods inside its windows, else the sampler's rows
    (whose readings lag a period: gpu_probe/windows.py)."""
    rows = f"{sampled.get(vocab.TIMED_SAMPLES, 0):.0f} samples"
    periods = sampled.get(f"{vocab.TIMED}gpu0.util_pct{vocab.PERIODS}")
    return f"{periods:.0f} driver periods wholly inside them, {rows}" if periods else \
        f"{rows}, the driver's own periods not kept"


def caps(results: JsonObject, framebuffer_MiB: float) -> Verdict:
    """c1: every guest, driven to its cap, held 90-100 % of its framebuffer by NVML's count (the whole footprint:
    context and allocator), never more, and was measured."""
    why = not_ok(results)
    if why:
        return Verdict(failed(why))
    lo, hi = (f * framebuffer_MiB for f in CAP_FILL)
    counted = {g["result"]["guest_id"]: guest_memory(g) for g in guests(results)}
    peaks = {gid: peak for gid, (peak, _) in counted.items()}
    off = [f"{gid} " + ("unmeasured" if math.isnan(peak) else
                        f"{peak:.0f} MiB" + (" > its framebuffer" if peak > hi else " < 90 % of it"))
           for gid, peak in peaks.items() if not lo <= peak <= hi]
    sources = sorted({source for _, source in counted.values()})
    figure = (", ".join(f"{gid} {shown(p, '{:.0f} MiB')}" for gid, p in peaks.items())
              + f" of {framebuffer_MiB:.0f} MiB each ({', '.join(sources)})")
    return Verdict(failed(f"outside [{lo:.0f}, {hi:.0f}] MiB: {', '.join(off)}" if off else []), figure,
                   {"peaks_MiB": peaks, "source": sources})


def guest_memory(g: JsonObject) -> tuple[float, str]:
    """A guest's GPU memory peak and where it comes from: NVML's per-process count, else (NVML could not attribute
    it: a container's PID namespace, MPS, MIG) the guest's own report (allocator peak + measured context)."""
    nvml = g["sampled"].get(f"{vocab.GUEST_GPU_MEM.key}.max", math.nan)
    if not math.isnan(nvml):
        return nvml, "NVML per-process"
    own = g["result"].get("metrics", {}).get(vocab.GUEST_GPU_MEM_SELF.key, math.nan)
    return own, ("self-reported" if not math.isnan(own) else "unmeasured")


def over_cap(results: JsonObject) -> Verdict:
    """c2: the guest past its cap fails with 'framebuffer cap exceeded', not a bare CUDA OOM."""
    g = guests(results)[0] if guests(results) else {"result": {"status": "missing", "error": ""}}
    error = g["result"].get("error") or ""
    ok = g["result"]["status"] == "failed" and error.startswith("framebuffer cap exceeded")
    return Verdict(OK if ok else failed(f"guest {g['result']['status']}: {error[:120] or 'no error'}"), error[:160])


def attribution(results: JsonObject) -> Verdict:
    """d: every guest of c1 holds GPU memory of its own processes (or the PID namespace mismatch is said)."""
    notes = results.get("sampler", {}).get("notes", [])
    if notes:
        own = [g for g in guests(results) if guest_memory(g)[1] == "self-reported"]
        return Verdict(f"{SKIPPED}: {notes[0]}" + ("; c1 judged the guests' self-reported memory" if own else ""))
    seen = {g["result"]["guest_id"]: (g["sampled"].get(f"{vocab.GUEST_GPU_MEM.key}.max", 0.0),
                                      g["sampled"].get(f"{vocab.GUEST_GPU_UTIL.key}.mean", math.nan))
            for g in guests(results)}
    missing = [gid for gid, (mem, _) in seen.items() if not mem > 0]
    figure = ", ".join(f"{gid}: {mem:.0f} MiB, SM {shown(util, '{:.0f} %')}" for gid, (mem, util) in seen.items())
    return Verdict(failed(f"no GPU memory attributed to {', '.join(missing)}" if missing else []), figure,
                   {"guests": seen})


def egl(results: JsonObject) -> Verdict:
    """e: an NVIDIA renderer on the guest's own EGL device, and every checked frame's pixels within the graphics
    suite's tolerance of its reference."""
    why = not_ok(results)
    if why:
        return Verdict(failed(why))
    g = guests(results)[0]
    info = g["result"].get("info", {})
    renderer, pixels = str(info.get("renderer", "?")), metric(g, vocab.PIXELS_OK.key)
    figure = (f"{renderer}; {info.get('egl_device', '?')}; composite {metric(g, vocab.COMPOSITE.key):,.0f} fps; "
              f"pixels {'match' if pixels == 1 else 'differ from the references'}")
    software = any(s in renderer.lower() for s in ("llvmpipe", "softpipe", "swrast"))
    return Verdict(failed(["software renderer (NVIDIA EGL vendor file not found?)" if software else "",
                           "pixels differ from the references beyond workload.tolerance_pct"
                           if pixels != 1 else ""]), figure, {"info": info})


def probe(out: JsonObject, gpu_name: str) -> Verdict:
    """f: device bandwidth and FP32 FMA throughput each at least 50 % of the GPU's datasheet figure."""
    if out.get("status") != "ok":
        return Verdict(failed(f"gpu_probe probe: {out.get('reason') or out.get('status')}"))
    m = out.get("metrics", {})
    sheet = datasheet(gpu_name)
    figure = ", ".join(f"{k} {v:,.1f}" for k, v in m.items() if isinstance(v, (int, float)))[:200]
    if sheet is None or sheet.bandwidth_GBps is None or sheet.fp32_TFLOPS is None:
        return Verdict(f"{SKIPPED}: no datasheet figures for {gpu_name!r} in gpu_probe/datasheet.py (figures: "
                       f"{figure})", figure, out)
    # a device copy reads and writes every byte: d2d_GBps counts both, as the datasheet's bandwidth does
    pairs = (("d2d_GBps", sheet.bandwidth_GBps, "device bandwidth", "GB/s"),
             ("fp32_TFLOPS", sheet.fp32_TFLOPS, "FP32 FMA", "TFLOP/s"))
    low = [f"{what} {shown(m.get(key, math.nan), '{:,.1f} ' + unit)} < {DATASHEET_MIN:.0%} of the datasheet's "
           f"{ref:,.1f}"
           for key, ref, what, unit in pairs if not m.get(key, math.nan) >= DATASHEET_MIN * ref]
    return Verdict(failed(low), f"{figure} (datasheet {sheet.name}: {sheet.bandwidth_GBps:,.0f} GB/s, "
                   f"{sheet.fp32_TFLOPS:,.1f} TFLOP/s)", out)


def mps(full: JsonObject, share: JsonObject, four: JsonObject, key: str = "fp32_TFLOPS") -> Verdict:
    """g: on a workload that saturates the SMs, one guest at its share does <= 0.40 of one with the whole GPU (the
    share is applied), and the four guests at their shares together do the whole GPU's within 15 % (shared, not
    lost)."""
    why = [*not_ok(full), *not_ok(share), *not_ok(four)]
    if why:
        return Verdict(failed(why))
    whole, one = metric(guests(full)[0], key), metric(guests(share)[0], key)
    each = {g["result"]["guest_id"]: metric(g, key) for g in guests(four)}
    ratio, total = one / whole, sum(each.values()) / whole
    promised = guests(share)[0]["result"].get("info", {}).get("mps_active_thread_pct", "?")
    figure = (f"whole GPU {whole:,.2f} {key}; one guest at {promised} %: {ratio:.2f} of it; four together "
              f"{total:.2f} of it ({', '.join(f'{g} {v:,.2f}' for g, v in each.items())})")
    return Verdict(failed([f"one guest at its share did {ratio:.2f} > {MPS_SHARE_SOLO_MAX:.2f} of the whole GPU "
                           "(share not applied?)" if not ratio <= MPS_SHARE_SOLO_MAX else "",
                           f"four guests together did {total:.2f} of the whole GPU, not within "
                           f"{MPS_SUM_TOLERANCE:.0%} of 1" if not abs(total - 1) <= MPS_SUM_TOLERANCE else ""]),
                   figure, {"whole": whole, "share_ratio": ratio, "four_sum_ratio": total, "four": each})


def study(returncode: int, stdout: str, stderr: str) -> Verdict:
    """h: the study wrote its report; every part it ran finished (exit 0)."""
    report = [ln for ln in unfold(stdout).splitlines() if ln.startswith("study: ") and "report.html" in ln]
    if returncode not in (0, 1) or not report:
        errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
        return Verdict(failed((errors or [f"exit {returncode}, no report"])[-1]))
    plan = re.search(r"; sizes (\w+), (\d+) repeat\(s\) per phase", unfold(stdout))
    sizes = f"; {plan[1]} sizes, {plan[2]} repeat(s) per phase (its plan)" if plan else ""
    return Verdict(OK if returncode == 0 else failed("a part failed (exit 1)"), report[-1][len("study: "):] + sizes)


# --- the suite's own commands on the GPU (c3, i, j, k, l) ----------------------------------------------------------
def caps_in_profiles(runs: dict[str, JsonObject], framebuffers: dict[str, float], images: int,
                     counted: bool = True) -> Verdict:
    """c3: mnist-torch with all ``images`` in each profile finished within its framebuffer (its need, tensors' peak
    + context, counted by the guest: ``gpu_mem_need_MiB``), never stopped at its cap. A need not counted fails (the
    rule rests on it), unless nothing could count it (``counted`` false: a rehearsal's stand-in has no CUDA
    allocator; make rehearse counts the tensors beside it), where it is said."""
    why, cells = [], []
    for profile, res in runs.items():
        bad = not_ok(res)
        if bad:
            why.append(f"{profile}: {'; '.join(bad)}")
            continue
        g = guests(res)[0]
        need, trained = metric(g, vocab.GUEST_GPU_MEM_NEED.key), g["result"].get("info", {}).get("train_images")
        blank = "need not counted" if counted else "need not played"
        cells.append(f"{profile} {shown(need, '{:,.0f}', blank)} of {framebuffers[profile]:,.0f} MiB")
        if need != need and counted:
            why.append(f"{profile}: its need (the tensors' peak + the CUDA context) was not counted")
        if trained is not None and trained < images:
            why.append(f"{profile}: trained on {trained:,} images, not all {images:,}")
        if need == need and need > framebuffers[profile]:
            why.append(f"{profile}: needs {need:,.0f} MiB > its {framebuffers[profile]:,.0f} MiB framebuffer")
    uncounted = "" if counted else " (a stand-in has no CUDA allocator: the memory table counts the need)"
    return Verdict(failed(why), "; ".join(cells) + uncounted if cells else "no profile ran", {"profiles": list(runs)})


def comparison_rows(rows: list[dict[str, str]], phase: str) -> Verdict:
    """i: a comparison's ``phase`` has its time ratio with a 95 % interval and a verdict (not inconclusive); every
    phase finished."""
    bad = [f"{r['label']}: {r['status']}" for r in rows if r.get("status") not in ("ok", "")]
    row = next((r for r in rows if r.get("label") == phase), None)
    if row is None:
        return Verdict(failed(bad + [f"no {phase} row in comparison.csv"]))
    lo, hi = float(row.get("time_x_ci_low") or "nan"), float(row.get("time_x_ci_high") or "nan")
    bounded = lo == lo and hi == hi
    spread = f"[{lo:.2f}, {hi:.2f}]" if bounded else "(no interval)"
    figure = f"{phase} time {float(row['time_x']):.2f}x {spread}, {row['time_verdict']} (n={row['n']})"
    interval = "" if bounded else f"{phase}: no interval"
    busy = row["time_verdict"].startswith(INCONCLUSIVE)
    result = failed([*bad, interval])
    if result == OK and busy:
        result = f"{INCONCLUSIVE}: {row['time_verdict']}"
    return Verdict(result, figure)


def mixed_phase(phase: JsonObject, min_overlap_pct: float) -> Verdict:
    """j: a mixed CAD + ML phase: every guest ok, their timed windows overlapping >= ``min_overlap_pct``."""
    why = not_ok(phase)
    overlap = float(phase.get("host_metrics", {}).get(vocab.OVERLAP.key, math.nan))
    figure = f"overlap {shown(overlap, '{:.0f} %')} of {len(guests(phase))} guests' timed windows"
    short = f"overlap {shown(overlap, '{:.0f} %')} < {min_overlap_pct:g} %" if not overlap >= min_overlap_pct else ""
    return Verdict(failed([*why, short]), figure)


def command_answer(returncode: int, stdout: str, stderr: str, said: str, answer: str) -> Verdict:
    """k, l: a command (make size, make compare) exited 0 (compare: 0 or 1, its gate) and printed its report's
    line (``said``: its first word) and a line holding ``answer``; an answer of 'inconclusive' is said so."""
    lines = unfold(stdout).splitlines()
    report = [ln for ln in lines if ln.startswith(f"{said}: ") and ".html" in ln]
    found = [row_said(lines, i) for i, ln in enumerate(lines) if answer in ln]
    if returncode not in (0, 1) or not report:
        errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
        return Verdict(failed((errors or [f"exit {returncode}, no report"])[-1]))
    if not found:
        return Verdict(failed(f"no line with {answer!r}"), report[-1])
    text = found[0]
    return Verdict(f"{INCONCLUSIVE}: {text}" if "inconclusive" in text else OK, text[:300])


def cells(line: str, rule: str) -> list[str]:
    return [c.strip() for c in line.strip().strip(rule).split(rule)]


def row_said(lines: list[str], at: int) -> str:
    """Line ``at`` as a verdict's figure says it: a table's row (make compare's) with the lines its cells wrap onto
    and its columns' names ('figure: fixed-step images/s; A median (n): 257,027 (1); ...'), a plain line as it is."""
    if "│" not in lines[at]:
        return lines[at].strip()
    row = cells(lines[at], "│")
    for more in lines[at + 1:]:  # a wrapped row goes on in lines whose first cell is empty
        extra = cells(more, "│") if "│" in more else []
        if len(extra) != len(row) or extra[0]:
            break
        row = [f"{c} {e}".strip() for c, e in zip(row, extra, strict=True)]
    top = next((i for i in range(at - 1, -1, -1) if lines[i].lstrip().startswith("┏")), None)
    names = cells(lines[top + 1], "┃") if top is not None and top + 1 < at and "┃" in lines[top + 1] else []
    pairs = zip(names, row, strict=True) if len(names) == len(row) else (("", c) for c in row)
    return "; ".join(f"{name}: {cell}" if name else cell for name, cell in pairs if cell)
