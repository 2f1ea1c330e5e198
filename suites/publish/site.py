"""``make catalog``'s site: one static HTML page (no server, no script) listing every bundle with its system and
verdict, then the figures people compare across sites side by side (each phase over its baseline: GPU vs CPU,
scaling over 1-4 GPUs, passthrough vs vGPU, CAD and ML beside each other per profile; images/s and the other raw
figures; a sizing's CAD users per GPU per profile), each with its 95 % interval and n, the reference study's
published figures beside them. Results that are not compliant are shown apart and marked.

Every figure is computed again from the bundle's raw repeats and every verdict judged again (a bundle's own
summaries and verdict are never shown as its). Every text a bundle brings is escaped, the page forbids scripts
(its Content-Security-Policy), and a plot is copied under a name this code makes.
"""

from __future__ import annotations

import datetime
import html
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suites.bundle import Bundle
from suites.publish import rules
from suites.publish.document import ratio_summary, summary
from suites.render.markdown import CSP
from suites.run.shield import Shield
from suites.validity import is_not_enforced

__all__ = ["Entry", "catalog_problem", "entries_of", "page", "write_site"]

STYLE = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}th{background:#f4f4f4;text-align:left}
.bad{color:#a00}.ok{color:#070}.pub{color:#555;font-style:italic}.n{color:#666;font-size:90%}
img{max-width:480px;border:1px solid #ddd;margin:4px}"""


@dataclass
class Entry:
    """One bundle as the catalog shows it: its document, its verdict judged here, its plots' new names."""

    key: str  # B1, B2, ...: its column
    bundle: Bundle
    verdicts: list[rules.Verdict]
    plots: dict[str, bytes]  # the catalog's own file name -> bytes

    @property
    def verdict(self) -> str:
        return rules.verdict_of(self.verdicts)

    @property
    def compliant(self) -> bool:
        return self.verdict in (rules.COMPLIANT, rules.PUBLISHED)


def entries_of(bundles: list[Bundle]) -> list[Entry]:
    out = []
    for i, b in enumerate(bundles, 1):
        plots = {f"b{i}-{n}.png": data for n, data in enumerate(b.plots.values(), 1)}
        out.append(Entry(f"B{i}", b, rules.judge(b.doc), plots))
    return out


def write_site(entries: list[Entry], refused: list[str], folder: Path) -> Path:
    """``folder``/index.html and its plots, built whole in a new folder beside it and then renamed into its place:
    an interrupt leaves the old catalog or the new one, never the old page beside new plots (round 7: SIGINT at 5 s
    did). ``folder`` is new, or a catalog this suite wrote (index.html and plots/ only: the caller checks it)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    try:
        (new / "plots").mkdir()
        for x in entries:
            for name, data in x.plots.items():
                (new / "plots" / name).write_bytes(data)
        (new / "index.html").write_text(page(entries, refused))
        old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
        with Shield(lambda line: print(line, file=sys.stderr), "putting the new catalog in place", give_up=None):
            if folder.exists():
                folder.rename(old)
            new.rename(folder)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return folder / "index.html"


def catalog_problem(folder: Path) -> str:
    """'' where ``folder`` may take a catalog (absent, empty, or one this suite wrote), else why not: it is
    replaced whole, so a folder of anything else is never touched."""
    if not folder.exists():
        return ""
    if not folder.is_dir() or folder.is_symlink():
        return "not a folder"
    extra = sorted(p.name for p in folder.iterdir() if p.name not in ("index.html", "plots"))
    if extra:
        return f"holds {extra[0][:60]!r}, not a catalog's (index.html and plots/): give a new folder"
    if (folder / "plots").exists() and (not (folder / "plots").is_dir() or (folder / "plots").is_symlink()):
        return "its plots is not a folder: give a new folder"
    return ""


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


def number(x: object) -> str:
    if not isinstance(x, (int, float)) or isinstance(x, bool) or not math.isfinite(x):
        return "–"
    return f"{x:,.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def cell(s: dict[str, Any], text: str = "", unit: str = "") -> str:
    """A median with its interval and n; a published figure as published."""
    if s["method"] == "published":
        value = s["median"]
        shown = f"{value:g}x: " if isinstance(value, (int, float)) and math.isfinite(value) else ""
        return f'<span class="pub">{e(shown)}{e(text)} (published)</span>'
    spread = f" [{number(s['low'])}, {number(s['high'])}]" if s["n"] >= 2 and s["low"] == s["low"] else ""
    return f'{e(number(s["median"]))}{e(unit)}{e(spread)} <span class="n">n={s["n"]}</span>'


def ratios(entry: Entry) -> dict[str, str]:
    """Its ratios' cells, each computed again from its figures' repeats (a published one as published)."""
    doc = entry.bundle.doc
    figs = {f["name"]: f for f in doc["figures"]}
    out = {}
    for r in doc["ratios"]:
        if doc["origin"] == "published":
            out[r["name"]] = cell(r["summary"], r.get("text", ""))
        elif r["of"] in figs and r["to"] in figs:
            of, to = figs[r["of"]], figs[r["to"]]
            # a CPU stand-in's ratio is its own row: never beside the reference study's GPU measurement
            name = r["name"] + (NO_GPU if any(is_not_enforced(f["validity"]) for f in (of, to)) else "")
            out[name] = cell(ratio_summary(of["values"], to["values"], r["summary"]["method"]), unit="x")
    return out


NO_GPU = " (no GPU: a CPU stand-in, not set beside the reference study's GPU figures)"


def figures(entry: Entry) -> dict[str, str]:
    return {f"{f['name']} ({f['unit']})": cell(summary(f["values"])) for f in entry.bundle.doc["figures"]}


def answers(entry: Entry) -> dict[str, str]:
    return {k: e(v) for k, v in entry.bundle.doc["answers"].items()}


def side_by_side(title: str, entries: list[Entry], cells: dict[str, dict[str, str]]) -> list[str]:
    rows = sorted({name for c in cells.values() for name in c})
    if not rows or not entries:
        return []
    head = "".join(f"<th>{e(x.key)}</th>" if x.compliant else f'<th class="bad">{e(x.key)} (not compliant)</th>'
                   for x in entries)
    body = ["<tr><td>" + e(name) + "</td>" + "".join(f"<td>{cells[x.key].get(name, '')}</td>" for x in entries)
            + "</tr>" for name in rows]
    return [f"<h3>{e(title)}</h3>", f"<table><tr><th>figure</th>{head}</tr>", *body, "</table>"]


def listing(entries: list[Entry]) -> list[str]:
    out = ["<table><tr><th></th><th>result</th><th>system</th><th>suite</th><th>verdict</th></tr>"]
    for x in entries:
        d = x.bundle.doc
        s = d["system"]
        system = (f"{s.get('gpu', '–')} × {s.get('gpu_count', '–')}; profile {s.get('profile', '–')} "
                  f"({s.get('gpu_access', '–')}): {s.get('enforcement', '–')}; CPU {s.get('cpu', '–')}")
        mark = "ok" if x.verdict == rules.COMPLIANT else ("pub" if x.verdict == rules.PUBLISHED else "bad")
        why = "".join(f"<li>{e(v.rule)}: {e(v.reason)}</li>" for v in x.verdicts if v.ok is False)
        out.append(f"<tr><td>{e(x.key)}</td><td>{e(d['title'])}<br><span class=\"n\">{e(d['run']['kind'])} "
                   f"{e(d['run']['scenario'])}, run {e(short_id(d['run']['id']))}, {e(d['run']['started'])}; "
                   f"<code>{e(d['command'])}</code></span></td><td>{e(system)}</td>"
                   f"<td>{e(d['suite']['commit'])}</td><td class=\"{mark}\">{e(x.verdict)}"
                   f"{'<ul>' + why + '</ul>' if why else ''}</td></tr>")
    return [*out, "</table>"]


def short_id(run_id: str) -> str:
    """An MLflow run id's first 8 hex digits; any other id whole ('reference-study' was 'referenc')."""
    return run_id[:8] if len(run_id) == 32 and all(c in "0123456789abcdef" for c in run_id) else run_id


def section(title: str, entries: list[Entry]) -> list[str]:
    return [f"<h2>{e(title)}</h2>", *listing(entries)] if entries else []


def compared(entries: list[Entry]) -> list[str]:
    """Every bundle's figures side by side, the compliant and published first, the others marked in their
    column's head."""
    entries = sorted(entries, key=lambda x: not x.compliant)
    plots = [f'<figure><img src="plots/{e(name)}" alt="{e(x.key)}: {e(x.bundle.title)}"><figcaption>{e(x.key)}: '
             f'{e(x.bundle.title)} ({e(x.verdict)})</figcaption></figure>' for x in entries for name in x.plots]
    return ["<h2>side by side</h2>",
            *side_by_side("each phase over its baseline (B / A, 95 % interval)", entries,
                          {x.key: ratios(x) for x in entries}),
            *side_by_side("figures (median [95 % interval of the mean], n repeats)", entries,
                          {x.key: figures(x) for x in entries}),
            *side_by_side("sizings: CAD users per GPU per profile, and the answer", entries,
                          {x.key: answers(x) for x in entries}),
            *(["<h3>plots</h3>", *plots] if plots else [])]


def page(entries: list[Entry], refused: list[str]) -> str:
    good = [x for x in entries if x.compliant]
    bad = [x for x in entries if not x.compliant]
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = ['<!doctype html><html lang="en"><head><meta charset="utf-8">',
             f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
             f"<title>gpu-mixed-bench results ({len(entries)})</title><style>{STYLE}</style></head><body>",
             f"<h1>gpu-mixed-bench results: {len(entries)} bundle(s)</h1>",
             f"<p>Built {e(when)}. Every figure is computed again from its bundle's raw repeats and every verdict "
             "judged again by the run rules (docs/run-rules.md); published figures are their authors', not "
             "measured by this suite.</p>",
             *section("compliant and published results", good),
             *section("not compliant (shown apart: see each verdict's rules)", bad), *compared(entries)]
    if refused:
        parts += ["<h2>bundles not read</h2><ul>", *(f"<li>{e(r)}</li>" for r in refused), "</ul>"]
    return "\n".join([*parts, "</body></html>"]) + "\n"
