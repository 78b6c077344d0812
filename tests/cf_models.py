"""ONNX models with If and Loop whose bodies tile, float32 or int8 QDQ.

* `if_input`: an If on a runtime boolean input choosing between two
  convolution stacks of different receptive fields (three 3x3 convolutions,
  7x7, or one dilated 5x5 convolution, 9x9), a Relu after it;
* `loop_chain`: a Loop of three trips whose body is a convolution chain
  (3x3, Relu, 3x3, Add of the carried map), the feature map carried;
* `loop_if`: a Loop of two trips whose body holds an If on the sign of the
  carried map's mean (a convolution chain, or a Relu).

In int8 every activation is quantized (QuantizeLinear / DequantizeLinear
pairs) and the weights are int8 constants behind a DequantizeLinear. The
bodies' constants are initializers of the model, which the bodies capture.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

C = 4
H = W = 16


@dataclass
class _Graph:
    """Nodes and constants of one (sub)graph under construction."""

    int8: bool
    rng: np.random.Generator
    prefix: str
    nodes: list[onnx.NodeProto] = field(default_factory=list[onnx.NodeProto])
    inits: list[onnx.TensorProto] = field(default_factory=list[onnx.TensorProto])
    n: int = 0

    def name(self, base: str) -> str:
        self.n += 1
        return f"{self.prefix}{base}{self.n}"

    def const(self, value: np.ndarray, base: str) -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, ins: list[str], **attrs: object) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def qdq(self, x: str, scale: float = 0.05, zp: int = 0) -> str:
        """Quantize and dequantize an activation (int8 only)."""
        if not self.int8:
            return x
        s = self.const(np.array(scale, np.float32), "s")
        z = self.const(np.array(zp, np.int8), "z")
        return self.node("DequantizeLinear", [self.node("QuantizeLinear", [x, s, z]), s, z])

    def conv(self, x: str, k: int, dilation: int = 1) -> str:
        w = (self.rng.standard_normal((C, C, k, k)) * 0.25).astype(np.float32)
        b = (self.rng.standard_normal(C) * 0.1).astype(np.float32)
        pad = dilation * (k - 1) // 2
        if self.int8:
            sw = 0.01
            wq = np.clip(np.round(w / sw), -127, 127).astype(np.int8)
            bq = np.round(b / (0.05 * sw)).astype(np.int32)
            wd = self.node(
                "DequantizeLinear",
                [
                    self.const(wq, "wq"),
                    self.const(np.array(sw, np.float32), "sw"),
                    self.const(np.array(0, np.int8), "zw"),
                ],
            )
            bd = self.node(
                "DequantizeLinear",
                [
                    self.const(bq, "bq"),
                    self.const(np.array(0.05 * sw, np.float32), "sb"),
                    self.const(np.array(0, np.int32), "zb"),
                ],
            )
        else:
            wd, bd = self.const(w, "w"), self.const(b, "b")
        y = self.node(
            "Conv", [x, wd, bd], pads=[pad] * 4, dilations=[dilation] * 2, kernel_shape=[k, k]
        )
        return self.qdq(y)

    def relu(self, x: str) -> str:
        return self.qdq(self.node("Relu", [x]))

    def graph(self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[str]):
        return helper.make_graph(
            self.nodes,
            name,
            inputs,
            [
                helper.make_tensor_value_info(
                    o, TensorProto.BOOL if o == "cond_out" else TensorProto.FLOAT, None
                )
                for o in outputs
            ],
            [],  # the constants are the model's, captured
        )


def _fm(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, C, H, W])


def _model(g: _Graph, inputs: list[onnx.ValueInfoProto], out: str) -> onnx.ModelProto:
    graph = helper.make_graph(g.nodes, "cf", inputs, [_fm(out)], g.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def if_input(int8: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(21)
    top = _Graph(int8, rng, "")
    x = top.qdq("x")
    then = _Graph(int8, rng, "t_", inits=top.inits)
    t = x
    for _ in range(3):
        t = then.relu(then.conv(t, 3))
    wide = _Graph(int8, rng, "e_", inits=top.inits)
    e = wide.relu(wide.conv(x, 5, dilation=2))
    top.nodes.append(
        helper.make_node(
            "If",
            ["wide"],
            ["picked"],
            name="pick",
            then_branch=wide.graph("wide", [], [e]),
            else_branch=then.graph("narrow", [], [t]),
        )
    )
    y = top.node("Relu", ["picked"])
    return _model(
        top, [_fm("x"), helper.make_tensor_value_info("wide", TensorProto.BOOL, [1])], y
    )


def _loop_args(carried: str) -> list[onnx.ValueInfoProto]:
    return [
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
        helper.make_tensor_value_info(carried, TensorProto.FLOAT, None),
    ]


def _chain(g: _Graph, h: str) -> str:
    h = g.qdq(h)
    a = g.relu(g.conv(h, 3))
    b = g.conv(a, 3)
    return g.qdq(g.node("Add", [b, h]))


def loop_chain(int8: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(22)
    top = _Graph(int8, rng, "")
    x = top.qdq("x")
    body = _Graph(int8, rng, "b_", inits=top.inits)
    h2 = _chain(body, "h")
    body.nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"))
    trips = top.const(np.array(3, np.int64), "trips")
    top.nodes.append(
        helper.make_node(
            "Loop",
            [trips, "", x],
            ["looped"],
            name="steps",
            body=body.graph("step", _loop_args("h"), ["cond_out", h2]),
        )
    )
    return _model(top, [_fm("x")], top.relu("looped"))


def loop_if(int8: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(23)
    top = _Graph(int8, rng, "")
    x = top.qdq("x")
    body = _Graph(int8, rng, "b_", inits=top.inits)
    mean = body.node("ReduceMean", ["h"], keepdims=0)
    zero = body.const(np.array(0.0, np.float32), "zero")
    positive = body.node("Greater", [mean, zero])
    then = _Graph(int8, rng, "bt_", inits=top.inits)
    t = _chain(then, "h")
    other = _Graph(int8, rng, "be_", inits=top.inits)
    e = other.relu(other.node("Neg", [other.qdq("h")]))
    branch = body.name("branch")
    body.nodes.append(
        helper.make_node(
            "If",
            [positive],
            [branch],
            name=branch,
            then_branch=then.graph("chain", [], [t]),
            else_branch=other.graph("flip", [], [e]),
        )
    )
    body.nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"))
    trips = top.const(np.array(2, np.int64), "trips")
    top.nodes.append(
        helper.make_node(
            "Loop",
            [trips, "", x],
            ["looped"],
            name="steps",
            body=body.graph("step", _loop_args("h"), ["cond_out", branch]),
        )
    )
    return _model(top, [_fm("x")], top.node("Relu", ["looped"]))


MODELS = {"if_input": if_input, "loop_chain": loop_chain, "loop_if": loop_if}
