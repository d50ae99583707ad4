"""Synthetic training series (the public training rows are read by public_data.py, not here).

Every series is a sum of a base shape (seasonal with one to three periods, trend, random walk,
regime switches between operating states), optional anomalies (spikes, level shifts, variance
shifts) and a noise type (Gaussian, Laplace, Student-t, uniform, AR(1), Poisson counts, quantised).
"""
from __future__ import annotations

import numpy as np

WINDOW = 64
WARMUP_POINTS = 32
PERIODS = (6, 12, 24, 48, 60, 96, 144, 168, 288)
FAMILIES = ("seasonal", "multi_seasonal", "trend_seasonal", "random_walk", "regime_switch", "flat_noise")


def robust_normalisation(values: np.ndarray) -> tuple[float, float]:
    """Median and MAD x 1.4826, with the same fallbacks as packages/model/src/normalisation.ts."""
    center = float(np.median(values))
    scale = float(np.median(np.abs(values - center))) * 1.4826
    floor = max(1e-6 * max(abs(center), 1.0), 1e-12)
    if scale < floor:
        scale = float(np.mean(np.abs(values - center))) * 1.2533
    if scale < floor:
        scale = floor
    return center, scale


def windows_of(normalised: np.ndarray) -> np.ndarray:
    """[N,64] windows ending at each point, the start padded with the first value."""
    padded = np.concatenate([np.full(WINDOW - 1, normalised[0]), normalised])
    idx = np.arange(len(normalised))[:, None] + np.arange(WINDOW)[None, :]
    return padded[idx].astype(np.float32)


def _noise(rng: np.random.Generator, n: int, level: float) -> np.ndarray:
    kind = rng.integers(0, 6)
    if kind == 0:
        return rng.standard_normal(n) * level
    if kind == 1:
        return rng.laplace(0, level / np.sqrt(2), n)
    if kind == 2:
        return rng.standard_t(3, n) * level * 0.6
    if kind == 3:
        return rng.uniform(-1, 1, n) * level * np.sqrt(3)
    if kind == 4:
        phi = rng.uniform(0.5, 0.95)
        e = rng.standard_normal(n) * level * np.sqrt(1 - phi * phi)
        out = np.empty(n)
        acc = 0.0
        for i in range(n):
            acc = phi * acc + e[i]
            out[i] = acc
        return out
    return (rng.standard_normal(n) * level).round(1)


def _seasonal(rng: np.random.Generator, n: int, count: int) -> np.ndarray:
    t = np.arange(n)
    out = np.zeros(n)
    for period in rng.choice(PERIODS, size=count, replace=False):
        amp = rng.uniform(0.5, 3.0)
        phase = rng.uniform(0, 2 * np.pi)
        shape = rng.integers(0, 3)
        wave = np.sin(2 * np.pi * t / period + phase)
        if shape == 1:
            wave = np.sign(wave) * np.abs(wave) ** 0.3  # squarish
        elif shape == 2:
            wave = 2 * ((t / period + phase) % 1.0) - 1  # sawtooth
        out += amp * wave
    return out


def _regime_switch(rng: np.random.Generator, n: int) -> np.ndarray:
    states = rng.integers(2, 4)
    levels = rng.uniform(-4, 4, states)
    amps = rng.uniform(0, 2, states)
    periods = rng.choice(PERIODS[:6], size=states)
    out = np.empty(n)
    state, i = 0, 0
    t = np.arange(n)
    while i < n:
        length = int(rng.integers(40, 400))
        j = min(n, i + length)
        out[i:j] = levels[state] + amps[state] * np.sin(2 * np.pi * t[i:j] / periods[state])
        state = (state + int(rng.integers(1, states))) % states
        i = j
    return out


def _anomalies(rng: np.random.Generator, x: np.ndarray, level: float) -> np.ndarray:
    n = len(x)
    x = x.copy()
    if rng.random() < 0.5:  # spikes
        for _ in range(int(rng.integers(1, 6))):
            i = int(rng.integers(0, n))
            x[i] += rng.choice([-1, 1]) * rng.uniform(5, 25) * max(level, 0.2)
    if rng.random() < 0.3:  # level shift
        i = int(rng.integers(n // 4, n))
        x[i:] += rng.choice([-1, 1]) * rng.uniform(2, 8) * max(level, 0.2)
    if rng.random() < 0.25:  # variance shift
        i = int(rng.integers(n // 4, n))
        x[i:] += rng.standard_normal(n - i) * rng.uniform(1, 4) * max(level, 0.2)
    return x


def make_series(rng: np.random.Generator, n: int) -> np.ndarray:
    family = FAMILIES[int(rng.integers(0, len(FAMILIES)))]
    t = np.arange(n)
    if family == "seasonal":
        base = _seasonal(rng, n, 1)
    elif family == "multi_seasonal":
        base = _seasonal(rng, n, int(rng.integers(2, 4)))
    elif family == "trend_seasonal":
        base = _seasonal(rng, n, 1) + rng.uniform(-4, 4) * t / n + rng.uniform(-2, 2) * (t / n) ** 2
    elif family == "random_walk":
        base = np.cumsum(rng.standard_normal(n) * rng.uniform(0.05, 0.5))
    elif family == "regime_switch":
        base = _regime_switch(rng, n)
    else:
        base = np.zeros(n)
    level = rng.uniform(0.05, 1.0)
    x = base + _noise(rng, n, level)
    x = _anomalies(rng, x, level)
    offset = rng.uniform(-100, 100)
    gain = 10 ** rng.uniform(-2, 3)
    x = offset + gain * x
    if rng.random() < 0.1:  # non-negative counts
        x = rng.poisson(np.clip(x - x.min() + 1, 0, 1e6)).astype(np.float64)
    return x


def make_corpus(seed: int, series_count: int, length: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [make_series(rng, length) for _ in range(series_count)]


def normalised_windows(series: np.ndarray) -> np.ndarray:
    center, scale = robust_normalisation(series)
    return windows_of((series - center) / scale)
