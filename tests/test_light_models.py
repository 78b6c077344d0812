"""The nine classic ImageNet models that ship inside the onnx wheel
(`onnx/backend/test/data/light/`, opset 9, weights written as ConstantOfShape),
imported raw, with no preprocessing:

- the reference matches each expected output, on the input onnx's backend
  runner feeds (`arange(n) / n`, `onnx/backend/test/runner`), with the
  runner's tolerances;
- their weights are uniform, so a copy with seeded random weights (each
  constant scaled by a factor in [0.5, 1.5]: signs and magnitudes stay, so
  variances stay positive) is also compared with onnxruntime;
- each plans at 256K and at its minimum budget and runs tiled, in the
  interpreter and as C, equal to the untiled reference.

The default suite runs SqueezeNet (and the C of it at 256K only with the
option); `TIGRIS_LIGHT_MODELS=all` runs every model and every C build. A model
that needs an operator the importer does not have yet is an expected failure
naming the operator, which turns into a real test once the operator exists.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from xdsl.context import Context

from tigris_ir.frontend.onnx_import import Imported, import_model
from tigris_ir.interp.loop_ir import run_loop_module
from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.plan.ir import main_func, tree_min_budget
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import plan
from tigris_ir.reference.executor import run_function, run_reference

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"

TOLERANCES = {
    "bvlc_alexnet": (1e-3, 1e-7),
    "densenet121": (2e-3, 1e-7),
    "inception_v1": (1e-3, 1e-7),
    "inception_v2": (1e-3, 1e-7),
    "resnet50": (1e-3, 1e-7),
    "shufflenet": (1e-3, 1e-7),
    "squeezenet": (1e-3, 1e-7),
    "vgg19": (1e-3, 1e-7),
    "zfnet512": (1e-3, 1e-7),
}
"""(rtol, atol) per model, as onnx's backend runner has them."""

ALL = os.environ.get("TIGRIS_LIGHT_MODELS", "") == "all"
DEFAULT = ("squeezenet",)


def _cases(names=TOLERANCES):
    out = []
    for n in names:
        marks = []
        if n not in DEFAULT and not ALL:
            marks.append(pytest.mark.skip(reason="slow: TIGRIS_LIGHT_MODELS=all runs it"))
        out.append(pytest.param(n, marks=marks, id=n))
    return out


def _path(name: str) -> Path:
    return LIGHT / f"light_{name}.onnx"


@functools.cache
def _imported(name: str) -> Imported:
    return import_model(onnx.load(_path(name)), origin=_path(name).name)


def runner_input(model: onnx.ModelProto) -> np.ndarray:
    """The input onnx's backend runner makes for a real model."""
    inits = {i.name for i in model.graph.initializer}
    (x,) = [i for i in model.graph.input if i.name not in inits]
    shape = tuple(
        d.dim_value if d.HasField("dim_value") else 1 for d in x.type.tensor_type.shape.dim
    )
    n = int(np.prod(shape))
    return (np.arange(n).reshape(shape) / n).astype(np.float32)


@pytest.mark.parametrize("name", _cases())
def test_reference_matches_the_expected_output(name: str) -> None:
    model = onnx.load(_path(name))
    imp = _imported(name)
    (got,) = run_reference(imp.module, imp.weights, [runner_input(model)])
    want = numpy_helper.to_array(onnx.load_tensor(str(LIGHT / f"light_{name}_output_0.pb")))
    rtol, atol = TOLERANCES[name]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def random_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """The model with every ConstantOfShape weight replaced by a seeded random
    initializer of the same sign and scale."""
    rng = np.random.default_rng(seed)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    keep = []
    for node in g.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = [int(d) for d in inits[node.input[0]]]
        value = numpy_helper.to_array(node.attribute[0].t).reshape(())
        w = (value * rng.uniform(0.5, 1.5, shape)).astype(value.dtype)
        g.initializer.append(numpy_helper.from_array(w, node.output[0]))
    del g.node[:]
    g.node.extend(keep)
    return out


def with_logits(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with the input of its final Softmax, if it ends in one, as a
    second output: the random weights make some of these nets' probabilities
    one-hot (SqueezeNet, ResNet50), which would hide any error but the
    winner's. (DenseNet121 ends in its classifier Conv.)"""
    (out,) = model.graph.output
    (last,) = [n for n in model.graph.node if out.name in n.output]
    if last.op_type == "Softmax":
        model.graph.output.append(onnx.helper.make_tensor_value_info(last.input[0], 1, None))
    return model


@pytest.mark.parametrize("name", _cases())
def test_random_weights_match_onnxruntime(name: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    model = with_logits(random_weights(onnx.load(_path(name))))
    imp = import_model(model, origin=name)
    x = np.random.default_rng(1).uniform(0, 1, runner_input(model).shape).astype(np.float32)
    got = run_reference(imp.module, imp.weights, [x])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    wants = sess.run(None, {sess.get_inputs()[0].name: x})
    for y, want in zip(got, wants, strict=True):
        assert y.shape == want.shape
        assert float(np.std(want)) > 0  # the random copy is not uniform again
        err = np.abs(y.astype(np.float64) - want) / max(float(np.abs(want).max()), 1e-30)
        assert float(err.max()) <= 1e-4, float(err.max())


def _plan(name: str, budget: int):
    imp = _imported(name)
    m = imp.module.clone()
    LowerToLoopsPass(budget=budget).apply(Context(), m)
    tile_and_lower(m)
    PlanArenaPass().apply(Context(), m)
    return imp, m


def _budgets():
    out = []
    for p in _cases():
        (name,) = p.values
        for b in ("256K", "min"):
            marks = list(p.marks)
            if b == "min" and not ALL:
                marks.append(pytest.mark.skip(reason="slow: TIGRIS_LIGHT_MODELS=all runs it"))
            out.append(pytest.param(name, b, marks=marks, id=f"{name}-{b}"))
    return out


def _budget(name: str, b: str) -> int:
    return 262144 if b == "256K" else tree_min_budget(main_func(_imported(name).module))


@pytest.mark.parametrize(("name", "budget"), _budgets())
def test_tiled_plan_equals_the_untiled_reference(name: str, budget: str) -> None:
    b = _budget(name, budget)
    imp, m = _plan(name, b)
    fn = main_func(imp.module)
    x = np.random.default_rng(2).uniform(0, 1, nn_shape(fn)).astype(np.float32)
    res = run_loop_module(m, imp.weights, [x])
    (ref,) = run_function(fn, imp.weights, [x])
    planned = plan(build_view(fn).graph, b)
    assert planned.fits and res.stats.fast_peak == planned.peak <= b
    np.testing.assert_allclose(res.outputs[0], ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


def nn_shape(fn) -> tuple[int, ...]:
    return tuple(fn.body.block.args[0].type.get_shape())


def _c_cases():
    out = []
    for p in _budgets():
        name, b = p.values
        marks = list(p.marks)
        if not ALL:
            marks.append(pytest.mark.skip(reason="slow: TIGRIS_LIGHT_MODELS=all builds the C"))
        out.append(pytest.param(name, b, marks=marks, id=p.id))
    return out


@pytest.mark.parametrize(("name", "budget"), _c_cases())
def test_tiled_c_equals_the_untiled_reference(name: str, budget: str) -> None:
    from tigris_ir.backend.c.build import run_c

    b = _budget(name, budget)
    imp, m = _plan(name, b)
    fn = main_func(imp.module)
    x = np.random.default_rng(3).uniform(0, 1, nn_shape(fn)).astype(np.float32)
    (ref,) = run_reference(imp.module, imp.weights, [np.ascontiguousarray(np.moveaxis(x, -1, 1))])
    (got,), _ = run_c(m, imp.weights, [np.ascontiguousarray(np.moveaxis(x, -1, 1))], strict=True)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))
