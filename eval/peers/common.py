"""Shared reading and writing for the peer scripts (eval/peers/*.py).

The scripts read the datasets as the TypeScript harness does, run one peer with one setting for
every series, and write JSON that eval/src/peers.ts scores with the harness's own scorers. They
never score anything themselves.
"""
import json
import math
import os
import re
import sys
import time

# Single-threaded everywhere: the evaluation shares a small machine, and one setting of the
# thread count keeps the peers' timings comparable between runs.
for _var in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS', 'NUMBA_NUM_THREADS',
             'NUMEXPR_NUM_THREADS', 'VECLIB_MAXIMUM_THREADS'):
    os.environ.setdefault(_var, '1')

UCR_NAME = re.compile(r'^(\d+)_UCR_Anomaly_(.+)_(\d+)_(\d+)_(\d+)\.txt$')


def nab_files(nab_dir):
    """The labelled NAB files (paths relative to data/), in the harness's order."""
    with open(os.path.join(nab_dir, 'labels', 'combined_windows.json'), encoding='utf8') as f:
        return sorted(json.load(f).keys())


def nab_values(nab_dir, file):
    with open(os.path.join(nab_dir, 'data', file), encoding='utf8') as f:
        lines = [line.strip() for line in f if line.strip()]
    if lines[0] != 'timestamp,value':
        raise ValueError(f'{file}: unexpected header {lines[0]!r}')
    return [float(line.split(',', 1)[1]) for line in lines[1:]]


def ucr_series(ucr_dir):
    """(file name, trainEnd, values) per series, in file-name order; trainEnd is 1-based."""
    data = os.path.join(ucr_dir, 'data')
    for name in sorted(os.listdir(data)):
        m = UCR_NAME.match(name)
        if m is None:
            continue
        with open(os.path.join(data, name), encoding='utf8') as f:
            values = [float(v) for v in f.read().split()]
        yield name, int(m.group(3)), values


def equal_parts(n, limit):
    """[start, end) bounds of the fewest equal consecutive parts of at most `limit` rows."""
    parts = max(1, math.ceil(n / limit))
    return [((p * n) // parts, ((p + 1) * n) // parts) for p in range(parts)]


def top_locations(scores, count, exclusion):
    """Indices of the `count` best finite scores, each at least `exclusion` away from the others
    already chosen (the top-k metric's non-overlapping locations)."""
    import numpy as np
    s = np.array(scores, dtype=float)
    s[~np.isfinite(s)] = -np.inf
    chosen = []
    for _ in range(count):
        i = int(np.argmax(s))
        if not np.isfinite(s[i]):
            break
        chosen.append(i)
        s[max(0, i - exclusion + 1):i + exclusion] = -np.inf
    return chosen


def write_json(path, payload):
    tmp = f'{path}.tmp'
    with open(tmp, 'w', encoding='utf8') as f:
        json.dump(payload, f, separators=(',', ':'))
    os.replace(tmp, path)


def log(message):
    print(message, file=sys.stderr, flush=True)


def now_ms():
    return time.perf_counter() * 1000
