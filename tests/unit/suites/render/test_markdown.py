"""Tests of ``suites/render/markdown.py``: a cell's text stays one cell whatever it holds, and a page shows only
what its report wrote (round 7: newlines in a set-up value added a fake row and an external <img> to compare.html,
which headless chromium fetched; no Content-Security-Policy)."""

from __future__ import annotations

from suites.render.markdown import CSP, table, to_html

EVIL = "x\n| forged | row |\n![pwn](http://198.51.100.7/pixel.png)\r\n<script>alert(1)</script>"


def test_a_cell_holding_newlines_and_bars_stays_one_cell_of_one_row():
    lines = table(("key", "A", "B"), [["setup.value", EVIL, "b|c"]])
    assert len(lines) == 3 and lines[2].count(" | ") == 2
    assert "⏎" in lines[2] and "¦" in lines[2] and "\n" not in lines[2]


def test_a_page_shows_only_its_own_images_escapes_all_text_and_forbids_the_rest():
    page = to_html("\n".join(["# t", *table(("k", "v"), [["a", EVIL]]), "![c](compare.png)",
                              "![x](http://198.51.100.7/pixel.png)", "![y](../../etc/img.png)"]))
    assert '<img src="compare.png"' in page and page.count("<img") == 1
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert f"content=\"{CSP}\"" in page and "default-src 'none'" in CSP
    assert page.count("<tr>") == 2  # the header and the one row: no forged row
