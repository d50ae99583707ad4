"""Numerical checks of the ONNX graphs against the numpy reference: the hand-written backward
matches finite differences, and one train-step graph call equals one numpy Adam step.
Run: .venv/bin/python tests/test_graphs.py (train.sh runs it before training)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
import graphs  # noqa: E402


def _session(model):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _tiny_case(seed: int = 1):
    rng = np.random.default_rng(seed)
    p = graphs.init_predictor(rng)
    p["w2"] = (rng.standard_normal(p["w2"].shape) * 0.05).astype(np.float32)
    p["b1"] = (rng.standard_normal(p["b1"].shape) * 0.1).astype(np.float32)
    x = rng.standard_normal((6, graphs.EMBED)).astype(np.float32)
    y = rng.standard_normal((6, graphs.EMBED)).astype(np.float32)
    return rng, p, x, y


def test_numpy_gradients_match_finite_differences() -> None:
    rng, p, x, y = _tiny_case()
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    _, grads = graphs.predictor_loss_and_grads(p64, x.astype(np.float64), y.astype(np.float64))
    h = 1e-6
    for name in p64:
        for _ in range(8):
            idx = tuple(int(rng.integers(0, s)) for s in p64[name].shape)
            plus = {k: v.copy() for k, v in p64.items()}
            minus = {k: v.copy() for k, v in p64.items()}
            plus[name][idx] += h
            minus[name][idx] -= h
            lp, _ = graphs.predictor_loss_and_grads(plus, x, y)
            lm, _ = graphs.predictor_loss_and_grads(minus, x, y)
            numeric = (lp - lm) / (2 * h)
            analytic = grads[name][idx]
            assert abs(numeric - analytic) <= 1e-6 + 1e-4 * abs(numeric), (name, idx, numeric, analytic)


def test_train_step_graph_matches_numpy_adam() -> None:
    rng, p, x, y = _tiny_case(2)
    m = {k: (rng.standard_normal(v.shape) * 1e-3).astype(np.float32) for k, v in p.items()}
    v = {k: (rng.random(t.shape) * 1e-5).astype(np.float32) for k, t in p.items()}
    step, lr = 3, 1e-3
    loss_ref, grads = graphs.predictor_loss_and_grads(p, x, y)
    p_ref, m_ref, v_ref = graphs.adam_reference(p, m, v, grads, step, lr)
    sess = _session(graphs.build_train_step())
    feeds = {"x": x, "y": y, "step": np.array(step, np.float32), "lr": np.array(lr, np.float32), **p}
    feeds.update({"m_" + k: t for k, t in m.items()})
    feeds.update({"v_" + k: t for k, t in v.items()})
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(names, feeds)))
    assert abs(float(outs["loss"]) - loss_ref) < 1e-5 * max(1.0, loss_ref)
    for k in p:
        np.testing.assert_allclose(outs["m_" + k + "_new"], m_ref[k], rtol=1e-4, atol=1e-8)
        np.testing.assert_allclose(outs["v_" + k + "_new"], v_ref[k], rtol=1e-4, atol=1e-10)
        np.testing.assert_allclose(outs[k + "_new"], p_ref[k], rtol=1e-4, atol=1e-6)
    # The step lowers the loss on the same batch.
    new_p = {k: outs[k + "_new"] for k in p}
    assert graphs.predictor_loss_and_grads(new_p, x, y)[0] < loss_ref


def test_head_train_step_matches_numpy_adam_on_the_output_layer() -> None:
    rng, p, x, y = _tiny_case(6)
    head = ("w2", "b2")
    m = {k: (rng.standard_normal(p[k].shape) * 1e-3).astype(np.float32) for k in head}
    v = {k: (rng.random(p[k].shape) * 1e-5).astype(np.float32) for k in head}
    loss_ref, grads = graphs.predictor_loss_and_grads(p, x, y)
    p_ref, _, _ = graphs.adam_reference({k: p[k] for k in head}, m, v, {k: grads[k] for k in head}, 3, 1e-3)
    feats = _session(graphs.build_features()).run(["a"], {"x": x, "w1": p["w1"], "b1": p["b1"]})[0]
    np.testing.assert_allclose(feats, np.maximum(x @ p["w1"] + p["b1"], 0), rtol=1e-5, atol=1e-5)
    sess = _session(graphs.build_head_train_step())
    feeds = {"a": feats, "x": x, "y": y, "w2": p["w2"], "b2": p["b2"], "step": np.array(3, np.float32), "lr": np.array(1e-3, np.float32)}
    feeds.update({"m_" + k: m[k] for k in head})
    feeds.update({"v_" + k: v[k] for k in head})
    names = [o.name for o in sess.get_outputs()]
    outs = dict(zip(names, sess.run(names, feeds)))
    assert abs(float(outs["loss"]) - loss_ref) < 1e-5 * max(1.0, loss_ref)
    for k in head:
        np.testing.assert_allclose(outs[k + "_new"], p_ref[k], rtol=1e-4, atol=1e-6)


def test_head_ridge_graphs_match_numpy_solve() -> None:
    rng, p, _, _ = _tiny_case(7)
    x = rng.standard_normal((300, graphs.EMBED)).astype(np.float32)
    y = (x + 0.1 * rng.standard_normal((300, graphs.EMBED))).astype(np.float32)
    stats = _session(graphs.build_head_gram()).run(None, {"x": x, "y": y, "w1": p["w1"], "b1": p["b1"]})
    names = ["gram", "cross", "a_mean", "r_mean", "diag_mean"]
    feeds = dict(zip(names, stats))
    feeds.update({"w2": p["w2"], "lambda": np.array(0.01, np.float32)})
    w2, b2 = _session(graphs.build_head_ridge()).run(["w2_new", "b2_new"], feeds)
    w2_ref, b2_ref = graphs.ridge_reference(p, x, y, 0.01)
    assert np.max(np.abs(w2 - w2_ref)) < 2e-3 * max(1.0, np.max(np.abs(w2_ref))), np.max(np.abs(w2 - w2_ref))
    assert np.max(np.abs(b2 - b2_ref)) < 2e-3 * max(1.0, np.max(np.abs(b2_ref)))


def test_head_ridge_dual_graph_matches_numpy_solve_for_each_strength() -> None:
    rng, p, _, _ = _tiny_case(11)
    # Fewer pairs than features, as in a baseline of a few hundred points.
    x = rng.standard_normal((300, graphs.EMBED)).astype(np.float32)
    y = (x + 0.1 * rng.standard_normal((300, graphs.EMBED))).astype(np.float32)
    lambdas = [0.001, 0.01, 0.1]
    w2, b2 = _session(graphs.build_head_ridge_dual()).run(
        ["w2_new", "b2_new"],
        {"x": x, "y": y, "w1": p["w1"], "b1": p["b1"], "w2": p["w2"], "lambda": np.array(lambdas, np.float32)},
    )
    assert w2.shape == (3, graphs.HIDDEN_PRED, graphs.EMBED) and b2.shape == (3, graphs.EMBED)
    for i, lam in enumerate(lambdas):
        w2_ref, b2_ref = graphs.ridge_reference(p, x, y, lam)
        assert np.max(np.abs(w2[i] - w2_ref)) < 2e-3 * max(1.0, np.max(np.abs(w2_ref))), (lam, np.max(np.abs(w2[i] - w2_ref)))
        assert np.max(np.abs(b2[i] - b2_ref)) < 2e-3 * max(1.0, np.max(np.abs(b2_ref)))


def test_predictor_and_eval_graphs_match_numpy() -> None:
    _, p, x, y = _tiny_case(3)
    pred = _session(graphs.build_predictor()).run(["pred"], {"x": x, **p})[0]
    np.testing.assert_allclose(pred, graphs.predictor_forward(p, x), rtol=1e-5, atol=1e-5)
    loss = float(_session(graphs.build_eval()).run(["loss"], {"x": x, "y": y, **p})[0])
    assert abs(loss - graphs.predictor_loss_and_grads(p, x, y)[0]) < 1e-5


def test_encoder_graph_matches_numpy() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import train  # noqa: E402

    rng = np.random.default_rng(4)
    enc = {k: v for k, v in train._init_autoencoder(rng).items() if k in ("w1", "b1", "w2", "b2")}
    windows = (rng.standard_normal((5, graphs.WINDOW)) * 3).astype(np.float32)
    out = _session(graphs.build_encoder(enc)).run(["embedding"], {"window": windows})[0]
    np.testing.assert_allclose(out, train.encode_numpy(enc, windows), rtol=1e-4, atol=1e-4)


def test_autoencoder_gradients_match_finite_differences() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    import train  # noqa: E402

    rng = np.random.default_rng(5)
    p = {k: v.astype(np.float64) for k, v in train._init_autoencoder(rng).items()}
    x = rng.standard_normal((4, graphs.WINDOW)) * 2
    _, g = train._autoencoder_step(p, x)
    h = 1e-6
    for name in p:
        for _ in range(4):
            idx = tuple(int(rng.integers(0, s)) for s in p[name].shape)
            plus = {k: v.copy() for k, v in p.items()}
            minus = {k: v.copy() for k, v in p.items()}
            plus[name][idx] += h
            minus[name][idx] -= h
            numeric = (train._autoencoder_step(plus, x)[0] - train._autoencoder_step(minus, x)[0]) / (2 * h)
            assert abs(numeric - g[name][idx]) <= 1e-6 + 1e-4 * abs(numeric), (name, idx, numeric, g[name][idx])


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
