"""Checks of the public-data rule: only NAB's probationary rows before the first labelled window
are read, TCPD never is, and a missing folder fails clearly.
Run: .venv/bin/python tests/test_public_data.py (train.sh runs it before training)."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import public_data  # noqa: E402
import train  # noqa: E402


def test_probationary_rows_match_the_eval():
    # eval/src/nab-scorer.ts: Math.min(Math.floor(0.15 * rowCount), 750)
    for n, expected in ((0, 0), (6, 0), (7, 1), (1243, 186), (4032, 604), (5000, 750), (22695, 750)):
        assert public_data.probationary_rows(n) == expected, (n, public_data.probationary_rows(n))


def test_rows_stop_before_the_first_window():
    assert public_data.usable_rows(4032, []) == 604
    assert public_data.usable_rows(4032, [2000, 300]) == 300  # a window starting inside the prefix cuts it
    assert public_data.usable_rows(4032, [604]) == 604
    assert public_data.usable_rows(4032, [0]) == 0


def _fake_nab(root: Path) -> None:
    (root / "nab_dev" / "labels").mkdir(parents=True)
    (root / "nab_dev" / "data" / "x").mkdir(parents=True)
    rows = ["timestamp,value"] + [f"2020-01-01 {h:02d}:{m:02d}:00,{h * 60 + m}" for h in range(10) for m in range(60)]
    (root / "nab_dev" / "data" / "x" / "a.csv").write_text("\n".join(rows) + "\n")  # 600 rows
    (root / "nab_dev" / "data" / "x" / "b.csv").write_text("\n".join(rows) + "\n")
    (root / "nab_dev" / "labels" / "combined_windows.json").write_text(json.dumps({
        "x/a.csv": [["2020-01-01 01:10:00.000000", "2020-01-01 01:20:00.000000"]],  # starts at row 70
        "x/b.csv": [],
    }))


def test_loader_applies_the_rule_by_timestamp():
    with tempfile.TemporaryDirectory() as tmp:
        _fake_nab(Path(tmp))
        a, b = public_data.load_nab_prefixes(Path(tmp))
        assert (a.file, a.probationary_rows, a.first_window_row, a.rows) == ("x/a.csv", 90, 70, 70)
        assert list(a.values) == list(range(70))
        assert (b.first_window_row, b.rows, len(b.values)) == (None, 90, 90)


def test_missing_folder_fails_clearly():
    with tempfile.TemporaryDirectory() as tmp:
        try:
            public_data.load_nab_prefixes(Path(tmp) / "absent")
        except public_data.PublicDataUnavailable as err:
            assert "--synthetic-only" in str(err) and "--datasets" in str(err), str(err)
        else:
            raise AssertionError("no error for a missing datasets folder")


def test_real_selection_when_present():
    datasets = train.DEFAULT_DATASETS
    if not (datasets / "nab_dev").is_dir():
        print("     (skipped: no ../shared/datasets/nab_dev)")
        return
    prefixes = public_data.load_nab_prefixes(datasets)
    assert len(prefixes) == 35
    for p in prefixes:
        assert p.rows <= public_data.probationary_rows(p.total_rows), p.file
        assert p.first_window_row is None or p.rows <= p.first_window_row, p.file
        assert len(p.values) == p.rows, p.file
    assert not any("tcpd" in p.file.lower() for p in prefixes)


if __name__ == "__main__":
    tests = [v for k, v in dict(globals()).items() if k.startswith("test_") and callable(v)]
    failed = 0
    for test in tests:
        try:
            test()
            print(f"ok   {test.__name__}")
        except AssertionError as err:
            failed += 1
            print(f"FAIL {test.__name__}: {err}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
