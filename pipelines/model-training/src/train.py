"""Pretrains the encoder (as half of an autoencoder, numpy) and the generic predictor (by running
our own ONNX training-step graph with onnxruntime), then exports the ONNX graphs, the generic
weights, golden fixtures and the asset checksums.

Training data: the synthetic families (data.py) plus the training portions of public data, NAB's
probationary prefixes before any labelled window (public_data.py), read from --datasets (default
../shared/datasets from the repository root, as the eval reads it). --synthetic-only skips them.

Usage: python src/train.py --out ../../packages/model/assets --fixtures ../../packages/model/test/fixtures
       [--scale 1.0] [--seed 20261122] [--datasets DIR | --synthetic-only]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import data
import evaluate
import fixtures
import graphs
import public_data

MODEL_VERSION = "adp-jepa-0.2.0"
# A synthetic-only export is a development build, not the shipped model: its version says so.
SYNTHETIC_ONLY_SUFFIX = "-synthetic"
DEFAULT_DATASETS = Path(__file__).resolve().parents[3].parent / "shared" / "datasets"


# ---------------- encoder: autoencoder in numpy ----------------

def _init_autoencoder(rng: np.random.Generator) -> dict[str, np.ndarray]:
    def he(i: int, o: int) -> np.ndarray:
        return (rng.standard_normal((i, o)) * np.sqrt(2.0 / i)).astype(np.float32)

    return {
        "w1": he(graphs.WINDOW, graphs.HIDDEN_ENC), "b1": np.zeros(graphs.HIDDEN_ENC, np.float32),
        "w2": (he(graphs.HIDDEN_ENC, graphs.EMBED) * 0.7).astype(np.float32), "b2": np.zeros(graphs.EMBED, np.float32),
        "d1": he(graphs.EMBED, graphs.HIDDEN_ENC), "c1": np.zeros(graphs.HIDDEN_ENC, np.float32),
        "d2": (he(graphs.HIDDEN_ENC, graphs.WINDOW) * 0.5).astype(np.float32), "c2": np.zeros(graphs.WINDOW, np.float32),
    }


def encode_numpy(p: dict[str, np.ndarray], windows: np.ndarray) -> np.ndarray:
    s = np.arcsinh(windows)
    a = np.maximum(s @ p["w1"] + p["b1"], 0)
    z = a @ p["w2"] + p["b2"]
    mu = z.mean(1, keepdims=True)
    var = z.var(1, keepdims=True)
    return ((z - mu) / np.sqrt(var + graphs.LN_EPS)).astype(np.float32)


def _autoencoder_step(p, x):
    """Loss and gradients of mean((decoder(encoder(x)) - asinh(x))^2)."""
    s = np.arcsinh(x)
    h = s @ p["w1"] + p["b1"]
    a = np.maximum(h, 0)
    z = a @ p["w2"] + p["b2"]
    mu = z.mean(1, keepdims=True)
    inv = 1.0 / np.sqrt(z.var(1, keepdims=True) + graphs.LN_EPS)
    e = (z - mu) * inv
    hd = e @ p["d1"] + p["c1"]
    ad = np.maximum(hd, 0)
    r = ad @ p["d2"] + p["c2"]
    diff = r - s
    loss = float(np.mean(diff * diff))
    dr = 2 * diff / diff.size
    g = {"d2": ad.T @ dr, "c2": dr.sum(0)}
    dhd = np.where(hd > 0, dr @ p["d2"].T, 0)
    g["d1"] = e.T @ dhd
    g["c1"] = dhd.sum(0)
    de = dhd @ p["d1"].T
    dz = inv * (de - de.mean(1, keepdims=True) - e * (de * e).mean(1, keepdims=True))
    g["w2"] = a.T @ dz
    g["b2"] = dz.sum(0)
    dh = np.where(h > 0, dz @ p["w2"].T, 0)
    g["w1"] = s.T @ dh
    g["b1"] = dh.sum(0)
    return loss, g


def train_encoder(windows: np.ndarray, rng: np.random.Generator, epochs: int, batch: int, lr: float, log) -> dict:
    p = _init_autoencoder(rng)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    step = 0
    n = len(windows)
    for epoch in range(epochs):
        order = rng.permutation(n)
        total, count = 0.0, 0
        for start in range(0, n - batch + 1, batch):
            xb = windows[order[start:start + batch]]
            loss, g = _autoencoder_step(p, xb)
            step += 1
            lr_now = lr * 0.5 * (1 + np.cos(np.pi * step / (epochs * (n // batch))))
            p, m, v = graphs.adam_reference(p, m, v, g, step, lr_now)
            p = {k: x.astype(np.float32) for k, x in p.items()}
            total += loss
            count += 1
        log(f"encoder epoch {epoch + 1}/{epochs}: reconstruction loss {total / max(count, 1):.5f}")
    return {k: p[k] for k in ("w1", "b1", "w2", "b2")}


# ---------------- predictor: our ONNX train-step graph ----------------

def _session(model: onnx.ModelProto, threads: int) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def predictor_pairs(embeddings_per_series: list[np.ndarray], rng: np.random.Generator, per_series: int):
    """(e[t-1], e[t]) pairs for t >= WARMUP_POINTS, a random subset of `per_series` from each series."""
    xs, ys = [], []
    for e in embeddings_per_series:
        t = data.WARMUP_POINTS + rng.choice(len(e) - data.WARMUP_POINTS, per_series, replace=False)
        xs.append(e[t - 1])
        ys.append(e[t])
    return np.concatenate(xs), np.concatenate(ys)


def all_pairs(embeddings_per_series: list[np.ndarray]):
    """Every (e[t-1], e[t]) pair for t >= WARMUP_POINTS (the public prefixes are short: use them all)."""
    xs = [e[data.WARMUP_POINTS - 1:-1] for e in embeddings_per_series if len(e) > data.WARMUP_POINTS]
    ys = [e[data.WARMUP_POINTS:] for e in embeddings_per_series if len(e) > data.WARMUP_POINTS]
    return np.concatenate(xs), np.concatenate(ys)


def train_predictor(x, y, xv, yv, rng, epochs, batch, lr, threads, log):
    step_sess = _session(graphs.build_train_step(), threads)
    eval_sess = _session(graphs.build_eval(), threads)
    p = graphs.init_predictor(rng)
    m = {k: np.zeros_like(t) for k, t in p.items()}
    v = {k: np.zeros_like(t) for k, t in p.items()}
    names = [n for n, _ in graphs.PREDICTOR_TENSORS]
    out_names = ["loss"] + [f"{k}{n}_new" for n in names for k in ("", "m_", "v_")]
    step = 0
    total_steps = epochs * (len(x) // batch)
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        total, count = 0.0, 0
        for start in range(0, len(x) - batch + 1, batch):
            idx = order[start:start + batch]
            step += 1
            lr_now = lr * 0.5 * (1 + np.cos(np.pi * step / total_steps))
            feeds = {"x": x[idx], "y": y[idx], "step": np.array(step, np.float32), "lr": np.array(lr_now, np.float32)}
            feeds.update(p)
            feeds.update({"m_" + k: t for k, t in m.items()})
            feeds.update({"v_" + k: t for k, t in v.items()})
            outs = dict(zip(out_names, step_sess.run(out_names, feeds)))
            total += float(outs["loss"])
            count += 1
            for n in names:
                p[n], m[n], v[n] = outs[n + "_new"], outs["m_" + n + "_new"], outs["v_" + n + "_new"]
        val = float(eval_sess.run(["loss"], {"x": xv, "y": yv, **p})[0])
        log(f"predictor epoch {epoch + 1}/{epochs}: train loss {total / max(count, 1):.5f}, validation loss {val:.5f}")
    return p, val


# ---------------- export ----------------

def encode_weights(tensors: list[tuple[str, np.ndarray]]) -> bytes:
    """The byte format of packages/model/src/weights-codec.ts (ADPW v1), little-endian."""
    out = bytearray(b"ADPW")
    out += struct.pack("<II", 1, len(tensors))
    for name, arr in tensors:
        raw = name.encode("utf-8")
        out += struct.pack("<H", len(raw)) + raw
        out += struct.pack("<B", arr.ndim) + struct.pack("<" + "I" * arr.ndim, *arr.shape)
        out += np.ascontiguousarray(arr, dtype="<f4").tobytes()
    return bytes(out)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def weight_free_graphs() -> dict[str, onnx.ModelProto]:
    return {
        "predictor.onnx": graphs.build_predictor(),
        "predictor_train_step.onnx": graphs.build_train_step(),
        "predictor_eval.onnx": graphs.build_eval(),
        "predictor_features.onnx": graphs.build_features(),
        "predictor_head_train_step.onnx": graphs.build_head_train_step(),
        "predictor_head_gram.onnx": graphs.build_head_gram(),
        "predictor_head_ridge.onnx": graphs.build_head_ridge(),
        "predictor_head_ridge_dual.onnx": graphs.build_head_ridge_dual(),
    }


ASSET_ORDER = ("encoder.onnx", "predictor.onnx", "predictor_train_step.onnx", "predictor_eval.onnx",
               "predictor_features.onnx", "predictor_head_train_step.onnx", "predictor_head_gram.onnx",
               "predictor_head_ridge.onnx", "predictor_head_ridge_dual.onnx", "predictor_generic.bin")


def asset_entries(out: Path) -> dict:
    return {n: {"bytes": (out / n).stat().st_size, "sha256": sha256(out / n)} for n in ASSET_ORDER}


def rewrite_graphs_only(out: Path) -> None:
    """Re-exports the weight-free graphs and refreshes the manifest's checksums, keeping the trained
    encoder and generic weights (for a graph-only change without retraining)."""
    for name, model in weight_free_graphs().items():
        onnx.save(model, out / name)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["assets"] = asset_entries(out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--scale", type=float, default=1.0, help="shrinks the corpus and epochs while developing")
    ap.add_argument("--seed", type=int, default=20261122)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--graphs-only", action="store_true", help="re-export the weight-free graphs, keep the weights")
    ap.add_argument("--datasets", default=str(DEFAULT_DATASETS),
                    help="folder holding nab_dev/ (default: ../shared/datasets from the repository root)")
    ap.add_argument("--nab-encoder-repeats", type=int, default=0,
                    help="times every window of the NAB training prefixes joins the encoder's windows (default 0)")
    ap.add_argument("--nab-predictor-repeats", type=int, default=2,
                    help="times every pair of the NAB training prefixes joins the predictor's pairs (default 2)")
    ap.add_argument("--synthetic-only", action="store_true",
                    help="train on the synthetic families alone (a development build, version suffixed -synthetic)")
    args = ap.parse_args()
    if args.graphs_only:
        rewrite_graphs_only(Path(args.out))
        return
    # Read the public data first, so a missing folder fails before minutes of training.
    nab: list[public_data.NabPrefix] | None = None
    if not args.synthetic_only:
        try:
            nab = public_data.load_nab_prefixes(Path(args.datasets))
        except public_data.PublicDataUnavailable as err:
            sys.exit(f"error: {err}")
    model_version = MODEL_VERSION + (SYNTHETIC_ONLY_SUFFIX if nab is None else "")
    started = time.time()
    log_lines: list[str] = []

    def log(msg: str) -> None:
        line = f"[{time.time() - started:7.1f}s] {msg}"
        print(line, flush=True)
        log_lines.append(line)

    rng = np.random.default_rng(args.seed)
    settings = {
        "seed": args.seed,
        "scale": args.scale,
        "series": max(8, int(480 * args.scale)),
        "series_length": 1024,
        "validation_series": max(4, int(32 * args.scale)),
        "encoder_epochs": max(1, int(round(5 * args.scale))),
        "encoder_batch": 256,
        "encoder_lr": 2e-3,
        "encoder_windows_per_series": 128,
        "predictor_epochs": max(1, int(round(8 * args.scale))),
        "predictor_pairs_per_series": 256,
        "predictor_batch": 256,
        "predictor_lr": 1e-3,
        # Every pair of the NAB training prefixes joins the predictor's pairs twice (about a fifth of
        # them). The encoder stays on synthetic windows: with the NAB windows added (repeats 1, about
        # a fifth of its windows) the predictor's held-out error relative to predicting no change
        # rose on both validation sets and the NAB eval was no better (MODEL_CARD.md).
        "nab_encoder_repeats": args.nab_encoder_repeats,
        "nab_predictor_repeats": args.nab_predictor_repeats,
        "threads": args.threads,
    }
    corpus = data.make_corpus(args.seed, settings["series"], settings["series_length"])
    validation = data.make_corpus(args.seed + 1, settings["validation_series"], settings["series_length"])
    log(f"corpus: {len(corpus)} training and {len(validation)} validation series of {settings['series_length']} points")

    windows = np.concatenate([
        data.normalised_windows(s)[rng.choice(len(s), settings["encoder_windows_per_series"], replace=False)]
        for s in corpus
    ])
    nab_train = [p.values for p in nab if p.split == "train"] if nab is not None else []
    if nab is not None and settings["nab_encoder_repeats"] > 0:
        nab_windows = np.concatenate([data.normalised_windows(s) for s in nab_train])
        windows = np.concatenate([windows] + [nab_windows] * settings["nab_encoder_repeats"])
    if nab is not None:
        log(f"public data: NAB prefixes of {len(nab_train)} training files ({sum(map(len, nab_train))} rows), "
            f"{sum(q.split == 'validation' for q in nab)} validation files "
            f"({sum(q.rows for q in nab if q.split == 'validation')} rows); encoder windows: {len(windows)} "
            f"(NAB x {settings['nab_encoder_repeats']})")
    enc = train_encoder(windows, rng, settings["encoder_epochs"], settings["encoder_batch"], settings["encoder_lr"], log)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    encoder_model = graphs.build_encoder(enc)
    enc_sess = _session(encoder_model, args.threads)

    def embed(series_list):
        return [enc_sess.run(["embedding"], {"window": data.normalised_windows(s)})[0] for s in series_list]

    x, y = predictor_pairs(embed(corpus), rng, settings["predictor_pairs_per_series"])
    xv, yv = predictor_pairs(embed(validation), rng, settings["predictor_pairs_per_series"])
    if nab is not None:
        xn, yn = all_pairs(embed(nab_train))
        x = np.concatenate([x] + [xn] * settings["nab_predictor_repeats"])
        y = np.concatenate([y] + [yn] * settings["nab_predictor_repeats"])
        log(f"NAB predictor pairs: {len(xn)} x {settings['nab_predictor_repeats']}")
    log(f"predictor pairs: {len(x)} training, {len(xv)} validation; identity loss {float(np.mean((xv - yv) ** 2)):.5f}")
    p, val_loss = train_predictor(
        x, y, xv, yv, rng, settings["predictor_epochs"], settings["predictor_batch"], settings["predictor_lr"], args.threads, log
    )

    files = {"encoder.onnx": encoder_model, **weight_free_graphs()}
    for name, model in files.items():
        onnx.save(model, out / name)
    weights_bytes = encode_weights([(n, p[n]) for n, _ in graphs.PREDICTOR_TENSORS])
    (out / "predictor_generic.bin").write_bytes(weights_bytes)

    names = list(ASSET_ORDER)
    # Held-out loss over every point of the validation sets (the same rows evaluate.py uses for
    # any earlier model), written to the manifest and the card.
    heldout = {
        name: evaluate.heldout_loss(enc_sess, _session(files["predictor.onnx"], args.threads), p, series)
        for name, series in evaluate.validation_sets(
            args.seed, settings["validation_series"], settings["series_length"], nab).items()
    }
    for name, r in heldout.items():
        log(f"held-out {name}: loss {r['loss']:.5f} over {r['points']} points (identity {r['identity']:.5f})")
    if nab is not None:
        training_data = {
            "synthetic": True,
            "nab": {
                "rule": "rows [0, min(floor(0.15 * N), 750, first row of the first labelled window)) of each file",
                "validation_every": public_data.VALIDATION_EVERY,
                "train_rows": sum(q.rows for q in nab if q.split == "train"),
                "validation_rows": sum(q.rows for q in nab if q.split == "validation"),
                "selection_sha256": public_data.selection_digest(nab),
                "files": public_data.describe(nab),
            },
            "tcpd": False,
        }
    else:
        training_data = {"synthetic": True, "nab": None, "tcpd": False}

    manifest = {
        "modelVersion": model_version,
        "window": graphs.WINDOW,
        "embeddingDim": graphs.EMBED,
        "warmupPoints": data.WARMUP_POINTS,
        "parameters": {
            "encoder": int(sum(enc[k].size for k in enc)),
            "predictor": int(sum(p[k].size for k in p)),
        },
        "training": {**settings, "final_validation_loss": val_loss, "heldout": heldout,
                     "seconds": round(time.time() - started, 1)},
        "data": training_data,
        "assets": asset_entries(out),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")

    # Golden fixtures (pinned inputs, expected outputs) from the in-memory model; src/fixtures.py
    # writes the same from the exported files.
    pred_sess = _session(files["predictor.onnx"], args.threads)
    fixtures.write(Path(args.fixtures), fixtures.golden(enc_sess, pred_sess, p, model_version))
    (out / "training-log.txt").write_text("\n".join(log_lines) + "\n")
    log(f"done in {time.time() - started:.1f}s; wrote {', '.join(names)} to {out}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    main()
