"""Tests of ``suites/workloads/fast_recipe.py``: the recipe's framework-free numbers."""

from __future__ import annotations

import numpy as np
import pytest

from suites.workloads import fast_recipe as recipe


def test_the_schedule_rises_to_its_peak_at_23_percent_then_falls_to_its_end_factor():
    total = 100
    assert recipe.lr_factor(0, total) == pytest.approx(0.2)
    assert recipe.lr_factor(23, total) == pytest.approx(1.0)
    assert recipe.lr_factor(11, total) == pytest.approx(0.2 + 0.8 * 11 / 23)
    assert recipe.lr_factor(total, total) == pytest.approx(0.07)


def test_lookahead_pulls_every_fifth_step_harder_with_progress_and_takes_the_average_at_the_end():
    assert recipe.lookahead_decays(4, 100) == []
    early, late = recipe.lookahead_decays(5, 100), recipe.lookahead_decays(95, 100)
    assert early == pytest.approx([0.95**5 * 0.05**3]) and late == pytest.approx([0.95**5 * 0.95**3])
    assert recipe.lookahead_decays(100, 100) == pytest.approx([0.95**5, 1.0])
    assert recipe.lookahead_decays(99, 100) == []


def test_decoupled_rates_divide_by_the_momentums_gain_and_decay_scales_with_the_batch():
    hyper = recipe.Hyper(lr=11.5, momentum=0.85, weight_decay=0.0153)
    gain = 1024 * (1 + 1 / 0.15)
    lr, decay = recipe.decoupled_rates(hyper, 512)
    assert lr == pytest.approx(11.5 / gain) and decay == pytest.approx(0.0153 * 512 / gain)
    assert recipe.decoupled_rates(hyper, 1024)[1] == pytest.approx(2 * decay)


def test_whitening_filters_decorrelate_numpy_patches_and_come_with_their_negatives():
    rng = np.random.default_rng(0)
    images = np.einsum("nchw,dc->ndhw", rng.standard_normal((100, 2, 12, 12)), [[1.0, 0.0], [0.9, 0.4]])
    filters = recipe.whitening_filters(images)
    assert filters.shape == (16, 2, 2, 2) and filters.dtype == np.float32
    np.testing.assert_allclose(filters[8:], -filters[:8])
    windows = np.lib.stride_tricks.sliding_window_view(images, (2, 2), axis=(2, 3))
    patches = windows.transpose(0, 2, 3, 1, 4, 5).reshape(-1, 8)
    out = patches @ filters[:8].reshape(8, -1).T
    cov = out.T @ out / len(out)
    assert np.allclose(np.diag(cov), 1, atol=0.01) and np.abs(cov - np.diag(np.diag(cov))).max() < 0.01


@pytest.mark.parametrize(("level", "expected"), [(0, 1.0), (1, 0.5 * 1 + 0.5 * 10), (2, None)])
def test_tta_averages_the_mirror_then_the_two_shifts(level: int, expected: float | None):
    predict = lambda x: x  # noqa: E731  # the "logits" are the inputs: each augmentation's weight shows
    mirror = lambda x: x * 10  # noqa: E731
    shifted = lambda x: (x * 100, x * 1000)  # noqa: E731
    out = recipe.tta(predict, np.array([1.0]), level, mirror, shifted)
    mirrored = lambda v: 0.5 * v + 0.5 * 10 * v  # noqa: E731
    want = expected if expected is not None else 0.5 * mirrored(1) + 0.5 * (0.5 * mirrored(100) + 0.5 * mirrored(1000))
    assert out[0] == pytest.approx(want)
