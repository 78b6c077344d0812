"""Slice, Tile, Expand, Gather (constant indices), DepthToSpace and
SpaceToDepth, end to end: the reference against onnxruntime, a tiled plan
(interpreter and C) against the untiled reference (`ops_oracle.check_model`)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper
from ops_oracle import check_model, make_model, qdq, rand

from tigris_ir.dialects import nn

pytest.importorskip("onnxruntime")

X = (1, 4, 10, 12)
I64 = np.int64


def _consts(**kw: list[int]) -> dict[str, np.ndarray]:
    return {k: np.array(v, I64) for k, v in kw.items()}


def test_selections_float32():
    inits = _consts(
        s0=[1, -1], e0=[9, -13], a0=[2, 3], p0=[2, -2],  # rows 1,3,5,7; columns 11..1 by -2
        s1=[-3], e1=[100], a1=[1],  # the last three channels, an end beyond the axis
        reps=[1, 2, 1, 2],
        g1=[3, 0, 0], g2=[[1, 2], [0, 11]],
    )  # fmt: skip
    nodes = [
        helper.make_node("Slice", ["x", "s0", "e0", "a0", "p0"], ["slice"]),
        helper.make_node("Slice", ["x", "s1", "e1", "a1"], ["slice_c"]),
        helper.make_node("Tile", ["x", "reps"], ["tile"]),
        helper.make_node("Gather", ["x", "g1"], ["gather_c"], axis=1),
        helper.make_node("Gather", ["x", "g2"], ["gather_2d"], axis=3),
        helper.make_node("DepthToSpace", ["x"], ["d2s"], blocksize=2, mode="DCR"),
        helper.make_node("DepthToSpace", ["x"], ["d2s_crd"], blocksize=2, mode="CRD"),
        helper.make_node("SpaceToDepth", ["x"], ["s2d"], blocksize=2),
    ]
    outs = ["slice", "slice_c", "tile", "gather_c", "gather_2d", "d2s", "d2s_crd", "s2d"]
    model = make_model(nodes, {"x": X}, outs, inits, opset=13)
    got = check_model(model, {"x": rand(X, seed=1)})
    assert got.worst == [0.0] * len(outs)
    kinds = {type(o) for o in got.module.walk() if isinstance(o, nn.IndexMapOp)}
    assert kinds == {nn.SliceOp, nn.TileOp, nn.GatherOp}


def test_expand_to_a_higher_rank_and_along_unit_axes():
    inits = _consts(shape=[2, 1, 4, 10, 12], shape2=[1, 4, 10, 12])
    nodes = [
        helper.make_node("Expand", ["y", "shape"], ["up"]),
        helper.make_node("Expand", ["y", "shape2"], ["same"]),
    ]
    model = make_model(nodes, {"y": (1, 4, 1, 12)}, ["up", "same"], inits, opset=13)
    got = check_model(model, {"y": rand((1, 4, 1, 12), seed=2)})
    assert got.worst == [0.0, 0.0]


def test_slice_before_opset_10_takes_attributes():
    node = helper.make_node("Slice", ["x"], ["y"], starts=[0, 2], ends=[2, -1], axes=[1, 3])
    model = make_model([node], {"x": X}, ["y"], opset=9)
    check_model(model, {"x": rand(X, seed=3)})


def test_int8_selections_run_on_the_stored_integers():
    nodes, inits = [], _consts(s=[1], e=[-1], a=[2], g=[2, 1])
    for i, node in enumerate(
        [
            helper.make_node("Slice", ["x", "s", "e", "a"], ["y0"], name="sl"),
            helper.make_node("Gather", ["x", "g"], ["y1"], name="ga", axis=1),
            helper.make_node("DepthToSpace", ["x"], ["y2"], name="ds", blocksize=2),
        ]
    ):
        more, more_inits = qdq(node, 0.05, 0.05, zp=i)
        nodes += more
        inits |= more_inits
    model = make_model(nodes, {"x": X}, ["y0", "y1", "y2"], inits, opset=13)
    got = check_model(model, {"x": rand(X, seed=4)})
    assert got.worst == [0.0, 0.0, 0.0]



def test_int8_tile_expand_space_to_depth_run_on_the_stored_integers():
    nodes, inits = [], _consts(reps=[1, 2, 1, 2], shape=[2, 4, 10, 12])
    for i, node in enumerate(
        [
            helper.make_node("Tile", ["x", "reps"], ["y0"], name="ti"),
            helper.make_node("Expand", ["v", "shape"], ["y1"], name="ex"),
            helper.make_node("SpaceToDepth", ["x"], ["y2"], name="sd", blocksize=2),
        ]
    ):
        more, more_inits = qdq(node, 0.05, 0.05, zp=i)
        nodes += more
        inits |= more_inits
    model = make_model(nodes, {"x": X, "v": (1, 4, 1, 12)}, ["y0", "y1", "y2"], inits, opset=13)
    got = check_model(model, {"x": rand(X, seed=5), "v": rand((1, 4, 1, 12), seed=6)})
    assert got.worst == [0.0, 0.0, 0.0]
    moves = [o for o in got.module.walk() if isinstance(o, nn.IndexMapOp | nn.TransposeOp)]
    assert moves and all(nn.dtype_of(o.results[0]) == np.int8 for o in moves)
