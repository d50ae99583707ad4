"""Matrix-profile discords (stumpy) on UCR dev: per series, the AB-join of the test part against
the anomaly-free training part, so each test subsequence is scored by the z-normalised distance
to its nearest neighbour in the training data; the three largest, non-overlapping (at least m
apart), are the named locations, best first, at their subsequences' centres.

    python stumpy_ucr.py --data ../shared/datasets/ucr_dev --out ucr-stumpy.json

One rule for every series: the subsequence length m is the training part's dominant period, the
lag of the highest local maximum of its autocorrelation between MIN_M and MAX_M (MAX_M also at
most a third of the training part), or FALLBACK_M where the autocorrelation has no positive
local maximum there. Nothing is chosen per file.
"""
import argparse
import sys

from common import log, now_ms, top_locations, ucr_series, write_json

TOP_K = 3
MIN_M = 16
MAX_M = 400
FALLBACK_M = 100


def dominant_period(train):
    import numpy as np
    x = np.asarray(train, dtype=float)
    x = x - x.mean()
    n = len(x)
    hi = min(MAX_M, n // 3)
    if hi <= MIN_M or not np.any(x):
        return None
    spectrum = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(spectrum * np.conj(spectrum))[:hi + 2]
    acf = acf / acf[0]
    best, best_value = None, 0.0
    for lag in range(MIN_M, hi + 1):
        if acf[lag] > acf[lag - 1] and acf[lag] >= acf[lag + 1] and acf[lag] > best_value:
            best, best_value = lag, acf[lag]
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--data', required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--limit', type=int, default=None, help='first N series only (a quick check)')
    args = parser.parse_args()

    import numpy as np
    import stumpy

    started = now_ms()
    out = []
    payload = {
        'peer': 'stumpy',
        'version': stumpy.__version__,
        'method': 'AB-join of the test part against the training part; top discords',
        'rule': {'m': 'dominant period of the training part (autocorrelation)', 'minM': MIN_M,
                 'maxM': MAX_M, 'fallbackM': FALLBACK_M, 'exclusion': 'm'},
        'series': out,
        'complete': False,
    }
    for i, (name, train_end, values) in enumerate(ucr_series(args.data)):
        if args.limit is not None and i >= args.limit:
            break
        t = now_ms()
        train = np.asarray(values[:train_end], dtype=float)
        test = np.asarray(values[train_end:], dtype=float)
        period = dominant_period(train)
        m = period if period is not None else FALLBACK_M
        profile = stumpy.stump(test, m, T_B=train, ignore_trivial=False)[:, 0].astype(float)
        picks = top_locations(profile, TOP_K, m)
        out.append({'file': name, 'n': len(values), 'trainEnd': train_end, 'm': int(m),
                    'periodFound': period is not None,
                    'locations': [train_end + p + m // 2 + 1 for p in picks],
                    'elapsedMs': round(now_ms() - t)})
        log(f'stumpy ucr {i + 1} {name}: m {m}, {out[-1]["locations"]}, {now_ms() - t:.0f} ms')
        # written after every series, so a run stopped early still leaves what it finished
        write_json(args.out, {**payload, 'elapsedMs': round(now_ms() - started)})
    write_json(args.out, {**payload, 'complete': True, 'elapsedMs': round(now_ms() - started)})
    return 0


if __name__ == '__main__':
    sys.exit(main())
