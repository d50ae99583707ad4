"""Held-out loss of an exported model (any assets folder) on the pipeline's validation sets: the
synthetic validation corpus (seed + 1) and the NAB prefix rows of the held-out files. Used by
train.py for the manifest, and on its own to measure an earlier model on the same rows:

  .venv/bin/python src/evaluate.py <assets dir> [--datasets DIR] [--seed 20261122] [--synthetic-only]

The number is the mean energy (the predictor's mean squared error in embedding space) over every
point t >= WARMUP_POINTS of every validation series, each series normalised by its own median and
MAD as in serving; `identity` is the same for predicting "no change" (e[t] = e[t-1]), a scale for
comparing models whose encoders differ.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

import data
import public_data


def decode_weights(raw: bytes) -> dict[str, np.ndarray]:
    """Reads the ADPW v1 format that train.encode_weights writes."""
    if raw[:4] != b"ADPW":
        raise ValueError("not an ADPW weights file")
    version, count = struct.unpack_from("<II", raw, 4)
    if version != 1:
        raise ValueError(f"ADPW version {version}")
    off = 12
    out: dict[str, np.ndarray] = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", raw, off)
        off += 2
        name = raw[off:off + name_len].decode("utf-8")
        off += name_len
        (ndim,) = struct.unpack_from("<B", raw, off)
        off += 1
        dims = struct.unpack_from("<" + "I" * ndim, raw, off)
        off += 4 * ndim
        size = int(np.prod(dims)) if ndim else 1
        out[name] = np.frombuffer(raw, dtype="<f4", count=size, offset=off).reshape(dims).astype(np.float32)
        off += 4 * size
    return out


def _session(path_or_bytes, threads: int) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path_or_bytes, so, providers=["CPUExecutionProvider"])


def heldout_loss(enc_sess, pred_sess, p: dict[str, np.ndarray], series_list: list[np.ndarray]) -> dict:
    total, identity, count = 0.0, 0.0, 0
    for s in series_list:
        if len(s) <= data.WARMUP_POINTS:
            continue
        e = enc_sess.run(["embedding"], {"window": data.normalised_windows(s)})[0].astype(np.float64)
        x, y = e[data.WARMUP_POINTS - 1:-1], e[data.WARMUP_POINTS:]
        pred = pred_sess.run(["pred"], {"x": x.astype(np.float32), **p})[0].astype(np.float64)
        total += float(np.sum(np.mean((pred - y) ** 2, axis=1)))
        identity += float(np.sum(np.mean((x - y) ** 2, axis=1)))
        count += len(y)
    return {"points": count, "loss": total / max(count, 1), "identity": identity / max(count, 1)}


def validation_sets(seed: int, validation_series: int, series_length: int,
                    nab: list[public_data.NabPrefix] | None) -> dict[str, list[np.ndarray]]:
    sets = {"synthetic_validation": data.make_corpus(seed + 1, validation_series, series_length)}
    if nab is not None:
        sets["nab_prefix_validation"] = [p.values for p in nab if p.split == "validation"]
    return sets


def evaluate_assets(assets: Path, sets: dict[str, list[np.ndarray]], threads: int) -> dict:
    enc = _session(str(assets / "encoder.onnx"), threads)
    pred = _session(str(assets / "predictor.onnx"), threads)
    p = decode_weights((assets / "predictor_generic.bin").read_bytes())
    return {name: heldout_loss(enc, pred, p, series) for name, series in sets.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("assets")
    ap.add_argument("--datasets", default=str(Path(__file__).resolve().parents[3].parent / "shared" / "datasets"))
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--validation-series", type=int, default=32)
    ap.add_argument("--series-length", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--synthetic-only", action="store_true")
    args = ap.parse_args()
    try:
        nab = None if args.synthetic_only else public_data.load_nab_prefixes(Path(args.datasets))
    except public_data.PublicDataUnavailable as err:
        sys.exit(f"error: {err}")
    assets = Path(args.assets)
    version = json.loads((assets / "manifest.json").read_text()).get("modelVersion")
    result = evaluate_assets(assets, validation_sets(args.seed, args.validation_series, args.series_length, nab), args.threads)
    print(json.dumps({"modelVersion": version, **result}, indent=2))


if __name__ == "__main__":
    main()
