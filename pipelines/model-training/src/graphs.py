"""ONNX graphs of the model, built with the `onnx` helper API (no deep-learning framework).

encoder.onnx            window [N,64] -> embedding [N,192]; weights are initializers (frozen).
predictor.onnx          embedding [N,192] + weights (graph inputs) -> predicted next embedding [N,192].
predictor_train_step.onnx  weights, Adam moments, step, lr, X [B,192], Y [B,192]
                        -> updated weights and moments, batch loss (forward, hand-written backward, Adam).
predictor_eval.onnx     weights, X, Y -> loss (early stopping).

The predictor is residual: pred = x + W2^T relu(W1^T x + b1) + b2, so a zero MLP predicts "no change".
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
WINDOW = 64
HIDDEN_ENC = 256
EMBED = 192
HIDDEN_PRED = 1200
LN_EPS = 1e-5
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPS = 1e-8

PREDICTOR_TENSORS = (("w1", (EMBED, HIDDEN_PRED)), ("b1", (HIDDEN_PRED,)), ("w2", (HIDDEN_PRED, EMBED)), ("b2", (EMBED,)))


def _model(graph: onnx.GraphProto, doc: str) -> onnx.ModelProto:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="adp-model-training")
    model.ir_version = 8  # readable by every onnxruntime >= 1.14
    model.doc_string = doc
    onnx.checker.check_model(model, full_check=True)
    return model


def _f32(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _const(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def build_encoder(params: dict[str, np.ndarray]) -> onnx.ModelProto:
    """asinh-squashed window -> Linear 64->256 -> ReLU -> Linear 256->192 -> LayerNorm (no affine)."""
    inits = [numpy_helper.from_array(params[k].astype(np.float32), "enc_" + k) for k in ("w1", "b1", "w2", "b2")]
    inits += [_const("ln_scale", np.ones(EMBED)), _const("ln_bias", np.zeros(EMBED))]
    nodes = [
        helper.make_node("Asinh", ["window"], ["squashed"]),
        helper.make_node("MatMul", ["squashed", "enc_w1"], ["h_mm"]),
        helper.make_node("Add", ["h_mm", "enc_b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("MatMul", ["a", "enc_w2"], ["z_mm"]),
        helper.make_node("Add", ["z_mm", "enc_b2"], ["z"]),
        helper.make_node("LayerNormalization", ["z", "ln_scale", "ln_bias"], ["embedding"], axis=-1, epsilon=LN_EPS),
    ]
    graph = helper.make_graph(nodes, "encoder", [_f32("window", ["N", WINDOW])], [_f32("embedding", ["N", EMBED])], inits)
    return _model(graph, "Window encoder: [N,64] normalised window -> [N,192] embedding.")


def _weight_inputs(prefix: str = "") -> list[onnx.ValueInfoProto]:
    return [_f32(prefix + name, shape) for name, shape in PREDICTOR_TENSORS]


def _forward_nodes() -> list[onnx.NodeProto]:
    return [
        helper.make_node("MatMul", ["x", "w1"], ["h_mm"]),
        helper.make_node("Add", ["h_mm", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["a"]),
        helper.make_node("MatMul", ["a", "w2"], ["o_mm"]),
        helper.make_node("Add", ["o_mm", "b2"], ["o"]),
        helper.make_node("Add", ["x", "o"], ["pred"]),
    ]


def _loss_nodes() -> list[onnx.NodeProto]:
    # loss = mean over all B*192 elements of (pred - y)^2; count is dynamic (Size of the batch).
    return [
        helper.make_node("Sub", ["pred", "y"], ["diff"]),
        helper.make_node("Mul", ["diff", "diff"], ["sq"]),
        helper.make_node("ReduceSum", ["sq"], ["sq_sum"], keepdims=0),
        helper.make_node("Size", ["diff"], ["count_i"]),
        helper.make_node("Cast", ["count_i"], ["count"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["sq_sum", "count"], ["loss"]),
    ]


def build_predictor() -> onnx.ModelProto:
    graph = helper.make_graph(
        _forward_nodes(), "predictor", [_f32("x", ["N", EMBED]), *_weight_inputs()], [_f32("pred", ["N", EMBED])]
    )
    return _model(graph, "Residual MLP predictor 192-1200-192; weights are inputs so fine-tuned ones can be fed.")


def build_eval() -> onnx.ModelProto:
    graph = helper.make_graph(
        _forward_nodes() + _loss_nodes(),
        "predictor_eval",
        [_f32("x", ["B", EMBED]), _f32("y", ["B", EMBED]), *_weight_inputs()],
        [_f32("loss", [])],
    )
    return _model(graph, "Predictor loss (mean squared error) on a batch, for early stopping.")


def _adam_inits(with_zero: bool = True) -> list[onnx.TensorProto]:
    return [_const("zero", 0.0)] * with_zero + [
        _const("two", 2.0),
        _const("one", 1.0),
        _const("beta1", ADAM_BETA1),
        _const("beta2", ADAM_BETA2),
        _const("one_minus_beta1", 1.0 - ADAM_BETA1),
        _const("one_minus_beta2", 1.0 - ADAM_BETA2),
        _const("adam_eps", ADAM_EPS),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0"),
    ]


def _adam_nodes(tensors):
    """Adam update of each (name, shape) from gradient g_<name>; returns nodes and output specs."""
    nodes = []
    # Adam with bias correction; `step` is the 1-based count of this update.
    nodes += [
        helper.make_node("Pow", ["beta1", "step"], ["beta1_t"]),
        helper.make_node("Pow", ["beta2", "step"], ["beta2_t"]),
        helper.make_node("Sub", ["one", "beta1_t"], ["bc1"]),
        helper.make_node("Sub", ["one", "beta2_t"], ["bc2"]),
        # lr_t = lr * sqrt(bc2) / bc1; eps_t = eps * sqrt(bc2) (the same update as with m_hat, v_hat)
        helper.make_node("Sqrt", ["bc2"], ["sqrt_bc2"]),
        helper.make_node("Mul", ["lr", "sqrt_bc2"], ["lr_num"]),
        helper.make_node("Div", ["lr_num", "bc1"], ["lr_t"]),
        helper.make_node("Mul", ["adam_eps", "sqrt_bc2"], ["eps_t"]),
    ]
    outputs = []
    for name, shape in tensors:
        g, m, v = "g_" + name, "m_" + name, "v_" + name
        nodes += [
            helper.make_node("Mul", [m, "beta1"], [m + "_decay"]),
            helper.make_node("Mul", [g, "one_minus_beta1"], [m + "_in"]),
            helper.make_node("Add", [m + "_decay", m + "_in"], [m + "_new"]),
            helper.make_node("Mul", [v, "beta2"], [v + "_decay"]),
            helper.make_node("Mul", [g, g], [g + "_sq"]),
            helper.make_node("Mul", [g + "_sq", "one_minus_beta2"], [v + "_in"]),
            helper.make_node("Add", [v + "_decay", v + "_in"], [v + "_new"]),
            helper.make_node("Sqrt", [v + "_new"], [v + "_sqrt"]),
            helper.make_node("Add", [v + "_sqrt", "eps_t"], [v + "_den"]),
            helper.make_node("Div", [m + "_new", v + "_den"], [name + "_dir"]),
            helper.make_node("Mul", [name + "_dir", "lr_t"], [name + "_delta"]),
            helper.make_node("Sub", [name, name + "_delta"], [name + "_new"]),
        ]
        outputs.append((name + "_new", shape))
        outputs.append((m + "_new", shape))
        outputs.append((v + "_new", shape))
    return nodes, outputs


def build_train_step() -> onnx.ModelProto:
    nodes = _forward_nodes() + _loss_nodes()
    # Backward. d loss / d pred = 2 (pred - y) / count.
    nodes += [
        helper.make_node("Mul", ["diff", "two"], ["diff2"]),
        helper.make_node("Div", ["diff2", "count"], ["d_pred"]),
        # pred = x + a@w2 + b2
        helper.make_node("Transpose", ["a"], ["a_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["a_t", "d_pred"], ["g_w2"]),
        helper.make_node("ReduceSum", ["d_pred", "axis0"], ["g_b2"], keepdims=0),
        helper.make_node("Transpose", ["w2"], ["w2_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["d_pred", "w2_t"], ["d_a"]),
        # a = relu(h)
        helper.make_node("Greater", ["h", "zero"], ["h_pos"]),
        helper.make_node("Where", ["h_pos", "d_a", "zero"], ["d_h"]),
        # h = x@w1 + b1
        helper.make_node("Transpose", ["x"], ["x_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["x_t", "d_h"], ["g_w1"]),
        helper.make_node("ReduceSum", ["d_h", "axis0"], ["g_b1"], keepdims=0),
    ]
    adam_nodes, outputs = _adam_nodes(PREDICTOR_TENSORS)
    nodes += adam_nodes
    inputs = [_f32("x", ["B", EMBED]), _f32("y", ["B", EMBED]), *_weight_inputs()]
    inputs += [_f32("m_" + n, s) for n, s in PREDICTOR_TENSORS] + [_f32("v_" + n, s) for n, s in PREDICTOR_TENSORS]
    inputs += [_f32("step", []), _f32("lr", [])]
    graph = helper.make_graph(
        nodes, "predictor_train_step", inputs, [_f32("loss", []), *(_f32(n, s) for n, s in outputs)], _adam_inits()
    )
    return _model(graph, "One Adam step of the predictor: forward, explicit backward, update. Returns pre-update loss.")


HEAD_TENSORS = (("w2", (HIDDEN_PRED, EMBED)), ("b2", (EMBED,)))


def build_features() -> onnx.ModelProto:
    """Hidden features relu(x W1 + b1) of the predictor: fixed while only the head is fine-tuned."""
    nodes = _forward_nodes()[:3]
    inputs = [_f32("x", ["N", EMBED]), _f32("w1", (EMBED, HIDDEN_PRED)), _f32("b1", (HIDDEN_PRED,))]
    graph = helper.make_graph(nodes, "predictor_features", inputs, [_f32("a", ["N", HIDDEN_PRED])])
    return _model(graph, "Hidden features of the predictor's first layer, for head-only fine-tuning.")


def build_head_train_step() -> onnx.ModelProto:
    """One Adam step of the predictor's output layer (w2, b2) with the first layer frozen; the
    hidden features `a` are computed once per fine-tune by predictor_features.onnx."""
    nodes = [
        helper.make_node("MatMul", ["a", "w2"], ["o_mm"]),
        helper.make_node("Add", ["o_mm", "b2"], ["o"]),
        helper.make_node("Add", ["x", "o"], ["pred"]),
        *_loss_nodes(),
        helper.make_node("Mul", ["diff", "two"], ["diff2"]),
        helper.make_node("Div", ["diff2", "count"], ["d_pred"]),
        helper.make_node("Transpose", ["a"], ["a_t"], perm=[1, 0]),
        helper.make_node("MatMul", ["a_t", "d_pred"], ["g_w2"]),
        helper.make_node("ReduceSum", ["d_pred", "axis0"], ["g_b2"], keepdims=0),
    ]
    adam_nodes, outputs = _adam_nodes(HEAD_TENSORS)
    nodes += adam_nodes
    inputs = [_f32("a", ["B", HIDDEN_PRED]), _f32("x", ["B", EMBED]), _f32("y", ["B", EMBED])]
    inputs += [_f32(n, s) for n, s in HEAD_TENSORS]
    inputs += [_f32("m_" + n, s) for n, s in HEAD_TENSORS] + [_f32("v_" + n, s) for n, s in HEAD_TENSORS]
    inputs += [_f32("step", []), _f32("lr", [])]
    graph = helper.make_graph(
        nodes, "predictor_head_train_step", inputs, [_f32("loss", []), *(_f32(n, s) for n, s in outputs)], _adam_inits(False)
    )
    return _model(graph, "One Adam step of the predictor's output layer (first layer frozen). Returns pre-update loss.")


def build_head_gram() -> onnx.ModelProto:
    """Sufficient statistics of the head's least-squares problem over training pairs (x, y):
    a = relu(x W1 + b1) centred, r = y - x centred; gram = a^T a, cross = a^T r, their means, and
    the mean diagonal of gram (scales the ridge penalty)."""
    inits = [_const("hidden", float(HIDDEN_PRED))]
    nodes = _forward_nodes()[:3] + [
        helper.make_node("ReduceMean", ["a"], ["a_mean"], axes=[0], keepdims=1),
        helper.make_node("Sub", ["y", "x"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["r_mean"], axes=[0], keepdims=1),
        helper.make_node("Sub", ["a", "a_mean"], ["a_c"]),
        helper.make_node("Sub", ["r", "r_mean"], ["r_c"]),
        helper.make_node("Transpose", ["a_c"], ["a_ct"], perm=[1, 0]),
        helper.make_node("MatMul", ["a_ct", "a_c"], ["gram"]),
        helper.make_node("MatMul", ["a_ct", "r_c"], ["cross"]),
        helper.make_node("Mul", ["a_c", "a_c"], ["a_sq"]),
        helper.make_node("ReduceSum", ["a_sq"], ["a_sq_sum"], keepdims=0),
        helper.make_node("Div", ["a_sq_sum", "hidden"], ["diag_mean"]),
    ]
    inputs = [_f32("x", ["T", EMBED]), _f32("y", ["T", EMBED]), _f32("w1", (EMBED, HIDDEN_PRED)), _f32("b1", (HIDDEN_PRED,))]
    outputs = [
        _f32("gram", (HIDDEN_PRED, HIDDEN_PRED)), _f32("cross", (HIDDEN_PRED, EMBED)),
        _f32("a_mean", (1, HIDDEN_PRED)), _f32("r_mean", (1, EMBED)), _f32("diag_mean", []),
    ]
    graph = helper.make_graph(nodes, "predictor_head_gram", inputs, outputs, inits)
    return _model(graph, "Gram statistics of the predictor head's least-squares problem (first layer frozen).")


def build_head_ridge() -> onnx.ModelProto:
    """Closed-form fine-tune of the head: ridge regression towards the prior weights,
    w2 = (gram + l I)^-1 (cross + l w2_prior), b2 = r_mean - a_mean w2, with l = lambda * diag_mean.
    Uses onnxruntime's com.microsoft.Inverse (CPU contrib op)."""
    nodes = [
        helper.make_node("Mul", ["lambda", "diag_mean"], ["lam"]),
        helper.make_node("EyeLike", ["gram"], ["eye"]),
        helper.make_node("Mul", ["eye", "lam"], ["lam_eye"]),
        helper.make_node("Add", ["gram", "lam_eye"], ["system"]),
        helper.make_node("Inverse", ["system"], ["system_inv"], domain="com.microsoft"),
        helper.make_node("Mul", ["w2", "lam"], ["prior_pull"]),
        helper.make_node("Add", ["cross", "prior_pull"], ["rhs"]),
        helper.make_node("MatMul", ["system_inv", "rhs"], ["w2_new"]),
        helper.make_node("MatMul", ["a_mean", "w2_new"], ["a_mean_w2"]),
        helper.make_node("Sub", ["r_mean", "a_mean_w2"], ["b2_row"]),
        helper.make_node("Squeeze", ["b2_row", "axis0"], ["b2_new"]),
    ]
    inits = [numpy_helper.from_array(np.array([0], dtype=np.int64), "axis0")]
    inputs = [
        _f32("gram", (HIDDEN_PRED, HIDDEN_PRED)), _f32("cross", (HIDDEN_PRED, EMBED)),
        _f32("a_mean", (1, HIDDEN_PRED)), _f32("r_mean", (1, EMBED)), _f32("diag_mean", []),
        _f32("w2", (HIDDEN_PRED, EMBED)), _f32("lambda", []),
    ]
    outputs = [_f32("w2_new", (HIDDEN_PRED, EMBED)), _f32("b2_new", (EMBED,))]
    graph = helper.make_graph(nodes, "predictor_head_ridge", inputs, outputs, inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="adp-model-training",
    )
    model.ir_version = 8
    model.doc_string = "Closed-form ridge fine-tune of the predictor head towards the prior weights."
    onnx.checker.check_model(model)
    return model


def build_head_ridge_dual() -> onnx.ModelProto:
    """The same ridge fine-tune of the head as predictor_head_gram + predictor_head_ridge, solved
    in the space of the T training pairs instead of the 1200 features, for several strengths at
    once: with a_c, r_c the centred features and targets, K = a_c a_c^T (T x T) and the prior's
    residual e = r_c - a_c w2_prior, w2 = w2_prior + a_c^T (K + l I)^-1 e, which equals
    (gram + l I)^-1 (cross + l w2_prior) (Woodbury); l = lambda * diag_mean as there. Cheaper when
    T < 1200 (a baseline of a few hundred points: a T x T inverse instead of a 1200 x 1200 one).
    Uses onnxruntime's com.microsoft.Inverse (CPU contrib op), batched over the strengths."""
    inits = [
        _const("hidden", float(HIDDEN_PRED)),
        numpy_helper.from_array(np.array([-1, 1, 1], dtype=np.int64), "lam_shape"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
    ]
    nodes = _forward_nodes()[:3] + [
        helper.make_node("ReduceMean", ["a"], ["a_mean"], axes=[0], keepdims=1),
        helper.make_node("Sub", ["y", "x"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["r_mean"], axes=[0], keepdims=1),
        helper.make_node("Sub", ["a", "a_mean"], ["a_c"]),
        helper.make_node("Sub", ["r", "r_mean"], ["r_c"]),
        helper.make_node("Transpose", ["a_c"], ["a_ct"], perm=[1, 0]),
        helper.make_node("MatMul", ["a_c", "a_ct"], ["kernel"]),
        helper.make_node("Mul", ["a_c", "a_c"], ["a_sq"]),
        helper.make_node("ReduceSum", ["a_sq"], ["a_sq_sum"], keepdims=0),
        helper.make_node("Div", ["a_sq_sum", "hidden"], ["diag_mean"]),
        helper.make_node("MatMul", ["a_c", "w2"], ["a_c_w2"]),
        helper.make_node("Sub", ["r_c", "a_c_w2"], ["residual"]),
        helper.make_node("Mul", ["lambda", "diag_mean"], ["lam"]),
        helper.make_node("Reshape", ["lam", "lam_shape"], ["lam_3d"]),
        helper.make_node("EyeLike", ["kernel"], ["eye"]),
        helper.make_node("Mul", ["eye", "lam_3d"], ["lam_eye"]),
        helper.make_node("Add", ["kernel", "lam_eye"], ["system"]),
        helper.make_node("Inverse", ["system"], ["system_inv"], domain="com.microsoft"),
        helper.make_node("MatMul", ["system_inv", "residual"], ["dual"]),
        helper.make_node("MatMul", ["a_ct", "dual"], ["w2_step"]),
        helper.make_node("Add", ["w2", "w2_step"], ["w2_new"]),
        helper.make_node("MatMul", ["a_mean", "w2_new"], ["a_mean_w2"]),
        helper.make_node("Sub", ["r_mean", "a_mean_w2"], ["b2_rows"]),
        helper.make_node("Squeeze", ["b2_rows", "axis1"], ["b2_new"]),
    ]
    inputs = [
        _f32("x", ["T", EMBED]), _f32("y", ["T", EMBED]), _f32("w1", (EMBED, HIDDEN_PRED)), _f32("b1", (HIDDEN_PRED,)),
        _f32("w2", (HIDDEN_PRED, EMBED)), _f32("lambda", ["L"]),
    ]
    outputs = [_f32("w2_new", ["L", HIDDEN_PRED, EMBED]), _f32("b2_new", ["L", EMBED])]
    graph = helper.make_graph(nodes, "predictor_head_ridge_dual", inputs, outputs, inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="adp-model-training",
    )
    model.ir_version = 8
    model.doc_string = "Closed-form ridge fine-tune of the predictor head towards the prior weights, solved over the training pairs."
    onnx.checker.check_model(model)
    return model


def ridge_reference(p, x, y, lam_rel: float):
    a = np.maximum(x @ p["w1"] + p["b1"], 0).astype(np.float64)
    r = (y - x).astype(np.float64)
    am, rm = a.mean(0), r.mean(0)
    ac, rc = a - am, r - rm
    gram = ac.T @ ac
    lam = lam_rel * np.trace(gram) / gram.shape[0]
    w2 = np.linalg.solve(gram + lam * np.eye(gram.shape[0]), ac.T @ rc + lam * p["w2"])
    return w2, rm - am @ w2


# ---- numpy reference (used by tests and by the encoder's training) ----

def predictor_forward(p: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    h = x @ p["w1"] + p["b1"]
    return x + np.maximum(h, 0) @ p["w2"] + p["b2"]


def predictor_loss_and_grads(p: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray):
    h = x @ p["w1"] + p["b1"]
    a = np.maximum(h, 0)
    pred = x + a @ p["w2"] + p["b2"]
    diff = pred - y
    loss = float(np.mean(diff * diff))
    d_pred = 2 * diff / diff.size
    d_a = d_pred @ p["w2"].T
    d_h = np.where(h > 0, d_a, 0)
    grads = {"w2": a.T @ d_pred, "b2": d_pred.sum(0), "w1": x.T @ d_h, "b1": d_h.sum(0)}
    return loss, grads


def adam_reference(p, m, v, g, step: int, lr: float):
    out_p, out_m, out_v = {}, {}, {}
    for k in p:
        out_m[k] = ADAM_BETA1 * m[k] + (1 - ADAM_BETA1) * g[k]
        out_v[k] = ADAM_BETA2 * v[k] + (1 - ADAM_BETA2) * g[k] ** 2
        m_hat = out_m[k] / (1 - ADAM_BETA1**step)
        v_hat = out_v[k] / (1 - ADAM_BETA2**step)
        out_p[k] = p[k] - lr * m_hat / (np.sqrt(v_hat) + ADAM_EPS)
    return out_p, out_m, out_v


def init_predictor(rng: np.random.Generator) -> dict[str, np.ndarray]:
    # He init on the first layer; the second starts small so the residual predictor starts near identity.
    return {
        "w1": (rng.standard_normal((EMBED, HIDDEN_PRED)) * np.sqrt(2.0 / EMBED)).astype(np.float32),
        "b1": np.zeros(HIDDEN_PRED, np.float32),
        "w2": (rng.standard_normal((HIDDEN_PRED, EMBED)) * 0.01 / np.sqrt(HIDDEN_PRED)).astype(np.float32),
        "b2": np.zeros(EMBED, np.float32),
    }
