"""A zoo of deterministic test networks built with `onnx.helper`.

Every model is generated from a seed, never downloaded, so tests and benchmarks
get the same bytes on every machine. Each builder takes size parameters: tests
build small instances, benchmarks the full ones. Inputs are NCHW (or NCL for 1D
nets), named ``input`` with batch 1; the one output is named ``output``.
Weights use He initialisation so that activations keep a sensible scale.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
"""The opset every zoo model declares."""

IR_VERSION = 8
"""An IR version that onnxruntime accepts together with opset 13."""

Size = Literal["small", "full"]


class _Graph:
    """Accumulates nodes and seeded initializers of one model under construction."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counts: dict[str, int] = {}
        self._clip_bounds: tuple[str, str] | None = None

    def fresh(self, prefix: str) -> str:
        """A new unique name; counters keep names stable from run to run."""
        count = self._counts.get(prefix, 0)
        self._counts[prefix] = count + 1
        return f"{prefix}_{count}"

    def const(self, prefix: str, array: np.ndarray) -> str:
        name = self.fresh(prefix)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def node(
        self, op_type: str, inputs: Sequence[str], prefix: str, **attrs: Any
    ) -> str:
        out = self.fresh(prefix)
        self.nodes.append(
            helper.make_node(op_type, list(inputs), [out], name=out, **attrs)
        )
        return out

    def he(self, shape: Sequence[int], fan_in: int, gain: float = 1.0) -> np.ndarray:
        std = gain * np.sqrt(2.0 / fan_in)
        return (self.rng.standard_normal(tuple(shape)) * std).astype(np.float32)

    def small(self, n: int, std: float = 0.05) -> np.ndarray:
        return (self.rng.standard_normal(n) * std).astype(np.float32)

    # -- layers ------------------------------------------------------------

    def conv(
        self,
        x: str,
        cin: int,
        cout: int,
        kernel: Sequence[int],
        *,
        stride: int | Sequence[int] = 1,
        pads: Sequence[int] | None = None,
        group: int = 1,
        dilation: int = 1,
        bias: bool = True,
        gain: float = 1.0,
    ) -> str:
        """A Conv; default pads keep the size at stride 1 (odd kernels)."""
        rank = len(kernel)
        strides = [stride] * rank if isinstance(stride, int) else list(stride)
        if pads is None:
            half = [dilation * (k - 1) // 2 for k in kernel]
            pads = half + half
        fan_in = (cin // group) * int(np.prod(kernel))
        w = self.const("w", self.he((cout, cin // group, *kernel), fan_in, gain))
        inputs = [x, w]
        if bias:
            inputs.append(self.const("b", self.small(cout)))
        return self.node(
            "Conv",
            inputs,
            "conv",
            kernel_shape=list(kernel),
            strides=strides,
            pads=list(pads),
            dilations=[dilation] * rank,
            group=group,
        )

    def conv_transpose(self, x: str, cin: int, cout: int, k: int, stride: int) -> str:
        w = self.const("w", self.he((cin, cout, k, k), cin * k * k // stride**2))
        b = self.const("b", self.small(cout))
        return self.node(
            "ConvTranspose",
            [x, w, b],
            "convT",
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[0, 0, 0, 0],
        )

    def batchnorm(self, x: str, c: int) -> str:
        """An inference BatchNormalization with non-trivial statistics."""
        rng = self.rng
        scale = self.const("bn_scale", rng.uniform(0.5, 1.5, c).astype(np.float32))
        beta = self.const("bn_bias", self.small(c, 0.1))
        mean = self.const("bn_mean", self.small(c, 0.1))
        var = self.const("bn_var", rng.uniform(0.5, 1.5, c).astype(np.float32))
        return self.node(
            "BatchNormalization", [x, scale, beta, mean, var], "bn", epsilon=1e-5
        )

    def relu(self, x: str) -> str:
        return self.node("Relu", [x], "relu")

    def relu6(self, x: str) -> str:
        """Clip(0, 6); every Clip shares one pair of scalar bounds."""
        if not self._clip_bounds:
            self._clip_bounds = (
                self.const("clip_min", np.array(0.0, dtype=np.float32)),
                self.const("clip_max", np.array(6.0, dtype=np.float32)),
            )
        return self.node("Clip", [x, *self._clip_bounds], "clip")

    def add(self, a: str, b: str) -> str:
        return self.node("Add", [a, b], "add")

    def maxpool(self, x: str, k: int, rank: int = 2) -> str:
        return self.node(
            "MaxPool",
            [x],
            "maxpool",
            kernel_shape=[k] * rank,
            strides=[k] * rank,
            pads=[0] * (2 * rank),
        )

    def avgpool(self, x: str, kernel: Sequence[int]) -> str:
        return self.node(
            "AveragePool",
            [x],
            "avgpool",
            kernel_shape=list(kernel),
            strides=list(kernel),
            pads=[0] * (2 * len(kernel)),
        )

    def concat(self, xs: Sequence[str]) -> str:
        return self.node("Concat", xs, "concat", axis=1)

    def resize2x(self, x: str, mode: str) -> str:
        """Resize by 2 in H and W; opset 13 takes (X, roi, scales)."""
        roi = self.const("roi", np.zeros(0, dtype=np.float32))
        scales = self.const("scales", np.array([1, 1, 2, 2], dtype=np.float32))
        if mode == "nearest":
            attrs: dict[str, Any] = {
                "coordinate_transformation_mode": "asymmetric",
                "nearest_mode": "floor",
            }
        elif mode == "linear":
            attrs = {"coordinate_transformation_mode": "half_pixel"}
        else:
            raise ValueError(f"resize mode must be 'nearest' or 'linear', not {mode!r}")
        return self.node("Resize", [x, roi, scales], "resize", mode=mode, **attrs)

    def head(self, x: str, c: int, num_classes: int) -> str:
        """GlobalAveragePool, Flatten, Gemm: the classifier every net ends with."""
        pooled = self.node("GlobalAveragePool", [x], "gap")
        flat = self.node("Flatten", [pooled], "flatten", axis=1)
        w = self.const("fc_w", self.he((num_classes, c), c))
        b = self.const("fc_b", self.small(num_classes))
        return self.node("Gemm", [flat, w, b], "gemm", transB=1)

    def model(
        self, name: str, input_shape: Sequence[int], output: str
    ) -> onnx.ModelProto:
        """Close the graph: rename the last tensor to ``output`` and infer its shape."""
        last = self.nodes[-1]
        if last.output[0] != output:
            raise AssertionError("the output must be produced by the last node")
        last.output[0] = "output"
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
            self.initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="tigris_ir.zoo",
        )
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        out_type = inferred.graph.output[0].type
        model.graph.output[0].type.CopyFrom(out_type)
        onnx.checker.check_model(model)
        return model


# -- MobileNetV2 -------------------------------------------------------------


def make_divisible(v: float, divisor: int = 8) -> int:
    """Round channels to a multiple of `divisor`, never below 90% of `v`."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


MOBILENET_V2_SETTINGS: tuple[tuple[int, int, int, int], ...] = (
    # expansion t, channels c, repeats n, first stride s (Sandler et al., Table 2)
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def mobilenet_v2(
    width: float = 1.0, resolution: int = 224, num_classes: int = 1000, seed: int = 0
) -> onnx.ModelProto:
    """MobileNetV2 with batch normalisation folded into biased convolutions."""
    g = _Graph(seed)
    cin = make_divisible(32 * width)
    x = g.relu6(g.conv("input", 3, cin, (3, 3), stride=2))
    for t, c, n, s in MOBILENET_V2_SETTINGS:
        cout = make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x
            if t != 1:
                y = g.relu6(g.conv(y, cin, hidden, (1, 1)))
            y = g.relu6(g.conv(y, hidden, hidden, (3, 3), stride=stride, group=hidden))
            residual = stride == 1 and cin == cout
            # A damped projection keeps the residual sums from growing stage by stage.
            y = g.conv(y, hidden, cout, (1, 1), gain=0.5 if residual else 1.0)
            x = g.add(x, y) if residual else y
            cin = cout
    last = make_divisible(1280 * max(1.0, width))
    x = g.relu6(g.conv(x, cin, last, (1, 1)))
    out = g.head(x, last, num_classes)
    return g.model("mobilenet_v2", (1, 3, resolution, resolution), out)


# -- MobileNetV1 -------------------------------------------------------------

MOBILENET_V1_SETTINGS: tuple[tuple[int, int], ...] = (
    # output channels, stride of the depthwise-separable blocks (Howard et al., Table 1)
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
)


def mobilenet_v1(
    width: float = 1.0, resolution: int = 224, num_classes: int = 1000, seed: int = 0
) -> onnx.ModelProto:
    """MobileNetV1: a 3x3 stride-2 stem, thirteen depthwise-separable blocks
    (3x3 depthwise, 1x1 pointwise), batch normalisation folded, Clip(0,6)."""
    g = _Graph(seed)
    cin = make_divisible(32 * width)
    x = g.relu6(g.conv("input", 3, cin, (3, 3), stride=2))
    for c, stride in MOBILENET_V1_SETTINGS:
        cout = make_divisible(c * width)
        x = g.relu6(g.conv(x, cin, cin, (3, 3), stride=stride, group=cin))
        x = g.relu6(g.conv(x, cin, cout, (1, 1)))
        cin = cout
    out = g.head(x, cin, num_classes)
    return g.model("mobilenet_v1", (1, 3, resolution, resolution), out)


# -- VGG ---------------------------------------------------------------------


def vgg(
    resolution: int = 96, width: int = 32, num_classes: int = 10, seed: int = 0
) -> onnx.ModelProto:
    """Eight 3x3 convs with Relu, a 2x2 MaxPool after every pair of them."""
    g = _Graph(seed)
    x, cin = "input", 3
    for stage in range(4):
        cout = width * 2**stage
        for _ in range(2):
            x = g.relu(g.conv(x, cin, cout, (3, 3)))
            cin = cout
        x = g.maxpool(x, 2)
    out = g.head(x, cin, num_classes)
    return g.model("vgg", (1, 3, resolution, resolution), out)


# -- ResNet ------------------------------------------------------------------


def resnet(
    resolution: int = 96,
    width: int = 16,
    blocks_per_stage: Sequence[int] = (2, 2, 2),
    num_classes: int = 10,
    seed: int = 0,
) -> onnx.ModelProto:
    """Basic-block ResNet with explicit BatchNormalization after every conv."""
    g = _Graph(seed)

    def conv_bn(
        x: str, cin: int, cout: int, k: int, stride: int, gain: float = 1.0
    ) -> str:
        y = g.conv(x, cin, cout, (k, k), stride=stride, bias=False, gain=gain)
        return g.batchnorm(y, cout)

    x = g.relu(conv_bn("input", 3, width, 3, 1))
    cin = width
    for stage, blocks in enumerate(blocks_per_stage):
        cout = width * 2**stage
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            y = g.relu(conv_bn(x, cin, cout, 3, stride))
            # Damped like the projections of MobileNetV2: sums must not blow up.
            y = conv_bn(y, cout, cout, 3, 1, gain=0.5)
            shortcut = (
                x if stride == 1 and cin == cout else conv_bn(x, cin, cout, 1, stride)
            )
            x = g.relu(g.add(shortcut, y))
            cin = cout
    out = g.head(x, cin, num_classes)
    return g.model("resnet", (1, 3, resolution, resolution), out)


# -- DS-CNN ------------------------------------------------------------------


def ds_cnn(
    channels: int = 64,
    num_blocks: int = 4,
    num_classes: int = 12,
    fold_bn: bool = True,
    seed: int = 0,
) -> onnx.ModelProto:
    """DS-CNN keyword spotting on 49 MFCC frames of 10 coefficients."""
    g = _Graph(seed)

    def conv_act(x: str, cin: int, cout: int, k: Sequence[int], **kw: Any) -> str:
        y = g.conv(x, cin, cout, k, bias=fold_bn, **kw)
        if not fold_bn:
            y = g.batchnorm(y, cout)
        return g.relu(y)

    # 10x4 stride 2 with "same" padding: 49x10 -> 25x5.
    x = conv_act("input", 1, channels, (10, 4), stride=2, pads=(4, 1, 5, 1))
    for _ in range(num_blocks):
        x = conv_act(x, channels, channels, (3, 3), group=channels)
        x = conv_act(x, channels, channels, (1, 1))
    x = g.avgpool(x, (25, 5))
    flat = g.node("Flatten", [x], "flatten", axis=1)
    w = g.const("fc_w", g.he((num_classes, channels), channels))
    b = g.const("fc_b", g.small(num_classes))
    out = g.node("Gemm", [flat, w, b], "gemm", transB=1)
    return g.model("ds_cnn", (1, 1, 49, 10), out)


# -- U-Net -------------------------------------------------------------------


def unet(
    resolution: int = 128,
    width: int = 16,
    in_channels: int = 3,
    out_channels: int = 2,
    resize_mode: str = "nearest",
    seed: int = 0,
) -> onnx.ModelProto:
    """Two-level U-Net: one ConvTranspose and one Resize upsampling, Concat skips."""
    if resolution % 4:
        raise ValueError(f"unet resolution must be a multiple of 4, got {resolution}")
    g = _Graph(seed)

    def block(x: str, cin: int, cout: int) -> str:
        x = g.relu(g.conv(x, cin, cout, (3, 3)))
        return g.relu(g.conv(x, cout, cout, (3, 3)))

    e0 = block("input", in_channels, width)
    e1 = block(g.maxpool(e0, 2), width, 2 * width)
    mid = block(g.maxpool(e1, 2), 2 * width, 4 * width)
    up1 = g.relu(g.conv_transpose(mid, 4 * width, 2 * width, 2, 2))
    d1 = block(g.concat([up1, e1]), 4 * width, 2 * width)
    up0 = g.resize2x(d1, resize_mode)
    d0 = block(g.concat([up0, e0]), 3 * width, width)
    out = g.conv(d0, width, out_channels, (1, 1))
    return g.model("unet", (1, in_channels, resolution, resolution), out)


# -- 1D audio ----------------------------------------------------------------


def audio_1d(
    length: int = 16000,
    channels: int = 1,
    width: int = 32,
    num_layers: int = 4,
    kernel: int = 9,
    pool: int = 4,
    num_classes: int = 10,
    seed: int = 0,
) -> onnx.ModelProto:
    """Rank-3 audio net: Conv1D+Relu+MaxPool1D; the first conv has stride 4."""
    g = _Graph(seed)
    x, cin = "input", channels
    for i in range(num_layers):
        cout = width * 2 ** (i // 2)
        x = g.relu(g.conv(x, cin, cout, (kernel,), stride=4 if i == 0 else 1))
        x = g.maxpool(x, pool, rank=1)
        cin = cout
    out = g.head(x, cin, num_classes)
    return g.model("audio_1d", (1, channels, length), out)


# -- dilated -----------------------------------------------------------------


def dilated(
    resolution: int = 64, width: int = 16, num_classes: int = 10, seed: int = 0
) -> onnx.ModelProto:
    """Large receptive fields: dilated 3x3 (2 and 4), 5x5 stride 2 and 7x7 convs."""
    g = _Graph(seed)
    x = g.relu(g.conv("input", 3, width, (3, 3)))
    x = g.relu(g.conv(x, width, 2 * width, (5, 5), stride=2))
    x = g.relu(g.conv(x, 2 * width, 2 * width, (3, 3), dilation=2))
    x = g.relu(g.conv(x, 2 * width, 2 * width, (3, 3), dilation=4))
    x = g.relu(g.conv(x, 2 * width, 4 * width, (7, 7)))
    out = g.head(x, 4 * width, num_classes)
    return g.model("dilated", (1, 3, resolution, resolution), out)


# -- several inputs and outputs -------------------------------------------------


def two_heads(
    resolution: int = 16,
    width: int = 8,
    *,
    two_inputs: bool = False,
    features_out: bool = False,
    split: bool = False,
    seed: int = 0,
) -> onnx.ModelProto:
    """A trunk of two 3x3 convs with two heads of different shapes: a 1x1 conv
    at full resolution ("dense", 4 channels) and MaxPool 2x2 then a 3x3 conv
    ("coarse", 6 channels at half resolution). `two_inputs`: a second image
    ("input2") through its own conv is added to the first's; `features_out`:
    the trunk's features, which the heads read, are an output too (first);
    `split`: the heads are the two parts (3 and width - 3 channels) of one
    channel Split of the trunk, pooled 2x2, instead. Not in `ZOO` (whose models have one
    input and one output)."""
    g = _Graph(seed)
    x = g.relu(g.conv("input", 3, width, (3, 3)))
    if two_inputs:
        x = g.add(x, g.relu(g.conv("input2", 3, width, (3, 3))))
    x = g.relu(g.conv(x, width, width, (3, 3)))
    if split:
        sizes = g.const("split", np.array([3, width - 3], dtype=np.int64))
        heads = ["dense", "coarse"]
        pooled = g.maxpool(x, 2)
        g.nodes.append(helper.make_node("Split", [pooled, sizes], heads, name="split", axis=1))
    else:
        heads = ["dense", "coarse"]
        w, b = g.const("w", g.he((4, width, 1, 1), width)), g.const("b", g.small(4))
        g.nodes.append(helper.make_node("Conv", [x, w, b], ["dense"], name="dense"))
        w, b = g.const("w", g.he((6, width, 3, 3), 9 * width)), g.const("b", g.small(6))
        pooled = g.maxpool(x, 2)
        g.nodes.append(
            helper.make_node("Conv", [pooled, w, b], ["coarse"], name="coarse", pads=[1] * 4)
        )
    names = ["input", "input2"] if two_inputs else ["input"]
    shape = (1, 3, resolution, resolution)
    graph = helper.make_graph(
        g.nodes,
        "two_heads",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in names],
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
            for n in ([x] if features_out else []) + heads
        ],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="tigris_ir.zoo",
    )
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for out, got in zip(model.graph.output, inferred.graph.output):
        out.type.CopyFrom(got.type)
    onnx.checker.check_model(model)
    return model


# -- registry ----------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    """A builder with the keyword arguments of its full and small instances."""

    builder: Callable[..., onnx.ModelProto]
    full: Mapping[str, Any]
    small: Mapping[str, Any]
    description: str = ""

    def kwargs(self, size: Size) -> dict[str, Any]:
        if size == "full":
            return dict(self.full)
        if size == "small":
            return dict(self.small)
        raise ValueError(f"size must be 'small' or 'full', not {size!r}")


ZOO: dict[str, ModelSpec] = {
    "mobilenet_v2": ModelSpec(
        mobilenet_v2,
        {"width": 1.0, "resolution": 224},
        {"width": 0.5, "resolution": 32, "num_classes": 10},
        "MobileNetV2 1.0, BN folded, Clip(0,6), 1000 classes",
    ),
    "mobilenet_v2_035": ModelSpec(
        mobilenet_v2,
        {"width": 0.35, "resolution": 144},
        {"width": 0.35, "resolution": 32, "num_classes": 10},
        "MobileNetV2 0.35, BN folded, Clip(0,6), 1000 classes",
    ),
    "mobilenet_v1_025": ModelSpec(
        mobilenet_v1,
        {"width": 0.25, "resolution": 96},
        {"width": 0.25, "resolution": 32, "num_classes": 10},
        "MobileNetV1 0.25, BN folded, Clip(0,6), 1000 classes",
    ),
    "vgg": ModelSpec(
        vgg,
        {"resolution": 96, "width": 32},
        {"resolution": 32, "width": 8},
        "VGG-style: 8 conv3x3+Relu, MaxPool 2x2 after every two, GAP, Gemm",
    ),
    "resnet": ModelSpec(
        resnet,
        {"resolution": 96, "width": 16},
        {"resolution": 32, "width": 8, "blocks_per_stage": (1, 1, 1)},
        "ResNet-style basic blocks, explicit BatchNormalization, 1x1 projections",
    ),
    "ds_cnn": ModelSpec(
        ds_cnn,
        {"channels": 64},
        {"channels": 16, "num_blocks": 2, "fold_bn": False},
        "DS-CNN keyword spotting on 49x10 MFCC, 4 depthwise-separable blocks",
    ),
    "unet": ModelSpec(
        unet,
        {"resolution": 128, "width": 16},
        {"resolution": 32, "width": 8, "resize_mode": "linear"},
        "U-Net: MaxPool down, ConvTranspose and Resize up, Concat skips",
    ),
    "audio_1d": ModelSpec(
        audio_1d,
        {"length": 16000, "width": 32},
        {"length": 1024, "width": 8},
        "1D audio CNN: Conv1D+Relu+MaxPool1D x4, GAP, Gemm",
    ),
    "dilated": ModelSpec(
        dilated,
        {"resolution": 64, "width": 16},
        {"resolution": 32, "width": 8},
        "dilated 3x3 (d=2, d=4), 5x5 stride 2 and 7x7 convs, GAP, Gemm",
    ),
}


class UnknownModelError(KeyError):
    """A model name that is not in the zoo."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown model {self.name!r} (known: {', '.join(ZOO)})"


def spec(name: str) -> ModelSpec:
    try:
        return ZOO[name]
    except KeyError:
        raise UnknownModelError(name) from None


def input_shape(model: onnx.ModelProto) -> tuple[int, ...]:
    """The static shape of the model's single input."""
    dims = model.graph.input[0].type.tensor_type.shape.dim
    return tuple(d.dim_value for d in dims)


def output_shape(model: onnx.ModelProto) -> tuple[int, ...]:
    dims = model.graph.output[0].type.tensor_type.shape.dim
    return tuple(d.dim_value for d in dims)


def count_parameters(model: onnx.ModelProto) -> int:
    """Number of weights: elements of the float initializers that are not scalars."""
    return sum(
        int(np.prod(t.dims))
        for t in model.graph.initializer
        if t.data_type == TensorProto.FLOAT and len(t.dims) > 0
    )


# -- int8 --------------------------------------------------------------------


def calibration_inputs(
    model: onnx.ModelProto, *, seed: int, count: int
) -> list[np.ndarray]:
    """Seeded standard-normal inputs of the model's input shape."""
    rng = np.random.default_rng(seed)
    shape = input_shape(model)
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(count)]


def quantize(
    model: onnx.ModelProto, *, seed: int, num_calibration: int = 8
) -> onnx.ModelProto:
    """Static int8 QDQ quantization (per-channel weights) with onnxruntime.

    Same model, seed and count give the same bytes: calibration is a min/max
    over seeded inputs and the temp file names never enter the model.
    """
    try:
        from onnxruntime.quantization import (
            CalibrationDataReader,
            QuantFormat,
            QuantType,
            quantize_static,
        )
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as exc:
        raise RuntimeError(
            "int8 quantization needs the 'onnxruntime' package "
            "(pip install onnxruntime, or the 'test' extra of tigris-ir)"
        ) from exc

    rng = np.random.default_rng(seed)
    consts = {t.name for t in model.graph.initializer}
    ports = [
        (x.name, tuple(d.dim_value for d in x.type.tensor_type.shape.dim))
        for x in model.graph.input
        if x.name not in consts
    ]
    samples = [  # seeded standard-normal inputs (calibration_inputs' for one input)
        {name: rng.standard_normal(shape).astype(np.float32) for name, shape in ports}
        for _ in range(num_calibration)
    ]

    class _Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it: Iterator[dict[str, np.ndarray]] = iter(samples)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    with tempfile.TemporaryDirectory(prefix="tigris_zoo_") as tmp:
        src = os.path.join(tmp, "float.onnx")
        pre = os.path.join(tmp, "pre.onnx")
        dst = os.path.join(tmp, "int8.onnx")
        onnx.save(model, src)
        # Folds BatchNormalization into Conv so the int8 graph carries no
        # quantized BN parameters. Shapes are static, so the symbolic pass
        # (which needs sympy) adds nothing over ONNX shape inference.
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        quantize_static(
            pre,
            dst,
            _Reader(),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
        return _drop_unused_opsets(onnx.load(dst))


def _drop_unused_opsets(model: onnx.ModelProto) -> onnx.ModelProto:
    """Keep only the default domain and domains some node uses.

    The onnxruntime optimizer declares all of its own domains; an importer
    should not have to know them.
    """
    used = {n.domain for n in model.graph.node} | {""}
    keep = [o for o in model.opset_import if o.domain in used]
    del model.opset_import[:]
    model.opset_import.extend(keep)
    return model


# -- entry points --------------------------------------------------------------


def build(
    name: str, *, size: Size = "small", int8: bool = False, **overrides: Any
) -> onnx.ModelProto:
    """Build zoo model `name`; `overrides` replace the size's keyword arguments."""
    s = spec(name)
    kwargs = s.kwargs(size) | overrides
    model = s.builder(**kwargs)
    if int8:
        model = quantize(model, seed=int(kwargs.get("seed", 0)))
    return model


def write(
    name: str,
    path: str | os.PathLike[str],
    *,
    size: Size = "small",
    int8: bool = False,
    **overrides: Any,
) -> onnx.ModelProto:
    """Build zoo model `name` and save it to `path`."""
    model = build(name, size=size, int8=int8, **overrides)
    onnx.save(model, os.fspath(path))
    return model
