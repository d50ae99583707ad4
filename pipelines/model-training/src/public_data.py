"""The training portions of public data: NAB's probationary prefixes, nothing else.

NAB lets a detector learn from the first min(floor(0.15 * N), 750) rows of each N-row file (its
probationary period, `probationaryRows` in eval/src/nab-scorer.ts) and scores only the rows after
it. We take those rows and additionally stop before the first row of the first labelled window
(windows are matched to rows by timestamp, as eval/src/nab-data.ts does), so no row inside or
after an anomaly window is ever learned from. TCPD has no training split and is never read; UCR
dev's training parts are not read either (its terms allow evaluation only).

The rows are split by file into training and validation (every VALIDATION_EVERY-th file in sorted
order is held out), so the validation loss measures series the model has never seen.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

NAB_DIR = "nab_dev"
VALIDATION_EVERY = 5  # files 4, 9, 14, ... (0-based, sorted by path) are held out for validation


class PublicDataUnavailable(Exception):
    """The datasets folder or a file in it is missing; the message says how to proceed."""


@dataclass(frozen=True)
class NabPrefix:
    file: str  # path relative to nab_dev/data, as combined_windows.json names it
    total_rows: int
    probationary_rows: int
    first_window_row: int | None  # first row of the first labelled window, None when unlabelled
    rows: int  # rows [0, rows) are used
    split: str  # "train" or "validation"
    values: np.ndarray


def probationary_rows(row_count: int) -> int:
    """NAB's probationary period, as eval/src/nab-scorer.ts probationaryRows."""
    return min(int(np.floor(0.15 * row_count)), 750)


def usable_rows(row_count: int, window_start_rows: list[int]) -> int:
    """Rows [0, n) that a detector may learn from: inside the probationary period and before the
    first labelled window starts."""
    n = probationary_rows(row_count)
    if window_start_rows:
        n = min(n, min(window_start_rows))
    return max(n, 0)


def _timestamp_ms(text: str) -> int:
    text = text.strip().replace("T", " ")
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    dt = datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
    return int(round(dt.timestamp() * 1000))


def _read_csv(path: Path) -> tuple[list[int], np.ndarray]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    if not lines or lines[0].strip() != "timestamp,value":
        raise PublicDataUnavailable(f"{path}: expected a 'timestamp,value' header")
    stamps, values = [], []
    for line in lines[1:]:
        ts, value = line.split(",", 1)
        stamps.append(_timestamp_ms(ts))
        values.append(float(value))
    return stamps, np.asarray(values, dtype=np.float64)


def _window_start_row(stamps: list[int], start_ms: int, end_ms: int, file: str) -> int:
    for i, t in enumerate(stamps):
        if start_ms <= t <= end_ms:
            return i
    raise PublicDataUnavailable(f"{file}: a labelled window matches no rows")


def load_nab_prefixes(datasets_dir: Path) -> list[NabPrefix]:
    root = datasets_dir / NAB_DIR
    windows_path = root / "labels" / "combined_windows.json"
    if not windows_path.is_file() or not (root / "data").is_dir():
        raise PublicDataUnavailable(
            f"public data not found: {windows_path} (and {root / 'data'}) must exist.\n"
            f"Pass --datasets DIR (the folder holding nab_dev/, default ../shared/datasets from the "
            f"repository root), or --synthetic-only to train on the synthetic families alone "
            f"(train.sh: DATASETS=DIR or SYNTHETIC_ONLY=1)."
        )
    windows = json.loads(windows_path.read_text())
    out: list[NabPrefix] = []
    for index, file in enumerate(sorted(windows)):
        csv = root / "data" / file
        if not csv.is_file():
            raise PublicDataUnavailable(f"public data incomplete: {csv} is named in {windows_path} but missing")
        stamps, values = _read_csv(csv)
        starts = [_window_start_row(stamps, _timestamp_ms(a), _timestamp_ms(b), file) for a, b in windows[file]]
        rows = usable_rows(len(values), starts)
        out.append(NabPrefix(
            file=file,
            total_rows=len(values),
            probationary_rows=probationary_rows(len(values)),
            first_window_row=min(starts) if starts else None,
            rows=rows,
            split="validation" if index % VALIDATION_EVERY == VALIDATION_EVERY - 1 else "train",
            values=values[:rows].copy(),
        ))
    return out


def selection_digest(prefixes: list[NabPrefix]) -> str:
    """SHA-256 over the file names, row counts and float64 values used, so a changed copy of the
    data set shows up in the manifest."""
    h = hashlib.sha256()
    for p in prefixes:
        h.update(f"{p.file}\0{p.rows}\0{p.split}\0".encode())
        h.update(np.ascontiguousarray(p.values, dtype="<f8").tobytes())
    return h.hexdigest()


def describe(prefixes: list[NabPrefix]) -> list[dict]:
    """The manifest's record of exactly which rows were used."""
    return [
        {
            "file": p.file,
            "total_rows": p.total_rows,
            "probationary_rows": p.probationary_rows,
            "first_window_row": p.first_window_row,
            "rows_used": [0, p.rows],
            "count": p.rows,
            "split": p.split,
        }
        for p in prefixes
    ]
