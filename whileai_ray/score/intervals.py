"""Confidence intervals used by the scoring code, with no scipy.

* ``bootstrap_ci(values)`` -- the interval printed beside pass@1, pass^k and pass@k. It
  resamples *tasks* (one value per task), 2000 times, from a fixed generator, so the same
  values always give the same interval. It is the *expanded* percentile bootstrap
  (Hesterberg 2015, "What teachers should know about the bootstrap", section 3.4): the plain
  percentile interval (sorted resample means at index 50 and 1949) is too narrow for small
  task counts -- it uses a normal quantile and the divide-by-n spread, so on 40 tasks it
  covers the true mean about 93% of the time instead of 95%. The expanded version reads the
  sorted means at the tail share ``Phi(-sqrt(n/(n-1)) * t_{n-1})`` instead of 2.5%, which is
  index 50/1949 again once there are many tasks. It needs at least 3 tasks.
* ``wilson(successes, n)`` -- the Wilson score interval for one binomial proportion.
* ``t_quantile(p, df)`` / ``normal_quantile(p)`` -- Student-t and normal quantiles.

The resampler is ``numpy.random.default_rng(0)``: a private, seeded generator (never the
global one), vectorised because pure-Python resampling of 5,000 tasks x 2,000 resamples
takes seconds. From ``MULTINOMIAL_MIN_TASKS`` tasks on, when the values take few distinct
levels (a task's pass rate c/n does), ``bootstrap_ci`` draws how many times each level is
picked (one multinomial per resample) instead of every index: the same bootstrap
distribution, exactly, at a cost that no longer grows with the number of tasks (a
million-row pass@k has 250,000 tasks; drawing their indices 2,000 times takes ~14 s).
"""
from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

__all__ = ["bootstrap_ci", "bootstrap_means", "wilson", "t_quantile", "normal_quantile",
           "MIN_BOOTSTRAP_TASKS", "RESAMPLES"]

MIN_BOOTSTRAP_TASKS = 3
RESAMPLES = 2000
MULTINOMIAL_MIN_TASKS = 2000      # below this, every index is drawn (the figures tests pin stay put)
_CHUNK_CELLS = 2_000_000          # cap on one (resamples x tasks) index block


def normal_quantile(p: float) -> float:
    """Standard normal quantile (inverse CDF)."""
    return NormalDist().inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def _t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=512)
def t_quantile(p: float, df: float) -> float:
    """Student-t quantile for probability ``p`` and ``df`` degrees of freedom (df may be fractional)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile: p must be in (0, 1), got {p!r}")
    if not df > 0:
        raise ValueError(f"t_quantile: df must be > 0, got {df!r}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return 0.5 * (lo + hi)


def wilson(successes: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for ``successes`` out of ``n``; ``(0.0, 1.0)`` when n is 0."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson: need 0 <= successes <= n, got successes={successes!r}, n={n!r}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_means(values, resamples: int = RESAMPLES, seed: int = 0) -> np.ndarray:
    """Sorted means of ``resamples`` with-replacement resamples of ``values`` (fixed seed)."""
    vals = np.asarray(values, dtype=float)
    n = len(vals)
    rng = np.random.default_rng(seed)
    rows_per_chunk = max(1, _CHUNK_CELLS // max(n, 1))
    out = np.empty(resamples, dtype=float)
    for start in range(0, resamples, rows_per_chunk):
        stop = min(resamples, start + rows_per_chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = vals[idx].mean(axis=1)
    out.sort()
    return out


def _level_means(vals: np.ndarray, resamples: int, seed: int) -> np.ndarray | None:
    """Sorted resample means drawn per level (see the module docstring), or None when the
    values have too many distinct levels for it to pay."""
    levels, counts = np.unique(vals, return_counts=True)
    if len(levels) * 4 > len(vals):
        return None
    n = len(vals)
    draws = np.random.default_rng(seed).multinomial(n, counts / n, size=resamples)
    out = draws @ levels / n
    out.sort()
    return out


def tail_index(n: int, resamples: int = RESAMPLES, level: float = 0.95) -> int:
    """Index of the lower bound in the sorted resample means (expanded percentile)."""
    alpha = 1.0 - level
    z = math.sqrt(n / (n - 1.0)) * t_quantile(1.0 - alpha / 2.0, n - 1)
    share = NormalDist().cdf(-z)
    return min(int(resamples * share), resamples // 2 - 1)


def bootstrap_ci(values, *, resamples: int = RESAMPLES, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float] | None:
    """Expanded-percentile bootstrap interval for the mean of per-task ``values``.

    Returns None below 3 tasks. Identical values give the degenerate ``(v, v)``.
    """
    vals = np.asarray(values, dtype=float)
    n = len(vals)
    if n < MIN_BOOTSTRAP_TASKS:
        return None
    if (vals == vals[0]).all():
        return (float(vals[0]), float(vals[0]))
    means = _level_means(vals, resamples, seed) if n >= MULTINOMIAL_MIN_TASKS else None
    if means is None:
        means = bootstrap_means(vals, resamples, seed)
    lo_i = tail_index(n, resamples, level)
    return (float(means[lo_i]), float(means[resamples - 1 - lo_i]))
