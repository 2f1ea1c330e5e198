"""Tests of ``suites/workloads/graphics/apitrace.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.workloads.graphics import apitrace


def test_parsers_read_eglretrace_output():
    assert apitrace.parse_rendered("junk\nRendered 5 frames in 0.0230524 secs, average of 216.897 fps\n") == (
        5, pytest.approx(0.0230524))
    text = "#\tCPU Duration\tGPU Duration\nframe\t1003053\t1043218\nframe\t140406\t83753\nframe\t461876\t302095\n"
    cpu, gpu = apitrace.parse_pframes(text, 2)  # the third line is teardown after the last swap
    assert cpu == pytest.approx([1.003053, 0.140406]) and gpu == pytest.approx([1.043218, 0.083753])
    with pytest.raises(Exception, match="no 'Rendered N frames' line: error: failed to open x.trace"):
        apitrace.parse_rendered("error: failed to open x.trace\n")


@pytest.mark.parametrize("path,kind", [("/dev/zero", "a character device"), ("/tmp", "a directory")])
def test_apitrace_trace_that_is_not_a_regular_file_says_what_it_is(path: str, kind: str):
    from suites.workloads.graphics.apitrace import info
    from suites.workloads.graphics.frametrace import TraceFormatError

    with pytest.raises(TraceFormatError, match=f"apitrace trace {path} is {kind}, not a regular file"):
        info(Path(path))
