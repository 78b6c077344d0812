"""LRN, LayerNormalization and InstanceNormalization, end to end: the
reference against onnxruntime, a tiled plan (interpreter and C) against the
untiled reference (`ops_oracle.check_model`)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from ops_oracle import check_model, make_model, qdq, rand

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.plan.tiling_class import TilingClass

pytest.importorskip("onnxruntime")


def test_lrn_tiles_with_whole_channels():
    """AlexNet's LRN (size 5) and a size-3 window (onnxruntime takes odd
    sizes only): the bands cut rows, never the channels."""
    x = (1, 7, 10, 9)
    nodes = [
        helper.make_node("LRN", ["x"], ["a"], size=5, alpha=0.5, beta=0.75, bias=2.0),
        helper.make_node("LRN", ["x"], ["b"], size=3),
    ]
    got = check_model(make_model(nodes, {"x": x}, ["a", "b"]), {"x": rand(x, seed=1)})
    lrn = [o for o in got.module.walk() if isinstance(o, nn.LRNOp)]
    assert lrn[0].tiling() is TilingClass.WHOLE_ROWS and lrn[0].whole_axes() == (3,)


def test_instance_norm_runs_whole():
    x = (2, 5, 6, 7)
    inits = {"g": rand((5,), seed=2), "b": rand((5,), seed=3)}
    nodes = [
        helper.make_node("InstanceNormalization", ["x", "g", "b"], ["y"], epsilon=1e-3),
        helper.make_node("Relu", ["y"], ["z"]),
    ]
    model = make_model(nodes, {"x": x}, ["z"], inits)
    check_model(model, {"x": rand(x, seed=4)}, min_tiles=0)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm(axis: int):
    """A (batch, tokens, features) tensor: over the features (whole rows,
    tiled), or over tokens and features (whole)."""
    x = (2, 12, 16)
    inner = x[axis:] if axis > 0 else x[-1:]
    inits = {"g": rand(inner, seed=5), "b": rand(inner, seed=6)}
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=axis)]
    model = make_model(nodes, {"x": x}, ["y"], inits)
    got = check_model(model, {"x": rand(x, seed=7)}, min_tiles=2 if axis == -1 else 0)
    op = next(o for o in got.module.walk() if isinstance(o, nn.LayerNormOp))
    assert op.tiling() is (TilingClass.WHOLE_ROWS if axis == -1 else TilingClass.WHOLE)


def test_layer_norm_without_bias():
    x = (1, 6, 8)
    nodes = [helper.make_node("LayerNormalization", ["x", "g"], ["y"], epsilon=1e-3)]
    model = make_model(nodes, {"x": x}, ["y"], {"g": rand((8,), seed=8)})
    check_model(model, {"x": rand(x, seed=9)})


def test_instance_norm_with_wrong_parameters_is_named():
    x = (1, 3, 4, 4)
    inits = {"g": np.ones(4, np.float32), "b": np.zeros(4, np.float32)}
    node = helper.make_node("InstanceNormalization", ["x", "g", "b"], ["y"], name="inorm")
    model = make_model([node], {"x": x}, ["y"], inits)
    with pytest.raises(ImportDiagnostic, match=r"'inorm' \(InstanceNormalization\).*3 channels"):
        import_model(model)


def test_int8_qdq_normalisations_run_in_float():
    """LRN, LayerNormalization and InstanceNormalization inside QDQ:
    dequantize, the float op, quantize; within one step of onnxruntime, tiled
    and as C equal to the reference."""
    x = (1, 6, 10, 12)
    n = helper.make_node
    inits = {
        "g": rand((12,), seed=10, scale=0.5),
        "b": rand((12,), seed=11, scale=0.5),
        "gi": rand((6,), seed=12, scale=0.5),
        "bi": rand((6,), seed=13, scale=0.5),
    }
    nodes = []
    for i, (node, so) in enumerate(
        [
            (n("LRN", ["x"], ["y0"], name="lrn", size=5, alpha=0.5, beta=0.75, bias=2.0), 0.03),
            (n("LayerNormalization", ["x", "g", "b"], ["y1"], name="ln"), 0.03),
            (n("InstanceNormalization", ["x", "gi", "bi"], ["y2"], name="inorm"), 0.03),
        ]
    ):
        more, more_inits = qdq(node, 0.05, so, zp=i)
        nodes += more
        inits |= more_inits
    model = make_model(nodes, {"x": x}, ["y0", "y1", "y2"], inits)
    got = check_model(model, {"x": rand(x, seed=14, scale=1.5)}, min_tiles=0)
    assert max(got.worst) <= 1, got.worst
