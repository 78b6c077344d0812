"""The zoo builds valid, deterministic, well-scaled models, float and int8."""

from __future__ import annotations

import collections
import functools
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import zoo
import zoo_cli as tigris_zoo

ort = pytest.importorskip("onnxruntime")

NAMES = sorted(zoo.ZOO)

ALLOWED_FLOAT_OPS = {
    "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm",
    "MatMul", "Add", "Mul", "Relu", "Clip", "Sigmoid", "HardSwish", "Concat",
    "Reshape", "Flatten", "Resize", "BatchNormalization", "Softmax",
}  # fmt: skip


@functools.cache
def small(name: str, int8: bool) -> bytes:
    """Serialized small model, built once per test session."""
    return zoo.build(name, size="small", int8=int8).SerializeToString()


def run_ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    return sess.run(["output"], {"input": x})[0]


def seeded_input(model: onnx.ModelProto) -> np.ndarray:
    rng = np.random.default_rng(1234)
    return rng.standard_normal(zoo.input_shape(model)).astype(np.float32)


@pytest.mark.parametrize("int8", [False, True], ids=["fp32", "int8"])
@pytest.mark.parametrize("name", NAMES)
def test_small_model_is_valid_and_runs(name: str, int8: bool) -> None:
    model = onnx.load_from_string(small(name, int8))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["input"]
    assert [o.name for o in model.graph.output] == ["output"]
    shape = zoo.input_shape(model)
    assert shape[0] == 1 and len(shape) in (3, 4)
    assert {o.domain for o in model.opset_import} == {""}
    assert model.opset_import[0].version == zoo.OPSET

    y = run_ort(model, seeded_input(model))
    assert y.shape == zoo.output_shape(model)
    assert np.isfinite(y).all()
    # Neither vanishing nor exploding activations.
    assert 1e-2 < float(y.std()) < 1e2


@pytest.mark.parametrize("name", NAMES)
def test_float_models_use_allowed_ops_only(name: str) -> None:
    model = onnx.load_from_string(small(name, False))
    ops = {n.op_type for n in model.graph.node}
    assert ops <= ALLOWED_FLOAT_OPS, ops - ALLOWED_FLOAT_OPS


@pytest.mark.parametrize("name", NAMES)
def test_int8_is_qdq_with_int8_tensors(name: str) -> None:
    model = onnx.load_from_string(small(name, True))
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert ops["QuantizeLinear"] > 0 and ops["DequantizeLinear"] > 0
    assert "BatchNormalization" not in ops  # folded before quantization
    int8 = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert int8, "weights must be stored as int8"


@pytest.mark.parametrize("int8", [False, True], ids=["fp32", "int8"])
@pytest.mark.parametrize("name", NAMES)
def test_build_is_deterministic(name: str, int8: bool) -> None:
    again = zoo.build(name, size="small", int8=int8).SerializeToString()
    assert again == small(name, int8)


def test_seed_changes_weights() -> None:
    a = zoo.build("vgg", size="small", seed=0).SerializeToString()
    b = zoo.build("vgg", size="small", seed=1).SerializeToString()
    assert a != b


def test_quantize_seed_changes_calibration() -> None:
    model = zoo.build("dilated", size="small")
    a = zoo.quantize(model, seed=0).SerializeToString()
    b = zoo.quantize(model, seed=1).SerializeToString()
    assert a != b


def test_full_mobilenet_v2() -> None:
    model = zoo.build("mobilenet_v2", size="full")
    assert zoo.input_shape(model) == (1, 3, 224, 224)
    assert zoo.output_shape(model) == (1, 1000)
    assert abs(zoo.count_parameters(model) - 3.5e6) < 0.05 * 3.5e6
    ops = collections.Counter(n.op_type for n in model.graph.node)
    # 52 convs: stem, 17 blocks (the first without expansion), last 1x1.
    assert ops["Conv"] == 1 + 2 + 16 * 3 + 1
    assert ops["Add"] == 10
    assert ops["Clip"] == 35


def test_mobilenet_v2_035_full_shape() -> None:
    model = zoo.build("mobilenet_v2_035", size="full")
    assert zoo.input_shape(model) == (1, 3, 144, 144)
    # Channels round to multiples of 8; the last conv keeps 1280 below width 1.
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    inits = {t.name: t for t in model.graph.initializer}
    couts = [inits[c.input[1]].dims[0] for c in convs]
    assert couts[0] == 16 and couts[-1] == 1280
    assert all(c % 8 == 0 for c in couts)


def test_mobilenet_v1_025_full() -> None:
    """MobileNetV1 0.25 at 96x96: 0.47 M parameters (Howard et al., Table 6),
    the stem, thirteen depthwise-separable blocks and the classifier."""
    model = zoo.build("mobilenet_v1_025", size="full")
    assert zoo.input_shape(model) == (1, 3, 96, 96)
    assert zoo.output_shape(model) == (1, 1000)
    assert abs(zoo.count_parameters(model) - 0.47e6) < 0.02 * 0.47e6
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert ops["Conv"] == 1 + 2 * 13 and ops["Clip"] == 27 and ops["Gemm"] == 1


def test_make_divisible() -> None:
    assert zoo.make_divisible(32 * 0.35) == 16
    assert zoo.make_divisible(24 * 0.35) == 8
    assert zoo.make_divisible(320 * 0.35) == 112


def test_resnet_keeps_explicit_batchnorm() -> None:
    model = onnx.load_from_string(small("resnet", False))
    ops = collections.Counter(n.op_type for n in model.graph.node)
    assert ops["BatchNormalization"] == ops["Conv"]


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("ds_cnn", (1, 1, 49, 10)),
        ("audio_1d", (1, 1, 16000)),
        ("unet", (1, 3, 128, 128)),
        ("vgg", (1, 3, 96, 96)),
        ("resnet", (1, 3, 96, 96)),
    ],
)
def test_full_input_shapes(name: str, shape: tuple[int, ...]) -> None:
    assert zoo.input_shape(zoo.build(name, size="full")) == shape


def test_unet_output_is_a_feature_map() -> None:
    model = onnx.load_from_string(small("unet", False))
    (h, w) = zoo.input_shape(model)[2:]
    assert zoo.output_shape(model)[2:] == (h, w)
    ops = {n.op_type for n in model.graph.node}
    assert {"ConvTranspose", "Resize", "Concat", "MaxPool"} <= ops


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_unet_resize_modes(mode: str) -> None:
    model = zoo.build("unet", size="small", resize_mode=mode)
    (resize,) = [n for n in model.graph.node if n.op_type == "Resize"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in resize.attribute}
    assert attrs["mode"] == mode.encode()
    assert np.isfinite(run_ort(model, seeded_input(model))).all()


def test_dilated_has_dilations_and_large_kernels() -> None:
    model = onnx.load_from_string(small("dilated", False))
    attrs = [
        {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        for n in model.graph.node
        if n.op_type == "Conv"
    ]
    assert {tuple(a["dilations"]) for a in attrs} >= {(2, 2), (4, 4)}
    assert {tuple(a["kernel_shape"]) for a in attrs} >= {(5, 5), (7, 7)}


def test_unknown_model_raises() -> None:
    with pytest.raises(zoo.UnknownModelError, match="known: mobilenet_v2"):
        zoo.build("nope")


def test_cli_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert tigris_zoo.run(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(zoo.ZOO)
    assert lines[0].split()[1] == "1x3x224x224"


def test_cli_unknown_model(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    argv = ["tigris-zoo", "build", "x", "-o", str(tmp_path / "x.onnx")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        tigris_zoo.main()
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("python tests/zoo_cli.py: error: unknown model 'x' (known: ")
    assert "Traceback" not in err
    assert not (tmp_path / "x.onnx").exists()


def test_cli_build_small(tmp_path: Path) -> None:
    path = tmp_path / "ds.onnx"
    assert tigris_zoo.run(["build", "ds_cnn", "--small", "-o", str(path)]) == 0
    assert path.read_bytes() == small("ds_cnn", False)


def test_cli_build_all_small(tmp_path: Path) -> None:
    out = tmp_path / "zoo"
    assert tigris_zoo.run(["build-all", "--out", str(out), "--small"]) == 0
    expected = {f"{n}.onnx" for n in NAMES} | {f"{n}_int8.onnx" for n in NAMES}
    assert {p.name for p in out.iterdir()} == expected
    for name in NAMES:
        assert (out / f"{name}.onnx").read_bytes() == small(name, False)
        assert (out / f"{name}_int8.onnx").read_bytes() == small(name, True)


def test_quantize_without_onnxruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    model = onnx.load_from_string(small("ds_cnn", False))
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)
    with pytest.raises(RuntimeError, match="onnxruntime"):
        zoo.quantize(model, seed=0)
