"""The operator tests onnx ships converted from PyTorch and its simple models
(`onnx/backend/test/data/{pytorch-converted,pytorch-operator,simple}`, with
inputs and expected outputs): each imports and its reference matches the
expected outputs with the backend runner's tolerances (rtol 1e-3, atol 1e-7,
NaN equal to NaN), or is refused with one diagnostic naming what it needs.
A wrong result or a crash fails.

`PASSING` lists the cases known to pass: a case on it that is refused fails
the test too, so what works cannot silently stop working. A case that starts
to pass should be added to it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model
from tigris_ir.reference.executor import run_reference

DATA = Path(onnx.__file__).parent / "backend" / "test" / "data"
KINDS = ("pytorch-converted", "pytorch-operator", "simple")
CASES = sorted(str(p.relative_to(DATA)) for k in KINDS for p in (DATA / k).iterdir() if p.is_dir())

PASSING = frozenset(
    """
pytorch-converted/test_AvgPool1d pytorch-converted/test_AvgPool1d_stride
pytorch-converted/test_AvgPool2d pytorch-converted/test_AvgPool2d_stride
pytorch-converted/test_BatchNorm1d_3d_input_eval pytorch-converted/test_BatchNorm2d_eval
pytorch-converted/test_BatchNorm2d_momentum_eval pytorch-converted/test_ConstantPad2d
pytorch-converted/test_Conv1d pytorch-converted/test_Conv1d_dilated
pytorch-converted/test_Conv1d_groups pytorch-converted/test_Conv1d_pad1
pytorch-converted/test_Conv1d_pad1size1 pytorch-converted/test_Conv1d_pad2
pytorch-converted/test_Conv1d_pad2size1 pytorch-converted/test_Conv1d_stride
pytorch-converted/test_Conv2d pytorch-converted/test_Conv2d_depthwise
pytorch-converted/test_Conv2d_depthwise_padded pytorch-converted/test_Conv2d_depthwise_strided
pytorch-converted/test_Conv2d_depthwise_with_multiplier pytorch-converted/test_Conv2d_dilated
pytorch-converted/test_Conv2d_groups pytorch-converted/test_Conv2d_groups_thnn
pytorch-converted/test_Conv2d_no_bias pytorch-converted/test_Conv2d_padding
pytorch-converted/test_Conv2d_strided pytorch-converted/test_ConvTranspose2d
pytorch-converted/test_ConvTranspose2d_no_bias pytorch-converted/test_ELU
pytorch-converted/test_GLU pytorch-converted/test_GLU_dim pytorch-converted/test_LeakyReLU
pytorch-converted/test_LeakyReLU_with_negval pytorch-converted/test_Linear
pytorch-converted/test_Linear_no_bias pytorch-converted/test_LogSoftmax
pytorch-converted/test_MaxPool1d pytorch-converted/test_MaxPool1d_stride
pytorch-converted/test_MaxPool1d_stride_padding_dilation pytorch-converted/test_MaxPool2d
pytorch-converted/test_MaxPool2d_stride_padding_dilation pytorch-converted/test_PReLU_1d
pytorch-converted/test_PReLU_2d pytorch-converted/test_PReLU_3d
pytorch-converted/test_PixelShuffle pytorch-converted/test_PoissonNLLLLoss_no_reduce
pytorch-converted/test_ReLU pytorch-converted/test_ReflectionPad2d
pytorch-converted/test_ReplicationPad2d pytorch-converted/test_Sigmoid
pytorch-converted/test_Softmax pytorch-converted/test_Softsign pytorch-converted/test_Tanh
pytorch-converted/test_ZeroPad2d pytorch-converted/test_log_softmax_dim3
pytorch-converted/test_log_softmax_lastdim pytorch-converted/test_softmax_functional_dim3
pytorch-converted/test_softmax_lastdim pytorch-operator/test_operator_addmm
pytorch-operator/test_operator_chunk pytorch-operator/test_operator_clip
pytorch-operator/test_operator_concat2 pytorch-operator/test_operator_conv
pytorch-operator/test_operator_convtranspose pytorch-operator/test_operator_exp
pytorch-operator/test_operator_flatten pytorch-operator/test_operator_max
pytorch-operator/test_operator_maxpool pytorch-operator/test_operator_min
pytorch-operator/test_operator_mm pytorch-operator/test_operator_pad
pytorch-operator/test_operator_permute2 pytorch-operator/test_operator_reduced_mean
pytorch-operator/test_operator_reduced_mean_keepdim pytorch-operator/test_operator_reduced_sum
pytorch-operator/test_operator_reduced_sum_keepdim pytorch-operator/test_operator_sqrt
pytorch-operator/test_operator_view simple/test_single_relu_model
pytorch-converted/test_Embedding pytorch-converted/test_Embedding_sparse
pytorch-converted/test_PReLU_1d_multiparam pytorch-converted/test_PReLU_2d_multiparam
pytorch-converted/test_PReLU_3d_multiparam pytorch-converted/test_SELU
pytorch-converted/test_Softmin pytorch-converted/test_Softplus
pytorch-operator/test_operator_basic pytorch-operator/test_operator_index
pytorch-operator/test_operator_non_float_params pytorch-operator/test_operator_params
pytorch-operator/test_operator_pow pytorch-operator/test_operator_repeat
pytorch-operator/test_operator_repeat_dim_overflow pytorch-operator/test_operator_selu
pytorch-operator/test_operator_symbolic_override
pytorch-operator/test_operator_symbolic_override_nested simple/test_shrink
simple/test_sign_model
""".split()
)


def load_case(case: str) -> tuple[onnx.ModelProto, list[np.ndarray], list[np.ndarray]]:
    d = DATA / case
    ds = d / "test_data_set_0"

    def read(prefix: str) -> list[np.ndarray]:
        files = sorted(ds.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[-1]))
        return [numpy_helper.to_array(onnx.load_tensor(str(f))) for f in files]

    return onnx.load(d / "model.onnx"), read("input"), read("output")


def outcome(case: str) -> tuple[str, str]:
    """('pass', ''), ('refused', the diagnostic) or ('wrong', how)."""
    model, inputs, expected = load_case(case)
    try:
        imp = import_model(model, origin=case)
    except ImportDiagnostic as e:
        return "refused", str(e)
    got = run_reference(imp.module, imp.weights, inputs)
    if len(got) != len(expected):
        return "wrong", f"{len(got)} outputs, expected {len(expected)}"
    for i, (y, want) in enumerate(zip(got, expected)):
        if y.shape != want.shape:
            return "wrong", f"output {i} has shape {y.shape}, expected {want.shape}"
        if not np.allclose(y, want, rtol=1e-3, atol=1e-7, equal_nan=True):
            return "wrong", f"output {i} differs by {float(np.nanmax(np.abs(y - want)))}"
    return "pass", ""


@pytest.mark.parametrize("case", CASES)
def test_case_passes_or_is_refused_by_name(case: str) -> None:
    with np.errstate(invalid="ignore", divide="ignore"):
        status, text = outcome(case)
    assert status != "wrong", text
    if case in PASSING:
        assert status == "pass", text
    if status == "refused":
        # one diagnostic, located at the model, naming what is missing
        assert text.startswith(f"{case}") and ": error: " in text and "\n" not in text, text


def test_every_known_passing_case_exists() -> None:
    assert PASSING <= set(CASES)
