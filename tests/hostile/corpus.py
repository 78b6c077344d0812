"""A seeded generator of hostile inputs for tigris-opt, tigris-run and tigris-analyze.

Families (as in issue 14):

* `truncated`: valid models cut at seeded offsets;
* `bitflip`: valid models with 1 to 4 seeded bits flipped;
* `semantic`: valid protobufs with invalid semantics (axes out of range, zero
  strides, bad per-axis parameters, contradicting declared shapes, absurd
  sizes, unknown opsets), and valid models of every opset 7 and up;
* `ir`: edited IR (non-UTF-8 bytes, truncation, deep nesting, shapes and
  attributes that do not verify, weights that differ from the IR);
* `cli`: bad command lines (options, shapes, budgets, targets, paths);
* `budget`: budgets too small for the model.

Every case says what must happen: `refuse` (exit 1, a diagnostic naming the
`where` strings), `ok` (exit 0, and its `check` holds) or `either` (a model that
may have stayed valid: exit 0 only when it agrees with onnxruntime, which the
command checks with `--check`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FAMILIES = ("truncated", "bitflip", "semantic", "ir", "cli", "budget")


@dataclass(frozen=True)
class Case:
    family: str
    name: str
    tool: str  # "opt" | "run" | "analyze"
    argv: tuple[str, ...]
    expect: str  # "refuse" | "ok" | "either"
    where: tuple[str, ...] = ()
    """Substrings every one of which the diagnostic must contain."""
    stream: str = "stderr"
    """Where the refusal is printed (tigris-analyze prints a plan that does not fit)."""
    check: Callable[[], str | None] | None = field(default=None, compare=False)
    """For `ok`: a post-condition on the files; returns a problem or None."""


F, I8, U8 = TensorProto.FLOAT, TensorProto.INT8, TensorProto.UINT8


def _vi(name: str, elem: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: list[tuple[str, int, object]],
    outputs: list[tuple[str, int, object]],
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 13,
    ir_version: int | None = None,
) -> onnx.ModelProto:
    g = helper.make_graph(
        nodes,
        "g",
        [_vi(*i) for i in inputs],
        [_vi(*o) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()],
    )
    if (ir_version or _ir_for(opset)) < 4:  # initializers are graph inputs before IR 4
        g.input.extend(_vi(t.name, t.data_type, list(t.dims)) for t in g.initializer)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version if ir_version is not None else _ir_for(opset)
    return m


def _ir_for(opset: int) -> int:
    """The IR version of the onnx release that introduced an opset (onnx's own
    table), at most 10: what onnxruntime reads."""
    for row in helper.VERSION_TABLE:
        if row[2] >= opset:
            return min(row[1], 10)
    return 10


def _w(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------ base models


def base_conv(rng: np.random.Generator, opset: int = 13) -> onnx.ModelProto:
    """x 1x3x8x8 -> Conv 3x3 (4) -> Relu -> y 1x4x8x8."""
    return make_model(
        [
            helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"], name="relu"),
        ],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 4, 8, 8])],
        {"w": _w(rng, 4, 3, 3, 3), "b": _w(rng, 4)},
        opset=opset,
    )


def base_two(rng: np.random.Generator) -> onnx.ModelProto:
    """Two 3x3 convolutions on 1x3x16x16: tiles under a few KiB."""
    return make_model(
        [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["r"], name="relu"),
            helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
        ],
        [("x", F, [1, 3, 16, 16])],
        [("y", F, [1, 4, 16, 16])],
        {"w": _w(rng, 4, 3, 3, 3), "w2": _w(rng, 4, 4, 3, 3)},
    )


def base_qdq(rng: np.random.Generator) -> onnx.ModelProto:
    """An int8 QDQ convolution with a per-channel weight scale."""
    w = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    return make_model(
        [
            helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
            helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_in"),
            helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dq_w", axis=0),
            helper.make_node("DequantizeLinear", ["bq", "bs"], ["bd"], name="dq_b", axis=0),
            helper.make_node("Conv", ["xd", "wd", "bd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["yq"], name="q_out"),
            helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_out"),
        ],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 4, 8, 8])],
        {
            "xs": np.array(0.02, np.float32),
            "xz": np.array(0, np.int8),
            "wq": w,
            "ws": np.array([0.01, 0.02, 0.015, 0.01], np.float32),
            "wz": np.zeros(4, np.int8),
            "bq": rng.integers(-1000, 1000, 4).astype(np.int32),
            "bs": (0.02 * np.array([0.01, 0.02, 0.015, 0.01])).astype(np.float32),
            "ys": np.array(0.05, np.float32),
            "yz": np.array(0, np.int8),
        },
    )


def single(
    op: str,
    in_shape: list[int],
    out_shape,
    inits: dict[str, np.ndarray] | None = None,
    extra_inputs: tuple[str, ...] = (),
    n_out: int = 1,
    opset: int = 13,
    **attrs,
) -> onnx.ModelProto:
    """One node `n0` of type `op` on input x."""
    outs = [f"y{i}" for i in range(n_out)]
    return make_model(
        [helper.make_node(op, ["x", *extra_inputs], outs, name="n0", **attrs)],
        [("x", F, in_shape)],
        [(o, F, out_shape) for o in outs],
        inits,
        opset=opset,
    )


def _save(m: onnx.ModelProto, path: Path) -> str:
    path.write_bytes(m.SerializeToString())
    return str(path)


# ------------------------------------------------------------------- families


def _truncated(d: Path, rnd: random.Random, bases: dict[str, bytes]) -> Iterator[Case]:
    for base, data in bases.items():
        for k in range(17):
            cut = rnd.randrange(0, len(data) - 1)
            p = d / f"trunc_{base}_{k}.onnx"
            p.write_bytes(data[:cut])
            yield Case(
                "truncated",
                p.name,
                "run",
                (str(p), "--random-input", "0", "--check", "-q"),
                "either",
                (p.name,),
            )


def _bitflip(d: Path, rnd: random.Random, bases: dict[str, bytes]) -> Iterator[Case]:
    for base, data in bases.items():
        for k in range(20):
            buf = bytearray(data)
            for _ in range(rnd.randint(1, 4)):
                i = rnd.randrange(len(buf))
                buf[i] ^= 1 << rnd.randrange(8)
            p = d / f"flip_{base}_{k}.onnx"
            p.write_bytes(bytes(buf))
            yield Case(
                "bitflip",
                p.name,
                "run",
                (str(p), "--random-input", "0", "--check", "-q"),
                "either",
                (p.name,),
            )


def _semantic(d: Path, rng: np.random.Generator) -> Iterator[Case]:
    def refuse(name: str, m: onnx.ModelProto, *where: str, tool: str = "opt") -> Case:
        p = d / f"{name}.onnx"
        _save(m, p)
        argv = (str(p),) if tool == "opt" else (str(p), "--random-input", "0", "-q")
        return Case("semantic", p.name, tool, argv, "refuse", (p.name, *where))

    def valid(name: str, m: onnx.ModelProto, expect: str = "ok") -> Case:
        p = d / f"{name}.onnx"
        _save(m, p)
        return Case(
            "semantic",
            p.name,
            "run",
            (str(p), "--random-input", "0", "--check", "-q"),
            expect,
            (p.name,),
        )

    # opsets: unknown ones refused, every released one from 7 on imports
    for opset in (0, 99, 109, 1000):
        yield refuse(f"opset_{opset}", base_conv(rng, opset=opset), str(opset))
    newest = min(onnx.defs.onnx_opset_version(), 22)
    for opset in range(7, newest + 1):
        yield valid(f"valid_opset_{opset}", base_conv(rng, opset=opset))
    # opsets onnxruntime does not run: imported without the oracle, or below the
    # importer's oldest opset refused by name
    from tigris_ir.frontend.onnx_import import OLDEST_OPSET

    for opset in [*range(1, 7), *range(newest + 1, onnx.defs.onnx_opset_version() + 1)]:
        p = d / f"valid_opset_{opset}.onnx"
        _save(base_conv(rng, opset=opset), p)
        argv = (str(p), "-o", str(d / f"opset_{opset}.mlir"))
        if opset < OLDEST_OPSET:
            yield Case("semantic", p.name, "opt", argv, "refuse", (p.name, f"opset {opset}"))
        else:
            yield Case("semantic", p.name, "opt", argv, "ok")

    m = base_conv(rng)
    del m.graph.output[:]
    yield refuse("no_outputs", m, "output")
    m = base_conv(rng)
    m.graph.output[0].name = "nosuch"
    yield refuse("undefined_output", m, "nosuch")
    m = base_conv(rng)
    m.graph.node[1].input[0] = "ghost"
    yield refuse("undefined_input", m, "ghost")
    m = base_conv(rng)
    m.graph.node[0].output[0] = "x"
    yield refuse("output_redefines_input", m, "x")

    # axes out of range, in ONNX's terms
    two = {"x2": _w(rng, 1, 3, 8, 8)}
    for ax in (4, 7, -5, 100):
        yield refuse(
            f"concat_axis_{ax}",
            make_model(
                [helper.make_node("Concat", ["x", "x2"], ["y"], name="n0", axis=ax)],
                [("x", F, [1, 3, 8, 8])],
                [("y", F, [1, 6, 8, 8])],
                two,
            ),
            "n0",
            "axis",
        )
    yield refuse(
        "concat_mismatch",
        make_model(
            [helper.make_node("Concat", ["x", "x2"], ["y"], name="n0", axis=1)],
            [("x", F, [1, 3, 8, 8])],
            [("y", F, [1, 7, 8, 8])],
            {"x2": _w(rng, 1, 4, 8, 4)},
        ),
        "n0",
    )
    for ax in (2, 5, -3):
        yield refuse(f"softmax_axis_{ax}", single("Softmax", [2, 10], [2, 10], axis=ax), "n0")
        yield refuse(f"logsoftmax_axis_{ax}", single("LogSoftmax", [2, 10], [2, 10], axis=ax), "n0")
    for ax in (5, 9, -6):
        yield refuse(f"flatten_axis_{ax}", single("Flatten", [1, 3, 8, 8], [192, 1], axis=ax), "n0")
    for ax in (4, 9, -5):
        yield refuse(
            f"split_axis_{ax}", single("Split", [1, 4, 8, 8], [1, 2, 8, 8], n_out=2, axis=ax), "n0"
        )
    for perm in ([0, 1, 2, 4], [0, 0, 1, 2], [0, 1, 2], [3, 2, 1, 0, 4]):
        yield refuse(
            f"transpose_perm_{'_'.join(map(str, perm))}",
            single("Transpose", [1, 3, 8, 8], [1, 3, 8, 8], perm=perm),
            "n0",
        )
    for axes in ([5], [1], [-6]):
        yield refuse(
            f"squeeze_axes_{axes[0]}",
            single(
                "Squeeze",
                [1, 3, 8, 8],
                [3, 8, 8],
                {"a": np.array(axes, np.int64)},
                ("a",),
            ),
            "n0",
        )
    for axes in ([9], [0, 0]):
        yield refuse(
            f"unsqueeze_axes_{'_'.join(map(str, axes))}",
            single(
                "Unsqueeze", [1, 3, 8, 8], [1, 1, 3, 8, 8], {"a": np.array(axes, np.int64)}, ("a",)
            ),
            "n0",
        )
    for ax in (4, 7, -5):
        yield refuse(
            f"reducemean_axis_{ax}",
            single("ReduceMean", [1, 3, 8, 8], [1, 3, 8, 1], axes=[ax]),
            "n0",
        )

    # convolution and pooling parameters
    cw = {"w": _w(rng, 4, 3, 3, 3)}
    for name, attrs in (
        ("strides_0", {"strides": [0, 0]}),
        ("strides_neg", {"strides": [-1, 1]}),
        ("dilations_0", {"dilations": [0, 1]}),
        ("pads_neg", {"pads": [-1, 0, 0, 0]}),
        ("pads_len3", {"pads": [1, 1, 1]}),
        ("kernel_mismatch", {"kernel_shape": [5, 5]}),
        ("group_2", {"group": 2}),
        ("group_0", {"group": 0}),
        ("auto_pad_bogus", {"auto_pad": "SIDEWAYS"}),
    ):
        yield refuse(
            f"conv_{name}", single("Conv", [1, 3, 8, 8], [1, 4, 8, 8], cw, ("w",), **attrs), "n0"
        )
    yield refuse(
        "conv_empty_result",
        single("Conv", [1, 3, 8, 8], ["N", "C", "H", "W"], {"w": _w(rng, 4, 3, 9, 9)}, ("w",)),
        "n0",
    )
    yield refuse(
        "conv_weight_channels",
        single("Conv", [1, 3, 8, 8], [1, 4, 6, 6], {"w": _w(rng, 4, 5, 3, 3)}, ("w",)),
        "n0",
    )
    yield refuse(
        "conv_weight_rank",
        single("Conv", [1, 3, 8, 8], [1, 4, 6, 6], {"w": _w(rng, 4, 3, 3)}, ("w",)),
        "n0",
    )
    yield refuse(
        "conv_bias_length",
        single(
            "Conv",
            [1, 3, 8, 8],
            [1, 4, 6, 6],
            {"w": _w(rng, 4, 3, 3, 3), "b": _w(rng, 7)},
            ("w", "b"),
        ),
        "n0",
    )
    for name, attrs in (
        ("strides_0", {"kernel_shape": [2, 2], "strides": [0, 0]}),
        ("kernel_0", {"kernel_shape": [0, 2]}),
        ("kernel_big", {"kernel_shape": [20, 20]}),
        ("kernel_len", {"kernel_shape": [2, 2, 2]}),
        ("dilations_0", {"kernel_shape": [2, 2], "dilations": [0, 0]}),
    ):
        yield refuse(
            f"maxpool_{name}", single("MaxPool", [1, 3, 8, 8], [1, 3, 4, 4], **attrs), "n0"
        )
    yield refuse(
        "avgpool_strides_0",
        single("AveragePool", [1, 3, 8, 8], [1, 3, 4, 4], kernel_shape=[2, 2], strides=[0, 1]),
        "n0",
    )

    # quantization parameters
    def qdq_with(edit: Callable[[onnx.ModelProto], None]) -> onnx.ModelProto:
        m = base_qdq(rng)
        edit(m)
        return m

    def set_init(m: onnx.ModelProto, name: str, value: np.ndarray) -> None:
        for i, t in enumerate(m.graph.initializer):
            if t.name == name:
                m.graph.initializer[i].CopyFrom(numpy_helper.from_array(value, name))

    def set_attr(m: onnx.ModelProto, node: str, key: str, value: int) -> None:
        n = next(n for n in m.graph.node if n.name == node)
        for a in n.attribute:
            if a.name == key:
                a.i = value
                return
        n.attribute.append(helper.make_attribute(key, value))

    yield refuse(
        "dq_scale_length",
        qdq_with(lambda m: set_init(m, "ws", np.array([0.01, 0.02, 0.03], np.float32))),
        "dq_w",
    )
    yield refuse(
        "dq_zero_point_length",
        qdq_with(lambda m: set_init(m, "wz", np.zeros(3, np.int8))),
        "dq_w",
    )
    for ax in (9, -5, 4):
        yield refuse(
            f"dq_axis_{ax}", qdq_with(lambda m, ax=ax: set_attr(m, "dq_w", "axis", ax)), "dq_w"
        )
    for v in (0.0, -0.5, float("nan"), float("inf")):
        yield refuse(
            f"q_scale_{v}",
            qdq_with(lambda m, v=v: set_init(m, "ys", np.array(v, np.float32))),
            "q_out",
            tool="run",
        )
    yield refuse(
        "q_scale_shape",
        qdq_with(lambda m: set_init(m, "xs", np.array([0.1, 0.2], np.float32))),
        "q_in",
    )
    # a valid per-axis DequantizeLinear on an activation: computed right or refused
    m = make_model(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q0", axis=1),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq0", axis=1),
        ],
        [("x", F, [1, 3, 4, 4])],
        [("y", F, [1, 3, 4, 4])],
        {"s": np.array([0.01, 0.1, 1.0], np.float32), "z": np.zeros(3, np.int8)},
    )
    yield valid("dq_per_axis_activation", m, expect="either")
    for name, s, z in (
        ("dq_input_per_axis", np.array([0.01, 0.1, 1.0], np.float32), np.zeros(3, np.int8)),
        ("dq_input_per_tensor", np.array(0.1, np.float32), np.array(0, np.int8)),
    ):
        m = make_model(
            [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dq0", axis=1)],
            [("x", I8, [1, 3, 4, 4])],
            [("y", F, [1, 3, 4, 4])],
            {"s": s, "z": z},
        )
        yield valid(name, m, expect="either")
    m = make_model(
        [helper.make_node("Split", ["x", "sp"], ["a", "b"], name="n0", axis=1)],
        [("x", F, [1, 4, 8, 8])],
        [("a", F, [1, 1, 8, 8]), ("b", F, [1, 2, 8, 8])],
        {"sp": np.array([1, 2], np.int64)},
    )
    yield refuse("split_sizes_sum", m, "n0")

    # Resize
    for name, scales, sizes in (
        ("scales_0", [1, 1, 0, 0], None),
        ("scales_neg", [1, 1, -2, 2], None),
        ("scales_len", [1, 2, 2], None),
        ("sizes_0", None, [1, 3, 0, 16]),
        ("sizes_len", None, [1, 3, 16]),
    ):
        inits = {"r": np.zeros(0, np.float32)}
        ins: tuple[str, ...] = ("r",)
        if scales is not None:
            inits["s"] = np.array(scales, np.float32)
            ins = ("r", "s")
        else:
            inits["z"] = np.array(sizes, np.int64)
            ins = ("r", "", "z")
        yield refuse(
            f"resize_{name}", single("Resize", [1, 3, 8, 8], [1, 3, 16, 16], inits, ins), "n0"
        )

    # declared shapes that contradict the graph
    for name, shape, elem in (
        ("channels", [1, 8, 8, 8], F),
        ("rank", [1, 3, 8], F),
        ("type", [1, 3, 8, 8], I8),
    ):
        m = make_model(
            [helper.make_node("Relu", ["x"], ["y"], name="n0")],
            [("x", F, [1, 3, 8, 8])],
            [("y", elem, shape)],
        )
        yield refuse(f"declared_output_{name}", m, "y")
    m = base_conv(rng)
    m.graph.value_info.append(_vi("c", F, [1, 5, 8, 8]))
    yield refuse("declared_value_info", m, "c")

    # absurd sizes: refused with the size, before anything is allocated
    for name, shape in (
        ("1e6x1e6", [1, 1, 1000000, 1000000]),
        ("int64_max", [1, 3, 2**63 - 1, 8]),
        ("2e40", [1, 1, 2**20, 2**20]),
        ("overflow", [2**31, 2**31, 2**31, 2**31]),
    ):
        m = make_model(
            [helper.make_node("Relu", ["x"], ["y"], name="n0")],
            [("x", F, shape)],
            [("y", F, shape)],
        )
        yield refuse(f"huge_input_{name}", m, "x", tool="run")
    # each tensor within a target's 4 GiB, all of them beyond this machine's memory
    from tigris_ir.tools.tigris_run import host_memory_bytes

    if host_memory_bytes():
        shape = [1, 3, 16384, 16384]  # 3 GiB of float32
        n = host_memory_bytes() // (3 << 30) + 2
        names = ["x", *(f"r{i}" for i in range(n - 1)), "y"]
        m = make_model(
            [
                helper.make_node("Relu", [a], [b], name=f"relu{i}")
                for i, (a, b) in enumerate(zip(names, names[1:]))
            ],
            [("x", F, shape)],
            [("y", F, shape)],
        )
        yield refuse("host_memory", m, "memory", tool="run")
    for name, shape in (("zero", [1, 0, 8, 8]), ("neg", [1, -5, 8, 8])):
        m = make_model(
            [helper.make_node("Relu", ["x"], ["y"], name="n0")],
            [("x", F, shape)],
            [("y", F, shape)],
        )
        yield refuse(f"input_dim_{name}", m, "x")
    m = make_model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="n0")],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 4, 6, 6])],
        {"w": _w(rng, 4, 3, 3, 3)},
    )
    m.graph.initializer[0].raw_data = m.graph.initializer[0].raw_data[:40]
    yield refuse("weight_raw_data_short", m, "w")
    m = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="n0")],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 100])],
        {"s": np.array([1, 100], np.int64)},
    )
    yield refuse("reshape_count", m, "n0")
    m = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="n0")],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 192])],
        {"s": np.array([-1, -1], np.int64)},
    )
    yield refuse("reshape_two_minus_one", m, "n0")
    m = make_model(
        [helper.make_node("Add", ["x", "x2"], ["y"], name="n0")],
        [("x", F, [1, 3, 8, 8])],
        [("y", F, [1, 3, 8, 8])],
        {"x2": _w(rng, 1, 4, 8, 8)},
    )
    yield refuse("add_broadcast", m, "n0")
    m = make_model(
        [helper.make_node("MatMul", ["x", "b"], ["y"], name="n0")],
        [("x", F, [2, 5])],
        [("y", F, [2, 4])],
        {"b": _w(rng, 6, 4)},
    )
    yield refuse("matmul_inner", m, "n0")
    yield refuse(
        "pad_length",
        single("Pad", [1, 3, 8, 8], [1, 3, 10, 10], {"p": np.array([1, 1, 1], np.int64)}, ("p",)),
        "n0",
    )
    m = base_conv(rng)
    m.graph.node[1].op_type = "NoSuchOp"
    yield refuse("unknown_op", m, "NoSuchOp")
    m = base_conv(rng)
    m.graph.node[1].domain = "com.example"
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    yield refuse("unknown_domain", m, "com.example")
    for name, token in (("node_name_not_utf8", b"conv"), ("value_name_not_utf8", b"relu")):
        data = base_conv(rng).SerializeToString()
        i = data.find(token)
        p = d / f"{name}.onnx"
        p.write_bytes(data[:i] + b"\xff\xfe" + data[i + 2 :])
        yield Case("semantic", p.name, "opt", (str(p),), "refuse", (p.name, "UTF-8"))
    for name, cut in (("init_data_long", 4), ("init_data_short", -4)):
        m = base_conv(rng)
        b = next(t for t in m.graph.initializer if t.name == "b")
        raw = numpy_helper.to_array(b).tobytes()
        b.ClearField("float_data")
        b.raw_data = raw + bytes(cut) if cut > 0 else raw[:cut]
        yield refuse(name, m, "'b'", "stored data")
    m = base_conv(rng)
    m.graph.name = "GRAPHNAME"
    data = m.SerializeToString()
    p = d / "graph_name_not_utf8.onnx"
    p.write_bytes(data.replace(b"GRAPHNAME", b"\x97RAPHNAME"))
    yield Case("semantic", p.name, "opt", (str(p),), "refuse", (p.name, "graph's name", "UTF-8"))
    m = base_conv(rng)
    m.graph.input[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    yield refuse("input_double", m, "x")


# ------------------------------------------------------------------- edited IR


def _ir(d: Path, rnd: random.Random, texts: dict[str, str]) -> Iterator[Case]:
    def case(
        name: str,
        text: str | bytes,
        expect: str,
        *where: str,
        tool: str = "opt",
        extra: tuple[str, ...] = (),
    ) -> Case:
        p = d / f"{name}.mlir"
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
        if tool == "run":
            argv = (str(p), "--random-input", "0", "-q", *extra)
        elif tool == "analyze":
            argv = (str(p), *extra)
        else:
            argv = (str(p), *extra)
        return Case("ir", p.name, tool, argv, expect, (p.name, *where))

    base, chain, plan, quant = texts["base"], texts["chain"], texts["plan"], texts["quant"]
    for k in range(4):
        data = bytearray(base.encode())
        i = rnd.randrange(len(data))
        data[i:i] = b"\xff\xfe\x80"
        yield case(f"non_utf8_opt_{k}", bytes(data), "refuse", tool="opt")
        yield case(f"non_utf8_run_{k}", bytes(data), "refuse", tool="run")
    for src_name, src in (("base", base), ("plan", plan)):
        for k in range(8):
            cut = rnd.randrange(10, len(src) - 3)
            yield case(f"trunc_{src_name}_{k}", src[:cut], "refuse", tool="run")
    # an unterminated string literal: xDSL's lexer backtracks exponentially on it
    yield case(
        "unterminated_string",
        base.replace('"conv.weight"', '"conv.weight, ' + "x" * 60, 1),
        "refuse",
        tool="run",
    )
    yield case("nul_first", "\0" * 40 + base, "refuse", "U+0000", tool="opt")
    yield case(  # Python refuses to convert an integer of more than 4300 digits
        "int_5000_digits",
        base.replace("array<i64: 3, 3>", "array<i64: " + "7" * 5000 + ", 3>", 1),
        "refuse",
        "digits",
        tool="opt",
    )
    yield case(  # dense data of an integer width xDSL cannot hold
        "dense_i65",
        'builtin.module {\n  %0 = "test.op"() {v = dense<1> : tensor<2xi65>} : () -> ()\n}\n',
        "refuse",
        "i65",
        tool="opt",
    )
    yield case("deep_modules", "builtin.module {" * 3000 + "}" * 3000, "either", tool="opt")
    yield case("deep_parens", "builtin.module {" + "(" * 50000, "refuse", tool="opt")
    yield case(
        "deep_arrays",
        base.replace("array<i64: 3, 3>", "[" * 20000 + "]" * 20000, 1),
        "refuse",
        tool="opt",
    )
    yield case(
        "deep_types",
        base.replace("tensor<4xf32>", "tensor<" * 20000 + "4xf32" + ">" * 20000, 1),
        "refuse",
        tool="run",
    )
    yield case(
        "result_shape",
        base.replace("-> tensor<1x8x8x4xf32>\n    %3", "-> tensor<1x8x8x5xf32>\n    %3", 1),
        "refuse",
        tool="run",
    )
    yield case(
        "op_renamed",
        base.replace("nn.relu", "nn.frobnicate"),
        "refuse",
        "nn.frobnicate",
        tool="run",
    )
    yield case(
        "kernel_0",
        base.replace("kernel = array<i64: 3, 3>", "kernel = array<i64: 0, 0>"),
        "refuse",
        tool="run",
    )
    yield case(
        "pads_neg",
        base.replace("pads = array<i64: 1, 1, 1, 1>", "pads = array<i64: -1, 1, 1, 1>"),
        "refuse",
        tool="run",
    )
    yield case(
        "strides_0",
        base.replace(
            "kernel = array<i64: 3, 3>", "kernel = array<i64: 3, 3>, strides = array<i64: 0, 0>"
        ),
        "refuse",
        tool="run",
    )
    yield case(  # the passes verify their input even when the parser does not
        "strides_0_disable_verify",
        base.replace(
            "kernel = array<i64: 3, 3>", "kernel = array<i64: 3, 3>, strides = array<i64: 0, 0>"
        ),
        "refuse",
        tool="opt",
        extra=("--disable-verify", "--tile-stages=budget=1K", "--lower-to-loops=budget=1K"),
    )
    for v in ("-1.0", "0.0"):
        import re

        edited = re.sub(r"#nn\.q<[0-9.e+-]+", f"#nn.q<{v}", quant, count=1)
        yield case(f"quant_scale_{v}", edited, "refuse", tool="run")
    for v in ("9223372036854775808", "0", "-1"):
        yield case(
            f"chain_tile_h_{v}",
            chain.replace("tile_h 3", f"tile_h {v}", 1),
            "refuse",
            tool="run",
        )
    yield case(  # taller than the map: one tile, if it runs it must compute the model
        "chain_tile_h_2e62",
        chain.replace("tile_h 3", "tile_h 4611686018427387904", 1),
        "either",
        tool="run",
        extra=("--check",),
    )
    yield case(
        "budget_attr_huge",
        chain.replace("tile.budget = 3072", "tile.budget = 99999999999999999999"),
        "refuse",
        tool="run",
    )
    yield case(
        "budget_attr_neg",
        chain.replace("tile.budget = 3072", "tile.budget = -5"),
        "refuse",
        tool="run",
    )
    yield case(
        "plan_offset_huge",
        plan.replace("loop.offset = 256", "loop.offset = 4611686018427387904", 1),
        "refuse",
        tool="run",
    )
    yield case(
        "plan_arena_neg",
        plan.replace("loop.arena = 2048", "loop.arena = -1", 1),
        "refuse",
        tool="run",
    )
    yield case(
        "weights_missing",
        re.sub(r'nn.weights = "[^"]*"', 'nn.weights = "/nonexistent/w.npz"', base),
        "refuse",
        "w.npz",
        tool="run",
    )
    bad_w = d / "bad_weights.npz"
    np.savez(
        bad_w,
        **{"conv.weight": np.zeros((4, 5, 5, 3), np.float32), "conv.bias": np.zeros(4, np.float32)},
    )
    yield case(
        "weight_shape",
        re.sub(r'nn.weights = "[^"]*"', f'nn.weights = "{bad_w}"', base),
        "refuse",
        "conv.weight",
        tool="run",
    )
    yield case("analyze_plan", plan, "either", tool="analyze", extra=("-m", "64K"))
    yield case("analyze_chain", chain, "either", tool="analyze", extra=("-m", "64K"))
    yield case("run_plan_small_budget", plan, "refuse", tool="run", extra=("-m", "1K"))
    dynamic = (
        "func.func @main(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {\n"
        "  %0 = nn.relu %x : (tensor<?x3xf32>) -> tensor<?x3xf32>\n"
        "  func.return %0 : tensor<?x3xf32>\n}\n"
    )
    yield case("dynamic_dim_run", dynamic, "refuse", "dynamic", tool="run")
    yield case(
        "dynamic_dim_opt", dynamic, "refuse", "dynamic", tool="opt", extra=("--tile-stages",)
    )
    yield case("empty_file", "", "refuse", tool="run")
    yield case("no_func", "builtin.module {}\n", "refuse", tool="run")


# ------------------------------------------------------------------- command lines


def _cli(d: Path, paths: dict[str, str]) -> Iterator[Case]:
    conv, sym, two, base_ir = paths["conv"], paths["sym"], paths["two"], paths["base_ir"]
    n = [0]

    def c(
        tool: str,
        argv: tuple[str, ...],
        expect: str,
        *where: str,
        check: Callable[[], str | None] | None = None,
    ) -> Case:
        n[0] += 1
        return Case("cli", f"cli_{n[0]:02d}_{tool}", tool, argv, expect, where, check=check)

    yield c("opt", (conv, "--input-shape", "nosuch:1x3x8x8"), "refuse", "nosuch")
    yield c(
        "run", (conv, "--input-shape", "nosuch:1x3x8x8", "--random-input", "0"), "refuse", "nosuch"
    )
    for spec in (
        "x:0x3x8x8",
        "x:1x0x8x8",
        "x:-5x3x8x8",
        "x:1x3x8",
        "x:1x3x8x8x",
        "x:",
        "x:99999999999999999999x3x8x8",
        "x:1000000000x3x8x8",
    ):
        yield c("opt", (sym, "--input-shape", spec), "refuse", "--input-shape")
    yield c(
        "opt",
        (sym, "--input-shape", "x:1x3x8x8", "--input-shape", "x:2x3x8x8"),
        "refuse",
        "--input-shape",
        "x",
    )
    yield c("opt", (sym, "--input-shape", "x:1x3x8x8", "--input-shape", "x:1x3x8x8"), "ok")
    yield c(
        "run", (sym, "--input-shape", "x:0x3x8x8", "--random-input", "0"), "refuse", "--input-shape"
    )
    yield c("analyze", (sym, "--input-shape", "x:0x3x8x8"), "refuse", "--input-shape")
    for opt in (
        "budget=16K,budget=32K",
        "budget=0",
        "budget=-1",
        "budget=99999999999999999999",
        "budget=abc",
        "budget=9223372036854775808",
        "budget=",
        "nosuch=1",
    ):
        yield c(
            "opt",
            (conv, f"--tile-stages={opt}"),
            "refuse",
            "budget" if "budget" in opt else "nosuch",
        )
    for b in ("0", "-1", "abc", "99999999999999999999", "9223372036854775808", "1.5K"):
        yield c("run", (conv, "-m", b, "--random-input", "0"), "refuse", b)
        yield c("analyze", (conv, "-m", b), "refuse", b)
    for t in ("wgsl", "x86-asm", "llvm", "riscv-asm", "arm-asm", "wat", "csl", "mps", "nosuch"):
        yield c("opt", (conv, "-t", t), "refuse", t)
    yield c(
        "run",
        (conv, "--random-input", "0", "--output", str(d / "missing" / "y.npy")),
        "refuse",
        "missing",
    )
    out_bin = d / "y.bin"

    def exact_bin() -> str | None:
        if not out_bin.exists():
            return f"{out_bin} was not written"
        if Path(str(out_bin) + ".npy").exists():
            return f"{out_bin}.npy was written besides"
        return None

    yield c(
        "run", (conv, "--random-input", "0", "--output", str(out_bin), "-q"), "ok", check=exact_bin
    )
    yield c("opt", (conv, "-o", str(d / "missing" / "o.mlir")), "refuse", "missing")
    yield c("opt", (conv, "--weights-out", str(d / "missing" / "w.npz")), "refuse", "missing")
    yield c("run", (conv, "--random-input", "-1"), "refuse", "--random-input")
    for cc in ("/bin/true", "/bin/false", "/nonexistent/cc"):
        yield c(
            "run",
            (two, "-m", "64K", "--random-input", "0", "--backend", "c", f"--cc={cc}"),
            "refuse",
            cc,
        )
    yield c("run", (conv, "--input", str(d / "nosuch.npy")), "refuse", "nosuch.npy")
    txt = d / "not_npy.npy"
    txt.write_text("hello")
    yield c("run", (conv, "--input", str(txt)), "refuse", "not_npy.npy")
    wrong = d / "wrong_shape.npy"
    np.save(wrong, np.zeros((1, 3, 7, 7), np.float32))
    yield c("run", (conv, "--input", str(wrong)), "refuse", "wrong_shape.npy")
    wrong64 = d / "wrong_dtype.npy"
    np.save(wrong64, np.zeros((1, 3, 8, 8), np.float64))
    yield c("run", (conv, "--input", str(wrong64)), "refuse", "wrong_dtype.npy")
    pick = d / "pickled.npy"
    np.save(pick, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    yield c("run", (conv, "--input", str(pick)), "refuse", "pickled.npy")
    nan = d / "nan.npy"
    np.save(nan, np.full((1, 3, 8, 8), np.nan, np.float32))
    yield c("run", (conv, "--input", str(nan), "--check", "-q"), "ok")
    yield c("run", (conv, "--input", str(nan), "--input", str(nan)), "refuse", "--input")
    yield c("run", (base_ir, "--random-input", "0", "--check"), "refuse", "--check")
    yield c("run", (conv, "--random-input", "0", "--stats"), "refuse", "--stats")
    yield c("run", (conv, "--random-input", "0", "-m", "16K", "-m", "32K"), "refuse", "-m")
    yield c("run", (conv, "--random-input", "0", "--random-input", "1"), "refuse", "--random-input")
    yield c("run", (conv, "--random-input", "0", "-m", "16K", "-m", "16K", "-q"), "ok")
    yield c("analyze", (conv, "-m", "16K", "--budget", "32K"), "refuse", "--budget")
    yield c("opt", (conv, "-o", str(d / "a.mlir"), "-o", str(d / "b.mlir")), "refuse", "-o")
    yield c("opt", (conv, "-t", "mlir", "--target=c"), "refuse", "-t")
    yield c("opt", (conv, "-t", "c"), "refuse", "C target")
    yield c("analyze", (str(d / "nosuch.onnx"),), "refuse", "nosuch.onnx")
    yield c("analyze", (str(txt),), "refuse", "not_npy.npy")
    yield c("opt", (str(d / "nosuch.onnx"),), "refuse", "nosuch.onnx")
    yield c("opt", (conv, "--mcpu", "z80", "--gebp-tile"), "refuse", "--mcpu 'z80'", "cortex-m4")
    yield c("opt", (conv, "--mcpu", "cortex-m4", "--mcpu", "cortex-m7"), "refuse", "--mcpu")
    m7 = (conv, "-m", "64K", "--random-input", "0", "--mcpu", "m7")
    yield c("run", m7, "refuse", "cortex-m7")
    on_m4 = (two, "-m", "64K", "--random-input", "0", "--backend", "c", "--mcpu", "cortex-m4")
    yield c("run", (*on_m4, "--cc=/nonexistent/cc"), "refuse", "gcc-arm-none-eabi")
    yield c("run", (*on_m4, "--cflags=-O2 -mcpu=cortex-m3"), "refuse", "the target's own")


def _budget(d: Path, paths: dict[str, str]) -> Iterator[Case]:
    """Budgets below what one output element needs (its 3x3 window of every input
    channel, at least 27 bytes in the int8 model, 108 in the float ones)."""
    n = [0]

    def c(tool: str, argv: tuple[str, ...], *where: str, stream: str = "stderr") -> Case:
        n[0] += 1
        return Case("budget", f"budget_{n[0]:02d}_{tool}", tool, argv, "refuse", where, stream)

    for model in ("conv", "two", "qdq"):
        p = paths[model]
        for b in ("1", "8", "16", "24", "26"):
            yield c("run", (p, "-m", b, "--random-input", "0", "-q"), "budget")
        for b in ("1", "16", "26"):
            yield c("analyze", (p, "-m", b), "does not fit", stream="stdout")
        yield c("opt", (p, "--tile-stages=budget=16"), "budget")
        yield c("opt", (p, "--lower-to-loops=budget=26", "--plan-arena"), "budget")


def generate(d: Path, seed: int = 14) -> list[Case]:
    """Write the corpus's files into `d` and return its cases."""
    from tigris_ir.frontend.onnx_import import import_model
    from tigris_ir.reference.executor import save_weights
    from tigris_ir.tools.tigris_opt import main as opt_main

    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rnd = random.Random(seed)
    models = {"conv": base_conv(rng), "two": base_two(rng), "qdq": base_qdq(rng)}
    paths = {k: _save(m, d / f"base_{k}.onnx") for k, m in models.items()}
    sym = base_conv(rng)
    sym.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    sym.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    paths["sym"] = _save(sym, d / "base_sym.onnx")

    def ir_of(key: str) -> str:
        imported = import_model(models[key], origin=paths[key])
        w = d / f"base_{key}_ir.npz"
        save_weights(imported.weights, w)
        from xdsl.dialects.builtin import StringAttr

        imported.module.attributes["nn.weights"] = StringAttr(str(w))
        return str(imported.module)

    def tool_ir(key: str, out: str, *passes: str) -> str:
        o = d / out
        rc = opt_main(
            [paths[key], *passes, "--weights-out", str(o.with_suffix(".npz")), "-o", str(o)]
        )
        assert rc == 0, f"building the corpus: tigris-opt {passes} failed"
        return o.read_text()

    texts = {
        "base": ir_of("conv"),
        "quant": ir_of("qdq"),
        "chain": tool_ir("two", "base_chain.mlir", "--tile-stages=budget=3K", "--fuse-chains"),
        "plan": tool_ir("conv", "base_plan.mlir", "--lower-to-loops=budget=2K", "--plan-arena"),
    }
    paths["base_ir"] = str(d / "base_conv.mlir")
    Path(paths["base_ir"]).write_text(texts["base"])
    bases = {k: (d / f"base_{k}.onnx").read_bytes() for k in ("conv", "two", "qdq")}
    cases: list[Case] = []
    cases += _truncated(d, rnd, bases)
    cases += _bitflip(d, rnd, bases)
    cases += _semantic(d, rng)
    cases += _ir(d, rnd, texts)
    cases += _cli(d, paths)
    cases += _budget(d, paths)
    names = [c.name for c in cases]
    assert len(names) == len(set(names)), "corpus case names must be unique"
    return cases


def sample(cases: list[Case], n: int, seed: int = 14) -> list[Case]:
    """`n` cases spread over the families (each family in proportion, at least 5)."""
    rnd = random.Random(seed)
    by: dict[str, list[Case]] = {}
    for c in cases:
        by.setdefault(c.family, []).append(c)
    total = len(cases)
    out: list[Case] = []
    for fam in FAMILIES:
        group = by.get(fam, [])
        k = min(len(group), max(5, round(n * len(group) / total)))
        out += rnd.sample(group, k)
    return out
