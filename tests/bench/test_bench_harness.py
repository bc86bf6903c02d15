"""The benchmark's statistics on fixed inputs (the benchmark itself never runs in the suite)."""

from __future__ import annotations

import math

import pytest

from bench.api_latency import percentile, ratio


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        pytest.param([7.0], 50, 7.0, id="single-value"),
        pytest.param([7.0], 99, 7.0, id="single-value-p99"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 0, 1.0, id="p0-is-min"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 100, 4.0, id="p100-is-max"),
        pytest.param([3.0, 1.0, 2.0], 50, 2.0, id="odd-median-unsorted-input"),
        pytest.param([4.0, 1.0, 3.0, 2.0], 50, 2.5, id="even-median-interpolates"),
        pytest.param([float(n) for n in range(1, 101)], 99, 99.01, id="p99-of-1-to-100"),
        pytest.param([10.0, 20.0], 25, 12.5, id="interpolates-between-ranks"),
        pytest.param([1.0] * 99 + [1000.0], 99, 10.99, id="one-outlier-moves-p99"),
        pytest.param([1.0] * 99 + [1000.0], 50, 1.0, id="one-outlier-leaves-p50"),
    ],
)
def test_percentile(values, p, expected):
    assert percentile(values, p) == pytest.approx(expected)


def test_percentile_leaves_its_input_unsorted():
    values = [3.0, 1.0, 2.0]
    percentile(values, 50)
    assert values == [3.0, 1.0, 2.0]


@pytest.mark.parametrize(
    ("values", "p"),
    [
        pytest.param([], 50, id="no-values"),
        pytest.param([1.0], -1, id="p-below-0"),
        pytest.param([1.0], 100.5, id="p-above-100"),
    ],
)
def test_percentile_rejects(values, p):
    with pytest.raises(ValueError, match=r"percentile|between"):
        percentile(values, p)


@pytest.mark.parametrize(
    ("numerator", "denominator", "expected"),
    [
        pytest.param(10.0, 2.0, 5.0, id="five-times"),
        pytest.param(1.0, 4.0, 0.25, id="faster-than-floor"),
        pytest.param(3.3, 3.3, 1.0, id="equal"),
    ],
)
def test_ratio(numerator, denominator, expected):
    assert math.isclose(ratio(numerator, denominator), expected)


@pytest.mark.parametrize("denominator", [pytest.param(0.0, id="zero"), pytest.param(-1.0, id="negative")])
def test_ratio_rejects_a_floor_that_is_not_positive(denominator):
    with pytest.raises(ValueError, match="positive denominator"):
        ratio(1.0, denominator)
