"""Graph outputs that are constants once the input shape is fixed (a Shape or
Size of the input, a Constant), folded at import: the importer copies each
into an output of its own (`nn.identity`), which the plan holds and counts
like any computed output, and a model input nothing reads any more (its only
reader was the folded Shape) is stored nowhere.

Each model goes through every oracle of `ops_oracle.check_model`: the
untiled reference against onnxruntime, then the plan at the minimum budget
and at 64K, run by the loop-level interpreter and as C, equal to the
reference (int8 and integers bit-exact) with the measured fast peak equal to
the planned one. `tigris-run ... --check --stats --backend c` runs the same
way from the command line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

from tigris_ir.dialects import nn
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import min_budget, plan

pytest.importorskip("onnxruntime")

from ops_oracle import check_model, make_model, qdq, rand  # noqa: E402

X = (1, 4, 6, 8)


def shape_only() -> onnx.ModelProto:
    """The only output is Shape(x): x is read by nothing after folding."""
    return make_model(
        [helper.make_node("Shape", ["x"], ["s"])], {"x": X}, ["s"], types={"s": np.int64}
    )


def computed_and_constant() -> onnx.ModelProto:
    """A computed output beside a Shape and a Size (rank 0) output."""
    return make_model(
        [
            helper.make_node("Relu", ["x"], ["y"]),
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Size", ["x"], ["n"]),
        ],
        {"x": X},
        ["y", "s", "n"],
        types={"s": np.int64, "n": np.int64},
    )


def constant_also_read() -> onnx.ModelProto:
    """A Constant of rank 4 (so the output crosses the boundary as NCHW) that
    is an output and also an operand of the Add computing the other output."""
    c = np.random.default_rng(3).standard_normal((1, 4, 1, 8)).astype(np.float32)
    return make_model(
        [
            helper.make_node("Constant", [], ["c"], value=onnx.numpy_helper.from_array(c, "c")),
            helper.make_node("Add", ["x", "c"], ["y"]),
        ],
        {"x": X},
        ["c", "y"],
    )


def int8_with_constants() -> onnx.ModelProto:
    """An int8 (QDQ) Add of the input and a dequantized int8 constant, whose
    dequantized value is also an output, beside Shape(x)."""
    k = np.random.default_rng(4).integers(-100, 100, (1, 4, 1, 8)).astype(np.int8)
    nodes, inits = qdq(
        helper.make_node("Add", ["x", "kd"], ["y"], name="add"), 0.05, 0.08, q_inputs=(0, 1)
    )
    # the constant enters the Add through its own Q/DQ: make it the raw int8
    # initializer dequantized on the Add's input scale
    nodes = [
        helper.make_node("DequantizeLinear", ["k", "add_si", "add_zp"], ["kd"]),
        *nodes,
        helper.make_node("Shape", ["x"], ["s"]),
    ]
    inits["k"] = k
    return make_model(nodes, {"x": X}, ["y", "kd", "s"], inits, types={"s": np.int64})


def dropout_mask() -> onnx.ModelProto:
    """An inference Dropout with its mask as an output: the mask is a
    constant of bools (all true) the shape of the input."""
    return make_model(
        [helper.make_node("Dropout", ["x"], ["y", "mask"])],
        {"x": X},
        ["y", "mask"],
        opset=13,
        types={"mask": np.bool_},
    )


MODELS = {
    "shape_only": shape_only,
    "computed_and_constant": computed_and_constant,
    "constant_also_read": constant_also_read,
    "int8_with_constants": int8_with_constants,
    "dropout_mask": dropout_mask,
}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("budget", [None, 65536], ids=["min", "64K"])
def test_constant_outputs_run_tiled_and_as_c(name: str, budget: int | None) -> None:
    model = MODELS[name]()
    got = check_model(model, {"x": rand(X, seed=1)}, budget=budget, min_tiles=0)
    # each constant output is a tensor the plan holds: a copy of the weight
    fn = main_func(got.module)
    ret = fn.body.block.last_op
    assert ret is not None
    copies = [v.owner for v in ret.operands if isinstance(v.owner, nn.IdentityOp)]
    assert any(isinstance(c.operands[0].owner, nn.WeightOp) for c in copies)


def test_constant_output_bytes_are_counted() -> None:
    """The plan of Shape(x) alone holds exactly the output's 4 int64 (32 B,
    aligned) and nothing of the unread input; its minimum is below that."""
    imp = import_model(shape_only(), origin="t")
    g = build_view(main_func(imp.module)).graph
    p = plan(g, 65536)
    assert p.fits and p.peak == 32 and p.slow_peak == 0
    assert min_budget(g) < 32 and plan(g, min_budget(g)).fits


@pytest.mark.parametrize("budget", ["64K", "min"])
def test_tigris_run_checks_a_constant_output(
    budget: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tigris_ir.tools.tigris_run import run

    path = tmp_path / "m.onnx"
    model = computed_and_constant()
    onnx.save(model, path)
    if budget == "min":
        imp = import_model(model, origin="t")
        budget = str(min_budget(build_view(main_func(imp.module)).graph))
    args = [str(path), "-m", budget, "--random-input", "1", "--check", "--stats"]
    assert run([*args, "--backend", "c"]) == 0
    out = capsys.readouterr().out
    for o in ("y", "s", "n"):
        assert f"output '{o}': equals the untiled reference" in out, out
    assert run(args) == 0
    interp = capsys.readouterr().out
    stats = [ln for ln in out.splitlines() if ln.split(":")[0] in ("fast peak", "slow peak")]
    assert stats and all(ln in interp for ln in stats)
