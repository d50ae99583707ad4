"""Microsoft's time-series-anomaly-detector (the open-source release of the retired vendor's
univariate algorithms) in entire-series mode with its own defaults, on NAB dev or UCR dev.

    python vendor.py nab --data ../shared/datasets/nab_dev --out nab.json
    python vendor.py ucr --data ../shared/datasets/ucr_dev --out ucr.json

Every series is sent as the vendor API takes it: values without timestamps (granularity none,
as the harness sends NAB to our engine: some NAB files repeat or skip timestamps), cut into the
fewest equal consecutive requests of at most 8,640 points (the package refuses longer ones), no
parameters (its defaults: sensitivity 99, maxAnomalyRatio 0.25, period detected per request).

NAB: the flagged rows per file. UCR: the whole series is sent the same way and the three best
non-overlapping points of the test part are named, best first, ranked by (flagged, severity,
|value - expected|): the package's own flag and severity first, then how far the point lies from
its expected value, so a series where nothing is flagged still names a point.
"""
import argparse
import sys

from common import equal_parts, log, nab_files, nab_values, now_ms, top_locations, ucr_series, write_json

REQUEST_POINTS = 8640
TOP_K = 3
# Locations closer than this are one location for top-k: the UCR metric's smallest tolerance.
UCR_EXCLUSION = 100


def load_detector():
    import torch
    torch.set_num_threads(1)
    import anomaly_detector
    import anomaly_detector.univariate.univariate_anomaly_detection as uad
    from importlib.metadata import version

    captured = {}
    original = uad.get_margins

    # predict() computes a severity per point and drops it from its answer; keep it for ranking.
    def get_margins(*args, **kwargs):
        out = original(*args, **kwargs)
        captured['severity'] = out[6]
        return out

    uad.get_margins = get_margins
    return anomaly_detector.EntireAnomalyDetector, captured, version('time-series-anomaly-detector')


def detect(detector_class, captured, values):
    """(flags, severity, expected) for one request of at most REQUEST_POINTS values."""
    import pandas as pd
    captured.pop('severity', None)
    result = detector_class().predict(None, pd.DataFrame({'value': values}), {})
    flags = [bool(r['result']['is_anomaly']) for r in result]
    expected = [float(r['result']['expected_value']) for r in result]
    severity = [float(s) for s in captured.get('severity', [0.0] * len(values))]
    return flags, severity, expected


def run_series(detector_class, captured, values):
    flags, severity, expected, errors = [], [], [], []
    for start, end in equal_parts(len(values), REQUEST_POINTS):
        part = values[start:end]
        try:
            f, s, e = detect(detector_class, captured, part)
        except Exception as err:  # a failed request flags nothing, as a failed call would
            errors.append(f'rows {start}-{end - 1}: {type(err).__name__}: {err}')
            f, s, e = [False] * len(part), [0.0] * len(part), [float('nan')] * len(part)
        flags += f
        severity += s
        expected += e
    return flags, severity, expected, errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('dataset', choices=['nab', 'ucr'])
    parser.add_argument('--data', required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--limit', type=int, default=None, help='first N series only (a quick check)')
    args = parser.parse_args()

    started = now_ms()
    detector_class, captured, package_version = load_detector()
    payload = {
        'peer': 'time-series-anomaly-detector',
        'version': package_version,
        'mode': 'entire',
        'requestPoints': REQUEST_POINTS,
        'params': {},
    }
    if args.dataset == 'nab':
        files = nab_files(args.data)[:args.limit]
        out = []
        for i, file in enumerate(files):
            t = now_ms()
            values = nab_values(args.data, file)
            flags, _, _, errors = run_series(detector_class, captured, values)
            out.append({'file': file, 'rows': len(values), 'flagged': [r for r, f in enumerate(flags) if f],
                        'errors': errors, 'elapsedMs': round(now_ms() - t)})
            log(f'vendor nab {i + 1}/{len(files)} {file}: {sum(flags)} flagged, {len(errors)} failed requests, {now_ms() - t:.0f} ms')
        payload['files'] = out
    else:
        import numpy as np
        out = []
        for i, (name, train_end, values) in enumerate(ucr_series(args.data)):
            if args.limit is not None and i >= args.limit:
                break
            t = now_ms()
            flags, severity, expected, errors = run_series(detector_class, captured, values)
            test = slice(train_end, len(values))
            v = np.array(values[test])
            dev = np.abs(v - np.array(expected[test]))
            # lexicographic key as one float: flagged dominates severity dominates deviation
            order = np.lexsort((dev, np.array(severity[test]), np.array(flags[test])))
            rank = np.empty(len(order))
            rank[order] = np.arange(len(order))
            rank[~np.isfinite(dev)] = -np.inf
            picks = top_locations(rank, TOP_K, UCR_EXCLUSION)
            out.append({'file': name, 'n': len(values), 'trainEnd': train_end,
                        'locations': [train_end + p + 1 for p in picks],
                        'flaggedInTest': int(np.sum(flags[test])), 'errors': errors,
                        'elapsedMs': round(now_ms() - t)})
            log(f'vendor ucr {i + 1} {name}: {out[-1]["locations"]}, {now_ms() - t:.0f} ms')
            # written after every series, so a run stopped early still leaves what it finished
            write_json(args.out, {**payload, 'series': out, 'complete': False, 'elapsedMs': round(now_ms() - started)})
        payload['series'] = out
    payload['complete'] = True
    payload['elapsedMs'] = round(now_ms() - started)
    write_json(args.out, payload)
    return 0


if __name__ == '__main__':
    sys.exit(main())
