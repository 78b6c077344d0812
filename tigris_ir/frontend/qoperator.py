"""onnxruntime's QOperator format rewritten as the QDQ form it stands for.

A `QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)` computes what
`QuantizeLinear(Conv(DequantizeLinear(x), DequantizeLinear(w), DequantizeLinear(B)))`
specifies (the bias is int32 at scale `xs * ws`, zero point 0), and so for the
other QLinear* operators of the default and `com.microsoft` domains. The
importer already fuses QDQ groups into the int8 `nn` ops, with one
requantization rule; rewriting each QOperator node into its group puts these
models on the same ops. The nodes of a group keep the original node's name
(diagnostics name it).

ConvInteger and MatMulInteger (int32 sums, no requantization) are not
rewritten here: `int_ops` imports them onto their own int32 ops.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS = "com.microsoft"

QOPERATORS = (
    "QLinearConv",
    "QLinearMatMul",
    "QLinearAdd",
    "QLinearMul",
    "QLinearAveragePool",
    "QLinearGlobalAveragePool",
    "QLinearConcat",
    "QLinearSigmoid",
    "QLinearLeakyRelu",
)


class QOperatorError(Exception):
    """A QOperator node that has no QDQ form here: (node index, message)."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index
        self.message = message


class _Rewriter:
    def __init__(self, graph: onnx.GraphProto, consts: dict[str, np.ndarray]):
        self.graph = graph
        self.consts = consts
        self.extra_inits: list[onnx.TensorProto] = []
        self.readers: dict[str, list[onnx.NodeProto]] = {}
        for n in graph.node:
            for i in n.input:
                self.readers.setdefault(i, []).append(n)
        self.outputs = {o.name for o in graph.output}
        self.index = 0
        self.node: onnx.NodeProto | None = None
        self.k = 0

    def fail(self, message: str) -> QOperatorError:
        return QOperatorError(self.index, message)

    def fresh(self, what: str) -> str:
        assert self.node is not None
        self.k += 1
        return f"{self.node.output[0]}::{what}{self.k}"

    def make(self, op: str, inputs: list[str], outputs: list[str], **attrs) -> onnx.NodeProto:
        assert self.node is not None
        return helper.make_node(op, inputs, outputs, name=self.node.name, **attrs)

    def const(self, name: str, what: str) -> np.ndarray:
        v = self.consts.get(name)
        if v is None:
            raise self.fail(f"{what} ('{name}') must be a constant")
        return v

    def dq(self, x: str, s: str, z: str, out: list[onnx.NodeProto], axis: int = 1) -> str:
        y = self.fresh("dq")
        scale = self.consts.get(s)
        kw = {"axis": axis} if scale is not None and scale.size > 1 else {}
        out.append(self.make("DequantizeLinear", [x, s, z], [y], **kw))
        return y

    def q(self, x: str, s: str, z: str, y: str, out: list[onnx.NodeProto]) -> None:
        out.append(self.make("QuantizeLinear", [x, s, z], [y]))

    def attrs(self, node: onnx.NodeProto, drop: tuple[str, ...] = ()) -> dict:
        return {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name not in drop}

    def channels_last(self, node: onnx.NodeProto) -> None:
        if int(self.attrs(node).get("channels_last", 0)):
            raise self.fail(f"{node.op_type} with channels_last=1 is not supported (NCHW only)")

    # ---------------------------------------------------------------- per op
    def conv(self, n: onnx.NodeProto) -> list[onnx.NodeProto]:
        ins = list(n.input) + [""] * (9 - len(n.input))
        x, xs, xz, w, ws, wz, ys, yz, b = ins[:9]
        out: list[onnx.NodeProto] = []
        xd = self.dq(x, xs, xz, out)
        wd = self.dq(w, ws, wz, out, axis=0)
        conv_in = [xd, wd]
        if b:
            sx = self.const(xs, "the input scale")
            sw = self.const(ws, "the weight scale")
            bs = self.fresh("bias_scale")
            bz = self.fresh("bias_zero")
            scale = (sx.astype(np.float32).reshape(-1) * sw.astype(np.float32).reshape(-1)).astype(
                np.float32
            )
            if scale.size == 1:
                scale = scale.reshape(())
            self.extra_inits.append(numpy_helper.from_array(scale, bs))
            zeros = np.zeros(scale.shape, np.int32)
            self.extra_inits.append(numpy_helper.from_array(zeros, bz))
            bd = self.fresh("bias")
            kw = {"axis": 0} if scale.size > 1 else {}
            out.append(self.make("DequantizeLinear", [b, bs, bz], [bd], **kw))
            conv_in.append(bd)
        c = self.fresh("conv")
        out.append(self.make("Conv", conv_in, [c], **self.attrs(n)))
        self.q(c, ys, yz, n.output[0], out)
        return out

    def matmul(self, n: onnx.NodeProto) -> list[onnx.NodeProto]:
        a, as_, az, b, bs, bz, ys, yz = n.input
        out: list[onnx.NodeProto] = []
        ad = self.dq(a, as_, az, out)
        bd = self.dq(b, bs, bz, out, axis=1)
        m = self.fresh("matmul")
        out.append(self.make("MatMul", [ad, bd], [m]))
        self.q(m, ys, yz, n.output[0], out)
        return out

    def binary(self, n: onnx.NodeProto) -> list[onnx.NodeProto]:
        a, as_, az, b, bs, bz, ys, yz = (list(n.input) + [""] * 8)[:8]
        out: list[onnx.NodeProto] = []
        ad = self.dq(a, as_, az, out)
        bd = self.dq(b, bs, bz, out)
        r = self.fresh("sum")
        out.append(self.make(n.op_type.removeprefix("QLinear"), [ad, bd], [r]))
        self.q(r, ys, yz, n.output[0], out)
        return out

    def unary(self, op: str, drop: tuple[str, ...] = ()) -> Callable:
        def rewrite(n: onnx.NodeProto) -> list[onnx.NodeProto]:
            self.channels_last(n)
            x, xs, xz, ys, yz = (list(n.input) + [""] * 5)[:5]
            out: list[onnx.NodeProto] = []
            xd = self.dq(x, xs, xz, out)
            r = self.fresh(op.lower())
            out.append(self.make(op, [xd], [r], **self.attrs(n, drop=("channels_last", *drop))))
            self.q(r, ys, yz, n.output[0], out)
            return out

        return rewrite

    def concat(self, n: onnx.NodeProto) -> list[onnx.NodeProto]:
        ys, yz, *rest = n.input
        if len(rest) % 3:
            raise self.fail(
                "QLinearConcat takes (Y_scale, Y_zero_point, then X, scale, zp per input)"
            )
        out: list[onnx.NodeProto] = []
        parts = [self.dq(rest[i], rest[i + 1], rest[i + 2], out) for i in range(0, len(rest), 3)]
        r = self.fresh("concat")
        out.append(self.make("Concat", parts, [r], **self.attrs(n)))
        self.q(r, ys, yz, n.output[0], out)
        return out

    def rewrite(self, n: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        table: dict[str, Callable[[onnx.NodeProto], list[onnx.NodeProto]]] = {
            "QLinearConv": self.conv,
            "QLinearMatMul": self.matmul,
            "QLinearAdd": self.binary,
            "QLinearMul": self.binary,
            "QLinearAveragePool": self.unary("AveragePool"),
            "QLinearGlobalAveragePool": self.unary("GlobalAveragePool"),
            "QLinearSigmoid": self.unary("Sigmoid"),
            "QLinearLeakyRelu": self.unary("LeakyRelu"),
            "QLinearConcat": self.concat,
        }
        if n.domain not in ("", "ai.onnx", MS) or n.op_type not in table:
            return None
        return table[n.op_type](n)


def expand_qoperators(
    graph: onnx.GraphProto, consts: dict[str, np.ndarray]
) -> list[tuple[int, onnx.NodeProto]]:
    """The graph's nodes with each QOperator node replaced by its QDQ group,
    every node paired with its index in the original graph; new constants
    (bias scales) are added to `consts`."""
    rw = _Rewriter(graph, consts)
    out: list[tuple[int, onnx.NodeProto]] = []
    for i, node in enumerate(graph.node):
        rw.index, rw.node, rw.k = i, node, 0
        group = rw.rewrite(node)
        if group is None:
            out.append((i, node))
        else:
            out.extend((i, g) for g in group)
    for t in rw.extra_inits:
        consts[t.name] = numpy_helper.to_array(t)
    return out
