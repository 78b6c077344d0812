"""Support of the operator tests (tests/test_ops_*.py): one model, every check.

`check_model` imports an `onnx.helper`-built model and holds it to the
project's oracles in turn:

1. the untiled reference against onnxruntime (float32 within a relative
   1e-4, int8 within 1 quantization step of the output: `oracle`);
2. the plan at a budget (by default the model's minimum budget, so stages
   tile) run by the loop-level interpreter: equal to the untiled reference
   (int8 bit-exact, float32 within a relative 1e-5), its measured fast peak
   equal to the planned arena;
3. the same plan printed as C, compiled and run: equal to the reference the
   same way, and counting the interpreter's figures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from tigris_ir.backend.c.build import run_c
from tigris_ir.frontend.onnx_import import import_model, module_io
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.passes.requant import set_requant
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import min_budget, plan
from tigris_ir.reference.executor import run_reference, to_boundary, to_internal
from tigris_ir.reference.oracle import compare_with_onnxruntime

_ELEM = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, tuple[int, ...]],
    outputs: Sequence[str],
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
    types: dict[str, type[np.generic]] | None = None,
) -> onnx.ModelProto:
    """A model of `nodes` with float32 inputs and outputs unless `types` names
    another element type; output shapes come from shape inference."""
    types = types or {}

    def elem(n: str) -> int:
        return _ELEM[np.dtype(types.get(n, np.float32))]

    graph = helper.make_graph(
        list(nodes),
        "ops",
        [helper.make_tensor_value_info(n, elem(n), s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, elem(n), None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def qdq(
    node: onnx.NodeProto,
    scale_in: float,
    scale_out: float,
    zp: int = 0,
    *,
    q_inputs: Sequence[int] = (0,),
) -> tuple[list[onnx.NodeProto], dict[str, np.ndarray]]:
    """`node` wrapped in QuantizeLinear / DequantizeLinear on its inputs
    `q_inputs` and its output (int8, the given scales and zero point): the
    nodes, and the initializers they read. Inputs and output keep their names."""
    inits: dict[str, np.ndarray] = {
        f"{node.name}_si": np.array(scale_in, np.float32),
        f"{node.name}_so": np.array(scale_out, np.float32),
        f"{node.name}_zp": np.array(zp, np.int8),
    }
    nodes: list[onnx.NodeProto] = []
    ins = list(node.input)
    for i in q_inputs:
        src = ins[i]
        q, d = f"{node.name}_q{i}", f"{node.name}_dq{i}"
        zpn = f"{node.name}_zp"
        nodes.append(helper.make_node("QuantizeLinear", [src, f"{node.name}_si", zpn], [q]))
        nodes.append(helper.make_node("DequantizeLinear", [q, f"{node.name}_si", zpn], [d]))
        ins[i] = d
    out = node.output[0]
    inner = helper.make_node(
        node.op_type, ins, [f"{node.name}_y"], name=node.name, **_attrs(node)
    )
    nodes.append(inner)
    zpn = f"{node.name}_zp"
    nodes.append(
        helper.make_node("QuantizeLinear", [f"{node.name}_y", f"{node.name}_so", zpn], [f"{out}_q"])
    )
    nodes.append(
        helper.make_node("DequantizeLinear", [f"{out}_q", f"{node.name}_so", zpn], [out])
    )
    return nodes, inits


def _attrs(node: onnx.NodeProto) -> dict[str, object]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


@dataclass
class Checked:
    """What a check measured."""

    module: ModuleOp
    weights: dict[str, np.ndarray]
    budget: int
    tiles: int
    fast_peak: int
    worst: list[float]
    """Per output, the reference's distance to onnxruntime (relative, or in LSB)."""


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """int8 bit-exact; float32 within a relative 1e-5 of the largest value."""
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape)
    if want.dtype == np.float32:
        finite = np.abs(want[np.isfinite(want)])
        tol = 1e-5 * max(float(finite.max(initial=0.0)), 1e-30)
        np.testing.assert_allclose(got, want, rtol=0, atol=tol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def lowered(module: ModuleOp, budget: int) -> ModuleOp:
    m = module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return m


def check_model(
    model: onnx.ModelProto,
    feeds: dict[str, np.ndarray],
    *,
    budget: int | None = None,
    c: bool = True,
    ort: bool = True,
    min_tiles: int = 2,
    requant: str = "float",
) -> Checked:
    """Every oracle of the module docstring; returns what it measured.
    `requant`: the int8 requantization (the `requant` pass's mode)."""
    imported = import_model(model, origin="test")
    module, weights = imported.module, imported.weights
    set_requant(module, requant)
    fn, names, in_layouts, out_names, out_layouts = module_io(module)
    inputs = [feeds[n] for n in names]
    ref = run_reference(module, weights, inputs)
    worst: list[float] = []
    if ort:
        report = compare_with_onnxruntime(model.SerializeToString(), feeds, ref, out_names)
        assert report.ok, report.text
        worst = [d.worst for d in report.diffs]
    graph = build_view(main_func(module)).graph
    b = budget if budget is not None else min_budget(graph)
    p = plan(graph, b)
    assert p.fits, f"the model does not fit {b} bytes"
    low = lowered(module, b)
    internal = [to_internal(x, lay) for x, lay in zip(inputs, in_layouts)]
    res = run_loop_module(low, weights, internal)
    got = [to_boundary(y, lay) for y, lay in zip(res.outputs, out_layouts)]
    for g, r, n in zip(got, ref, out_names, strict=True):
        same(g, r, f"interpreter, output {n}")
    s = res.stats
    assert s.arena_bytes == s.fast_peak == p.peak <= b
    assert s.tiles >= min_tiles, f"the plan at {b} bytes runs {s.tiles} tiles"
    if c:
        outs, stats = run_c(low, weights, inputs, variant="stats", strict=True)
        for g, r, n in zip(outs, ref, out_names, strict=True):
            same(g, r, f"C, output {n}")
        assert stats == s
    del fn
    return Checked(module, weights, b, s.tiles, s.fast_peak, worst)


def rand(shape: Sequence[int], seed: int = 0, scale: float = 2.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def boundary_reference(
    module: ModuleOp, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """The untiled oracle of a lowered plan on boundary-layout inputs (as the
    C takes them), its outputs in the boundary layout (as the C gives them)."""
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_to_loops import untiled_func
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal

    ref_fn = untiled_func(module)
    assert ref_fn is not None
    ins, outs = module_layouts(main_func(module))
    internal = [to_internal(a, lay) for a, lay in zip(inputs, ins)]
    got = untiled_reference(ref_fn, weights, internal)
    return [to_boundary(y, lay) for y, lay in zip(got, outs)]
