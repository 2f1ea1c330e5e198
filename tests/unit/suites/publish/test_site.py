"""Tests of ``suites/publish/site.py``: the catalog's page escapes everything a bundle brings, forbids scripts,
computes every figure again from the raw repeats, and sets results that are not compliant apart, marked."""

from __future__ import annotations

import json
import re

from suites.bundle import Bundle
from suites.bundle.archive import PNG_MAGIC, dumps
from suites.publish import rules
from suites.publish.document import document
from suites.publish.reference import reference_document
from suites.publish.site import CSP, entries_of, page, write_site
from tests.support.bundles import comparison, png

EVIL = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def measured(**edits: object) -> Bundle:
    rf = comparison({"1-gpu / mnist-torch train s": [10.0, 11.0, 12.0], "cpu / mnist-torch train s": [100.0, 104, 98]})
    doc = json.loads(dumps(document(rf, "python -m suites bench scenario=gpu-vs-cpu", [], "gpu-vs-cpu")))
    doc.update(edits)
    return Bundle(doc, {"plots/a.png": png()}, "x.bundle.tar.gz")


def test_a_bundles_text_is_escaped_and_the_page_runs_no_script(tmp_path):
    evil = measured(title=EVIL, command=EVIL)
    index = write_site(entries_of([Bundle(reference_document()), evil]), [f"bad.json: {EVIL}"], tmp_path)
    html = index.read_text()
    assert "<script" not in html and "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;document.title=&#x27;pwned&#x27;&lt;/script&gt;" in html
    assert f'content="{CSP}"' in html and "default-src 'none'" in CSP
    assert (tmp_path / "plots" / "b2-1.png").read_bytes().startswith(PNG_MAGIC)  # a name the catalog made


def test_figures_are_recomputed_from_the_repeats_never_taken_from_the_bundles_summary():
    forged = measured()
    forged.doc["figures"][0]["summary"]["median"] = 1.0  # edited by hand: the page shows the repeats' own
    forged.doc["ratios"][0]["summary"]["median"] = 99.0
    html = page(entries_of([forged]), [])
    assert re.search(r"<td>11 \[\d+\.?\d*, \d+\.?\d*\] <span class=\"n\">n=3</span></td>", html)
    assert "99" not in html.split("side by side")[1]
    assert "not compliant: " in html and "figures recompute" in html


def test_results_that_are_not_compliant_are_listed_apart_and_marked_beside_the_reference():
    good, bad = measured(), measured()
    bad.doc["setup"]["scale"] = "smoke"
    entries = entries_of([Bundle(reference_document()), good, bad])
    assert [e.verdict for e in entries][:2] == [rules.PUBLISHED, rules.COMPLIANT]
    html = page(entries, [])
    listed_good, rest = html.split("<h2>not compliant")
    assert "B2" in listed_good and "B3" not in listed_good.split("<h2>compliant")[1] and "B3" in rest
    assert '<th class="bad">B3 (not compliant)</th>' in html
    row = next(r for r in html.splitlines() if r.startswith("<tr><td>gpu-vs-cpu: cpu vs 1-gpu: mnist-torch train s"))
    assert "10.06x" in row and "(published)" in row and "9.45x [7.08, 11.9]" in row  # beside this host's


def test_a_cpu_stand_ins_ratio_is_never_set_beside_the_reference_studys_gpu_figure():
    """Round 7: the catalog set the reference study's GPU 10.06x beside a CPU-only ratio in one row, where make bench
    refuses to. A ratio whose figures were not enforced is a row of its own, said."""
    cpu = measured()
    for f in cpu.doc["figures"]:
        f["validity"] = "not enforced"
    html = page(entries_of([Bundle(reference_document()), cpu]), [])
    rows = [r for r in html.splitlines() if r.startswith("<tr><td>gpu-vs-cpu: cpu vs 1-gpu: mnist-torch train s")]
    published = next(r for r in rows if "(published)" in r)
    assert "9.45x" not in published and any("9.45x" in r and "no GPU: a CPU stand-in" in r for r in rows)


def test_the_reference_is_named_whole_and_every_plot_has_its_caption():
    """Round 7: the catalog's reference row said 'run referenc'; its plots had no captions."""
    html = page(entries_of([Bundle(reference_document()), measured()]), [])
    assert "run reference-study," in html and "run referenc," not in html
    assert re.search(r"<figure><img src=\"plots/b2-1.png\"[^>]*><figcaption>B2: [^<]+</figcaption></figure>", html)
