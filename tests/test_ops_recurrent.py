"""LSTM and GRU as whole stages: every direction, initial states, all
outputs, both layouts, GRU's linear_before_reset; the reference against
onnxruntime, the plan (interpreter and C) against the untiled reference
(`ops_oracle.check_model`)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import NodeProto, TensorProto, helper, numpy_helper
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


def test_an_exporters_lstm_with_its_state_subgraphs():
    """PyTorch's export of nn.LSTM followed by a linear layer: zero initial
    states built by ConstantOfShape from Shape-Gather-Unsqueeze-Concat of the
    input's batch, the direction axis squeezed out of Y, the last step taken
    by Slice and the final state by Gather; the shape parts fold, the rest
    matches onnxruntime and runs planned (interpreter and C) equal to the
    untiled reference."""
    def i64(name: str, v) -> NodeProto:
        arr = numpy_helper.from_array(np.asarray(v, np.int64), name + "_v")
        return helper.make_node("Constant", [], [name], value=arr)

    zero = numpy_helper.from_array(np.array([0.0], np.float32), "z")
    nodes = [
        i64("one", 1), i64("ax0", [0]), i64("dirs", [1]), i64("hid", [HID]),
        i64("last_s", [-1]), i64("last_e", [2**62]), i64("first", 0),
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["b"], axis=0),
        helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"]),
        helper.make_node("Concat", ["dirs", "b1", "hid"], ["state_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["state_shape"], ["h0"], value=zero),
        helper.make_node("ConstantOfShape", ["state_shape"], ["c0"], value=zero),
        helper.make_node(
            "LSTM", ["x", "w", "r", "bias", "", "h0", "c0"], ["y", "yh", "yc"], hidden_size=HID
        ),
        helper.make_node("Squeeze", ["y", "dirs"], ["y3"]),
        helper.make_node("Slice", ["y3", "last_s", "last_e", "ax0"], ["y_last"]),
        helper.make_node("Squeeze", ["y_last", "ax0"], ["last"]),
        helper.make_node("Gather", ["yh", "first"], ["h"], axis=0),
        helper.make_node("Add", ["last", "h"], ["both"]),
        helper.make_node("Cast", ["both"], ["both_f"], to=TensorProto.FLOAT),
        helper.make_node("Gemm", ["both_f", "fc_w", "fc_b"], ["out"], transB=1),
    ]
    inits = _weights("l", 4, 1, 40)
    inits = {"w": inits["l_w"], "r": inits["l_r"], "bias": inits["l_b"]}
    inits |= {"fc_w": rand((3, HID), seed=44), "fc_b": rand((3,), seed=45)}
    model = make_model(nodes, {"x": (SEQ, BATCH, INP)}, ["out", "yc"], inits, opset=13)
    got = check_model(model, {"x": rand((SEQ, BATCH, INP), seed=46)}, min_tiles=0)
    assert max(got.worst) <= 1e-5
    imp = import_model(model, origin="exporter")
    s = imp.simplified
    assert s is not None
    for op in ("Shape", "Gather", "Concat", "ConstantOfShape"):
        assert s.folded[op] >= 1, (op, s.folded)
    assert s.removed["Cast"] == 1
    assert {n.op_type for n in s.model.graph.node} == {
        "LSTM", "Squeeze", "Slice", "Gather", "Add", "Gemm"
    }
