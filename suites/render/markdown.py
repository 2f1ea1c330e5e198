"""Markdown a report writes and the one page each report is also written as (compare.html, report.html,
sizing.html): every table through :func:`table`, every page through :func:`to_html`.

A cell's text may come from a store or a file (a set-up value, a run's name): it is one cell, whatever it holds. A
newline would end the row and start a line of its own (round 7: a set-up value added a fake row and an external
``<img>`` to compare.html), a ``|`` a cell of its own: both are shown, never acted on. A page escapes every text,
shows only the images its report wrote beside it (a plain file name), and forbids everything else by its
Content-Security-Policy (no script, no fetch elsewhere).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from pathlib import Path

from suites.errors import inert

__all__ = ["CSP", "REPORT_STYLE", "cell", "table", "to_html", "write_page"]

CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
# a report's page: a table never breaks a word or a number (round 7: "inconclusiv e", "+481. 9" under
# overflow-wrap:anywhere in a fixed layout of ~20 columns): cells wrap at spaces only, and a table wider than the page
# scrolls on its own
REPORT_STYLE = ("body{font-family:sans-serif;max-width:1100px}table{border-collapse:collapse;display:block;"
                "overflow-x:auto;max-width:100%}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;"
                "overflow-wrap:normal;word-break:keep-all;hyphens:none;font-size:13px}"
                "td{white-space:nowrap}th{min-width:4em}img{max-width:100%}"
                ".banner{border:2px solid #c00;padding:8px;font-weight:bold;color:#900}")
LOCAL_IMAGE = re.compile(r"^[A-Za-z0-9][\w.-]{0,120}\.png$")  # a figure the report wrote in its own folder


def cell(text: object) -> str:
    """``text`` as one Markdown table cell: line breaks shown as '⏎', a '|' as '¦', other control characters as
    their escapes (:func:`suites.errors.inert`)."""
    return inert(re.sub(r"\r\n|\r|\n|\u2028|\u2029", " ⏎ ", str(text)).replace("|", "¦"))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table's lines, every cell through :func:`cell`."""
    return [f"| {' | '.join(cell(h) for h in headers)} |", f"|{'---|' * len(headers)}",
            *(f"| {' | '.join(cell(c) for c in r)} |" for r in rows)]


def to_html(md_text: str, style: str = "") -> str:
    """A small Markdown subset (headings, tables, images, bold quotes, list items) to a standalone page."""
    body, in_table = [], False
    for line in md_text.splitlines():
        if line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            if set("".join(cells)) <= set("-"):
                continue
            tag = "th" if not in_table else "td"
            body.append(("<table>" if not in_table else "") + "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells)
                        + "</tr>")
            in_table = True
            continue
        if in_table:
            body.append("</table>")
            in_table = False
        body.append(block(line))
    page = ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\"><style>{style}</style></head><body>")
    return page + "\n".join(b for b in body if b) + ("</table>" if in_table else "") + "</body></html>\n"


def write_page(folder: Path, stem: str, md_text: str) -> list[Path]:
    """A report's ``<stem>.md`` and ``<stem>.html`` (the same text as a standalone page in the report style) in
    ``folder``, which exists: the two files written."""
    md, page = folder / f"{stem}.md", folder / f"{stem}.html"
    md.write_text(md_text)
    page.write_text(to_html(md_text, REPORT_STYLE))
    return [md, page]


def block(line: str) -> str:
    """One line that is not a table row, as HTML ('' for an empty one)."""
    if line.startswith("#"):
        level = min(len(line) - len(line.lstrip("#")), 6)
        return f"<h{level}>{html.escape(line.lstrip('#').strip())}</h{level}>"
    if line.startswith("![") and line.endswith(")") and "(" in line:
        src = line[line.index("(") + 1: -1]
        if LOCAL_IMAGE.match(src):
            return f'<p><img src="{html.escape(src)}" alt="{html.escape(src)}"></p>'
    if line.startswith("> "):
        return f'<p class="banner">{html.escape(line[2:].strip("* "))}</p>'
    if line.startswith("- "):
        return f"<li>{html.escape(line[2:])}</li>"
    return f"<p>{html.escape(line)}</p>" if line else ""
