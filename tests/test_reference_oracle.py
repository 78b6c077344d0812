"""The reference executor against onnxruntime on every zoo model (small sizes).

float32 within a relative 1e-4; int8 QDQ within 1 quantization step of the
output against onnxruntime's execution of the QDQ graph (see tigris_ir.reference.oracle).
"""

from __future__ import annotations

import numpy as np
import pytest
import zoo

from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.reference.executor import run_reference
from tigris_ir.reference.oracle import compare_with_onnxruntime, output_scales, per_op_lsb

pytest.importorskip("onnxruntime")

CASES = [(name, int8) for name in zoo.ZOO for int8 in (False, True)]


@pytest.mark.parametrize(
    ("name", "int8"), CASES, ids=[f"{n}-{'int8' if q else 'f32'}" for n, q in CASES]
)
def test_reference_matches_onnxruntime(name: str, int8: bool) -> None:
    model = zoo.build(name, size="small", int8=int8)
    imported = import_model(model, origin=name)
    rng = np.random.default_rng(11)
    x = rng.standard_normal(zoo.input_shape(model)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, ours, ["output"])
    assert report.diffs[0].quantized == int8
    assert report.ok, report.text


def test_report_flags_a_real_mismatch() -> None:
    """The oracle itself can fail: a perturbed output is reported as a mismatch."""
    model = zoo.build("vgg", size="small")
    imported = import_model(model, origin="vgg")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape(model)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])[0]
    bad = ours.copy()
    bad.flat[3] += np.abs(ours).max() * 1e-2
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, [bad], ["output"])
    assert not report.ok
    assert report.diffs[0].where == tuple(int(i) for i in np.unravel_index(3, bad.shape))
    assert "MISMATCH" in report.text


def test_int8_mismatch_counts_quantization_steps() -> None:
    model = zoo.build("ds_cnn", size="small", int8=True)
    imported = import_model(model, origin="ds_cnn")
    x = np.random.default_rng(0).standard_normal(zoo.input_shape(model)).astype(np.float32)
    ours = run_reference(imported.module, imported.weights, [x])[0]
    step = next(iter(output_scales(model).values()))
    bad = ours + np.float32(2 * step)
    report = compare_with_onnxruntime(model.SerializeToString(), {"input": x}, [bad], ["output"])
    assert report.diffs[0].worst == 2.0
    assert not report.ok


@pytest.mark.parametrize("name", list(zoo.ZOO))
def test_every_quantized_op_within_one_step(name: str) -> None:
    """Fed onnxruntime's own inputs, every quantized op lands within 1 LSB."""
    model = zoo.build(name, size="small", int8=True)
    imported = import_model(model, origin=name)
    x = np.random.default_rng(3).standard_normal(zoo.input_shape(model)).astype(np.float32)
    diffs = per_op_lsb(model.SerializeToString(), imported, {"input": x})
    assert len(diffs) >= 5  # the check saw the network's quantized ops
    worst = max(diffs, key=lambda d: d.worst_lsb)
    assert worst.worst_lsb <= 1, worst
    # rounding ties only (linear resize makes exact .5 ties), not a systematic error
    assert sum(d.differing for d in diffs) <= 1e-3 * sum(d.size for d in diffs) + 2


def test_a_scalar_output_is_checked(tmp_path, capsys) -> None:
    """A model whose first output is a scalar (a mean over every axis, no
    keepdims) beside a feature map: `tigris-run --check` compares both with
    onnxruntime, and with a plan both with the untiled reference (a 0-d
    output once made the comparison fail inside numpy)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from tigris_ir.tools.tigris_run import main

    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["y"], ["r"]),
        helper.make_node("ReduceMean", ["r"], ["m"], axes=[0, 1, 2, 3], keepdims=0),
    ]
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(4, np.float32), "b"),
    ]
    graph = helper.make_graph(
        nodes,
        "scalar_out",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [
            helper.make_tensor_value_info("m", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4, 12, 12]),
        ],
        inits,
    )
    path = tmp_path / "scalar_out.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    assert main([str(path), "--random-input", "0", "--check"]) == 0
    out = capsys.readouterr().out
    assert "output 'm': float32 scalar" in out
    assert "output 'm': ok: worst" in out and "output 'r': ok: worst" in out
    assert main([str(path), "-m", "4K", "--random-input", "0", "--check"]) == 0
    out = capsys.readouterr().out
    assert "output 'm': equals the untiled reference" in out
