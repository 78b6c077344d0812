"""LSTM and GRU as whole stages: every direction, initial states, all
outputs, both layouts, GRU's linear_before_reset; the reference against
onnxruntime, the plan (interpreter and C) against the untiled reference
(`ops_oracle.check_model`)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from ops_oracle import check_model, make_model, rand

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.reference.executor import run_reference

ort = pytest.importorskip("onnxruntime")

SEQ, BATCH, INP, HID = 5, 2, 3, 4


def _weights(prefix: str, gates: int, dirs: int, seed: int) -> dict:
    return {
        f"{prefix}_w": rand((dirs, gates * HID, INP), seed=seed, scale=0.5),
        f"{prefix}_r": rand((dirs, gates * HID, HID), seed=seed + 1, scale=0.5),
        f"{prefix}_b": rand((dirs, 2 * gates * HID), seed=seed + 2, scale=0.5),
    }


def test_lstm_and_gru_every_form():
    inits: dict = {}
    nodes = []
    outs: list[str] = []
    # LSTM forward, all outputs
    inits |= _weights("f", 4, 1, 1)
    nodes.append(
        helper.make_node("LSTM", ["x", "f_w", "f_r", "f_b"], ["f_y", "f_h", "f_c"], hidden_size=HID)
    )
    outs += ["f_y", "f_h", "f_c"]
    # LSTM reverse, no bias, Y only
    inits |= _weights("r", 4, 1, 4)
    nodes.append(
        helper.make_node("LSTM", ["x", "r_w", "r_r"], ["r_y"], hidden_size=HID, direction="reverse")
    )
    outs.append("r_y")
    # LSTM bidirectional with initial states from the model inputs
    inits |= _weights("b", 4, 2, 7)
    nodes.append(
        helper.make_node(
            "LSTM",
            ["x", "b_w", "b_r", "b_b", "", "h0", "c0"],
            ["b_y", "b_h", "b_c"],
            hidden_size=HID,
            direction="bidirectional",
        )
    )
    outs += ["b_y", "b_h", "b_c"]
    # GRU bidirectional, both reset forms
    for lbr in (0, 1):
        p = f"g{lbr}"
        inits |= _weights(p, 3, 2, 10 + lbr)
        nodes.append(
            helper.make_node(
                "GRU",
                ["x", f"{p}_w", f"{p}_r", f"{p}_b", "", "h0"],
                [f"{p}_y", f"{p}_h"],
                hidden_size=HID,
                direction="bidirectional",
                linear_before_reset=lbr,
            )
        )
        outs += [f"{p}_y", f"{p}_h"]
    shapes = {"x": (SEQ, BATCH, INP), "h0": (2, BATCH, HID), "c0": (2, BATCH, HID)}
    model = make_model(nodes, shapes, outs, inits, opset=14)
    feeds = {n: rand(s, seed=30 + i) for i, (n, s) in enumerate(shapes.items())}
    got = check_model(model, feeds, min_tiles=0)
    assert max(got.worst) <= 1e-5
    kinds = [type(o) for o in got.module.walk() if isinstance(o, nn.RecurrentOp)]
    assert kinds.count(nn.LSTMOp) == 3 and kinds.count(nn.GRUOp) == 2


def test_batch_first_layout():
    """layout = 1 (batch first), which onnxruntime does not run: the oracle is
    onnxruntime on the layout-0 model, with the input and outputs transposed."""
    inits = _weights("l", 4, 1, 20)
    outs = ["y", "yh", "yc"]

    def model(layout: int, shape: tuple[int, ...]):
        node = helper.make_node(
            "LSTM", ["x", "l_w", "l_r", "l_b"], outs, hidden_size=HID, layout=layout
        )
        return make_model([node], {"x": shape}, outs, inits, opset=14)

    xb = rand((BATCH, SEQ, INP), seed=40)
    got = check_model(model(1, xb.shape), {"x": xb}, ort=False, min_tiles=0)
    ours = run_reference(got.module, got.weights, [xb])
    so = ort.SessionOptions()
    sess = ort.InferenceSession(model(0, (SEQ, BATCH, INP)).SerializeToString(), so)
    y, yh, yc = sess.run(None, {"x": np.ascontiguousarray(xb.transpose(1, 0, 2))})
    want = [y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)]
    for a, b in zip(ours, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_unsupported_recurrent_attributes_are_named():
    inits = _weights("f", 4, 1, 1)
    node = helper.make_node(
        "LSTM", ["x", "f_w", "f_r", "f_b"], ["y"], name="rnn", hidden_size=HID, clip=3.0
    )
    model = make_model([node], {"x": (SEQ, BATCH, INP)}, ["y"], inits, opset=14)
    with pytest.raises(ImportDiagnostic, match=r"'rnn' \(LSTM\).*'clip'"):
        import_model(model)
