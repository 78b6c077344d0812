"""Gemm with transA / transB / alpha / beta and batched MatMul, end to end:
the reference against onnxruntime, a tiled plan (interpreter and C) against
the untiled reference (`ops_oracle.check_model`)."""

from __future__ import annotations

import pytest
from onnx import helper
from ops_oracle import check_model, make_model, qdq, rand

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize(("ta", "tb"), [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_gemm_transposes_alpha_beta(ta: int, tb: int):
    m, k, n = 24, 12, 10
    a_shape = (k, m) if ta else (m, k)
    b = rand((n, k) if tb else (k, n), seed=1)
    node = helper.make_node(
        "Gemm", ["a", "b", "c"], ["y"], transA=ta, transB=tb, alpha=0.75, beta=-1.5
    )
    model = make_model([node], {"a": a_shape}, ["y"], {"b": b, "c": rand((n,), seed=2)})
    check_model(model, {"a": rand(a_shape, seed=3)}, min_tiles=2 if not ta else 0)


def test_gemm_of_two_activations_with_a_matrix_c():
    m, k, n = 16, 8, 6
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=2.0, beta=0.5)
    model = make_model([node], {"a": (m, k), "b": (n, k)}, ["y"], {"c": rand((m, n), seed=4)})
    check_model(model, {"a": rand((m, k), seed=5), "b": rand((n, k), seed=6)}, min_tiles=0)


@pytest.mark.parametrize(
    ("sa", "sb"),
    [((3, 8, 5), (3, 5, 4)), ((2, 3, 6, 5), (5, 7)), ((4, 6, 5), (1, 5, 3))],
    ids=["batched", "broadcast-b", "unit-batch-b"],
)
def test_batched_matmul(sa, sb):
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    model = make_model([node], {"a": sa}, ["y"], {"b": rand(sb, seed=7)})
    check_model(model, {"a": rand(sa, seed=8)}, min_tiles=0)


def test_int8_qdq_gemm_and_batched_matmul():
    """Gemm with transA / transB / alpha / beta and a batched MatMul inside
    QDQ (activations and weights quantized; a Gemm with transA or alpha keeps
    a float body, the MatMul runs on the int8 values): within one step of
    onnxruntime, planned at the minimum budget and as C equal to the reference."""
    n = helper.make_node
    inits = {"b": rand((10, 12), seed=1, scale=0.3), "c": rand((10,), seed=2, scale=0.3)}
    inits["w"] = rand((3, 5, 4), seed=3, scale=0.3)
    nodes = []
    for i, (node, q_in) in enumerate(
        [
            (
                n("Gemm", ["a", "b", "c"], ["y0"], name="gemm", transA=1, transB=1, alpha=0.75,
                  beta=-1.5),
                (0, 1),
            ),
            (n("MatMul", ["m", "w"], ["y1"], name="mm"), (0, 1)),
            (n("Gemm", ["m2", "b", "c"], ["y2"], name="gemm2", transB=1, alpha=0.5), (0, 1)),
        ]
    ):
        more, more_inits = qdq(node, 0.02, 0.05, zp=i, q_inputs=q_in)
        nodes += more
        inits |= more_inits
    shapes = {"a": (12, 16), "m": (3, 8, 5), "m2": (16, 12)}
    model = make_model(nodes, shapes, ["y0", "y1", "y2"], inits)
    feeds = {k: rand(s, seed=4 + i, scale=0.5) for i, (k, s) in enumerate(shapes.items())}
    got = check_model(model, feeds, min_tiles=0)
    assert max(got.worst) <= 1, got.worst
