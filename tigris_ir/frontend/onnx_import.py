"""ONNX to the `nn` dialect.

The importer fixes three things the rest of the compiler relies on:

* layout: rank-3 and rank-4 feature maps become channels-last, so that a band of
  rows is one contiguous span; ops whose meaning depends on the layout (Reshape,
  Flatten, Transpose, matrix products) see ONNX's own layout again, through an
  explicit `nn.transpose` (or a plain `nn.reshape` when only unit axes move);
* quantization: a float op between DequantizeLinear inputs and one
  QuantizeLinear output becomes the same op on quantized tensors (the encoding
  `#nn.q<scale : zero_point>` rides on the tensor type); what is left of Q/DQ
  becomes explicit `nn.quantize` / `nn.dequantize`;
* weights: constants become `nn.weight "name"` ops; their values live in the
  returned weight table, not in the IR. The module records where they came from
  (`nn.weights`), so the IR file plus the model is enough to run it.

Every problem with the input is an `ImportDiagnostic` naming the node.
"""

from __future__ import annotations

import math
import re
from collections import ChainMap
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import VerifyException

from tigris_ir.dialects import nn
from tigris_ir.frontend import diagnostic, validate
from tigris_ir.frontend.diagnostic import ImportDiagnostic
from tigris_ir.frontend.qoperator import QOperatorError
from tigris_ir.frontend.simplify import (
    Simplified,
    captures,
    default_opset,
    simplify,
    subgraphs,
)
from tigris_ir.reference import kernels as K
from tigris_ir.reference.executor import module_io

Layout = str  # "cl": channels-last permutation of ONNX's NC..., "plain": as in ONNX

SUPPORTED_OPS = (
    "Abs",
    "Add",
    "AveragePool",
    "BatchNormalization",
    "Clip",
    "Concat",
    "Constant",
    "Conv",
    "ConvTranspose",
    "DequantizeLinear",
    "Div",
    "Dropout",
    "Elu",
    "Equal",
    "Exp",
    "Flatten",
    "Floor",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "If",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "Loop",
    "MatMul",
    "Max",
    "MaxPool",
    "Min",
    "Mul",
    "PRelu",
    "Pad",
    "QuantizeLinear",
    "ReduceMax",
    "ReduceMean",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Resize",
    "Sigmoid",
    "Softmax",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Tanh",
    "Transpose",
    "Unsqueeze",
    "Upsample",
)

_DATA_DEPENDENT = frozenset({"NonZero", "NonMaxSuppression", "TopK", "Unique", "Compress"})
"""Operators whose output shape depends on the values of their input."""

_ONNX_DTYPES: dict[int, type[np.generic]] = {
    onnx.TensorProto.FLOAT: np.float32,
    onnx.TensorProto.INT8: np.int8,
    onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT64: np.int64,
    onnx.TensorProto.BOOL: np.bool_,
}


@dataclass
class Imported:
    module: ModuleOp
    weights: dict[str, np.ndarray]
    values: dict[str, tuple[SSAValue, str]] = field(default_factory=dict)
    """ONNX value name -> (the SSA value holding it, "cl" or "plain" layout)."""
    simplified: Simplified | None = None
    """What the import-time simplification folded and removed."""


@dataclass
class _Val:
    ssa: SSAValue
    layout: Layout


def _to_cl_perm(rank: int) -> tuple[int, ...]:
    return (0, *range(2, rank), 1)


def _to_plain_perm(rank: int) -> tuple[int, ...]:
    return (0, rank - 1, *range(1, rank - 1))


def _cl_axis(axis: int, rank: int) -> int:
    """The channels-last position of ONNX axis `axis` of a rank-`rank` feature map."""
    a = axis % rank
    return _to_cl_perm(rank).index(a)


def parse_shape_spec(spec: str) -> tuple[str, tuple[int, ...]]:
    """`NAME:1x3x224x224` as given to --input-shape (dimensions in the model's
    own layout, each >= 1)."""
    name, sep, dims = spec.rpartition(":")
    if not sep or not name or not re.fullmatch(r"[+-]?\d+(x[+-]?\d+)*", dims):
        raise ValueError(f"bad --input-shape '{spec}': expected NAME:DxDxD, e.g. input:1x3x224x224")
    shape = tuple(int(d) for d in dims.split("x"))
    bad = [d for d in shape if d < 1]
    if bad:
        raise ValueError(
            f"bad --input-shape '{spec}': dimension {bad[0]} must be >= 1 "
            "(an empty or negative dimension is not a shape)"
        )
    return name, shape


def parse_shape_specs(specs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """Every --input-shape of a command line, by input name (ValueError names
    the bad one, or two that give one input different shapes)."""
    out: dict[str, tuple[int, ...]] = {}
    for s in specs:
        name, shape = parse_shape_spec(s)
        if name in out and out[name] != shape:
            raise ValueError(
                f"conflicting --input-shape for input '{name}': "
                f"{'x'.join(map(str, out[name]))} and {'x'.join(map(str, shape))}"
            )
        out[name] = shape
    return out


class _Importer:
    """Imports one graph: the model's, or (with `parent`) an If or Loop body.

    A body sees the names of every enclosing graph (ONNX subgraphs capture
    outer values): its constants, values and producers fall back to the
    parent's, so a body op reads the outer SSA value directly (xDSL regions
    use values defined above) and QDQ fusion reaches across the boundary.
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        origin: str,
        input_shapes: dict[str, tuple[int, ...]],
        parent: _Importer | None = None,
        graph: onnx.GraphProto | None = None,
        simplified: Simplified | None = None,
    ):
        self.model = model
        self.graph = graph if graph is not None else model.graph
        self.origin = origin
        self.opset = default_opset(model)
        """The model's version of the default ONNX domain: handlers read each
        operator with the semantics of this version."""
        self.simplified = simplified
        self.input_shapes = dict(input_shapes)
        self.consts: MutableMapping[str, np.ndarray] = (
            ChainMap({}, parent.consts) if parent is not None else {}
        )
        self.env: MutableMapping[str, _Val] = ChainMap({}, parent.env) if parent is not None else {}
        self.weights: dict[str, np.ndarray] = parent.weights if parent is not None else {}
        self.producer: MutableMapping[str, onnx.NodeProto] = (
            ChainMap({}, parent.producer) if parent is not None else {}
        )
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        self.done: set[int] = set()
        self.fused_acts: dict[int, onnx.NodeProto] = {}
        """Per node, the Relu or Clip between it and its fused QuantizeLinear."""
        self.node_index: dict[int, int] = {}
        self.current: onnx.NodeProto | None = None
        self.builder: Builder | None = None
        self.graph_outputs = {o.name for o in self.graph.output}

    # ------------------------------------------------------------------ errors
    def where(self, node: onnx.NodeProto | None = None) -> str:
        node = node or self.current
        if node is None:
            return self.origin
        return f"{self.origin}: {self.node_words(node)}"

    def node_words(self, node: onnx.NodeProto) -> str:
        """A node in the model's terms: `node 3 'conv1' (Conv)`."""
        idx = self.node_index.get(id(node), -1)
        return f"node {idx} '{node.name}' ({node.op_type})"

    def locate(self, op: Operation) -> None:
        """Mark `op` as imported from the current node (`nn.model_loc`)."""
        if self.current is not None:
            op.location = nn.model_loc(self.node_words(self.current))

    def fail(self, message: str, node: onnx.NodeProto | None = None) -> ImportDiagnostic:
        return ImportDiagnostic(self.where(node), message)

    # -------------------------------------------------------------- attributes
    def attrs(self, node: onnx.NodeProto) -> dict[str, Any]:
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def const(self, name: str) -> np.ndarray | None:
        if not name:
            return None
        if name in self.consts:
            return self.consts[name]
        return None

    def require_const(self, node: onnx.NodeProto, name: str, what: str) -> np.ndarray:
        c = self.const(name)
        if c is None:
            cause = self.runtime_cause(name)
            raise self.fail(
                f"{what} ('{name}') must be a constant at import, "
                + (cause or "but it is computed at run time")
            )
        return c

    def runtime_cause(self, name: str) -> str | None:
        """Why `name` is not a constant: the run-time tensor, or the unknown
        dimension of a Shape, that it is computed from (ONNX axes)."""
        shapes = self.simplified.shapes if self.simplified is not None else {}
        seen: set[str] = set()
        stack = [name]
        while stack:
            n = stack.pop()
            if not n or n in seen or n in self.consts:
                continue
            seen.add(n)
            p = self.producer.get(n)
            if p is None:
                return f"but it depends on the run-time values of input '{n}'"
            if p.op_type in ("Shape", "Size"):
                src = p.input[0]
                dims = shapes.get(src)
                if dims is None:
                    return f"but the shape of '{src}' is not known at import"
                given = {
                    d.dim_param for i in self.graph.input for d in i.type.tensor_type.shape.dim
                }
                for d, v in enumerate(dims):
                    if isinstance(v, str) and v in given:
                        return (
                            f"but it depends on dimension {d} of '{src}', symbolic '{v}'; "
                            "give the input shapes with --input-shape"
                        )
                    if not isinstance(v, int):
                        return (
                            f"but it depends on dimension {d} of '{src}', which is only "
                            "known at run time"
                        )
                continue
            if p.op_type in _DATA_DEPENDENT:
                return (
                    f"but it depends on '{n}', whose value {p.op_type} "
                    f"('{p.name}') computes from run-time data"
                )
            stack.extend(i for i in p.input if i)
        return None

    # ----------------------------------------------------------------- emission
    @property
    def b(self) -> Builder:
        assert self.builder is not None
        return self.builder

    def emit(
        self,
        cls: type[nn.NNOp],
        operands: Sequence[SSAValue],
        props: dict[str, Attribute] | None = None,
        *,
        dtype: np.dtype | type = np.float32,
        quant: nn.QuantAttr | None = None,
        result_shapes: Sequence[Sequence[int]] | None = None,
        n_results: int = 1,
    ) -> Operation:
        """Create an op, inferring result shapes from the op class itself."""
        props = props or {}
        if result_shapes is None:
            probe = cls.create(
                operands=list(operands),
                properties=dict(props),
                result_types=[nn.tensor_type([1], np.float32)] * n_results,
            )
            try:
                result_shapes = probe.infer_shapes()
            except VerifyException as e:
                raise self.fail(str(e)) from None
            finally:
                probe.erase(safe_erase=False)
        for s in result_shapes:
            if any(d < 1 for d in s):
                raise self.fail("the result would be empty (a dimension below 1)")
            n = math.prod(s) * np.dtype(dtype).itemsize
            if n > diagnostic.MAX_TENSOR_BYTES:
                raise self.fail(
                    f"the result would take {diagnostic.format_size(n)}; no target holds a "
                    f"tensor above {diagnostic.format_size(diagnostic.MAX_TENSOR_BYTES)} "
                    "(a 32-bit address space)"
                )
        op = cls.create(
            operands=list(operands),
            properties=dict(props),
            result_types=[nn.value_type(s, dtype, quant) for s in result_shapes],
        )
        try:
            op.verify()
        except VerifyException as e:
            raise self.fail(str(e)) from None
        self.locate(op)
        self.b.insert(op)
        return op

    def weight(self, array: np.ndarray, role: str) -> SSAValue:
        """An `nn.weight` for a constant array, named after the current node."""
        node = self.current
        base = (
            node.name
            if node is not None and node.name
            else f"node{self.node_index.get(id(node), 0)}"
        )
        base = re.sub(r"[^A-Za-z0-9_.:/-]", "_", base)
        name = f"{base}.{role}"
        k = 1
        while name in self.weights:
            k += 1
            name = f"{base}.{role}{k}"
        arr = np.ascontiguousarray(array).reshape(np.shape(array))  # a scalar stays rank 0
        if arr.dtype == np.float64:
            arr = arr.astype(np.float32)
        self.weights[name] = arr
        try:
            ty = nn.value_type(arr.shape, arr.dtype)
        except ValueError as e:
            raise self.fail(f"constant '{name}': {e}") from None
        op = nn.WeightOp(name, ty)
        self.b.insert(op)
        return op.result

    # ------------------------------------------------------------------- values
    def dq_node(self, name: str) -> onnx.NodeProto | None:
        p = self.producer.get(name)
        return p if p is not None and p.op_type == "DequantizeLinear" else None

    def quant_params(self, node: onnx.NodeProto) -> tuple[np.ndarray, np.ndarray, int]:
        """(scale, zero point, axis) of a QuantizeLinear / DequantizeLinear node."""
        scale = self.require_const(node, node.input[1], "the scale")
        zp_name = node.input[2] if len(node.input) > 2 else ""
        zp = self.const(zp_name) if zp_name else np.zeros((), np.uint8)
        if zp is None:
            raise self.fail("the zero point must be a constant", node)
        axis = int(self.attrs(node).get("axis", 1))
        return scale.astype(np.float32), zp, axis

    def quant_attr(self, node: onnx.NodeProto) -> tuple[nn.QuantAttr, np.dtype]:
        scale, zp, axis = self.quant_params(node)
        if scale.size != 1:
            raise self.fail(
                f"per-axis {node.op_type} of the activation '{node.input[0]}' (axis {axis}, "
                f"{scale.size} scales) is not supported; activations take one scale per tensor",
                node,
            )
        if zp.dtype not in (np.int8, np.uint8):
            raise self.fail(f"unsupported quantized type {zp.dtype}; supported: int8, uint8", node)
        return nn.QuantAttr(float(scale.reshape(())), int(zp.reshape(()))), zp.dtype

    def quantized(self, name: str) -> _Val | None:
        """The quantized activation behind a DequantizeLinear output, if any."""
        dq = self.dq_node(name)
        if dq is None or self.const(dq.input[0]) is not None:
            return None
        src = self.env.get(dq.input[0])
        if src is None or nn.quant_of(src.ssa) is None or self.per_axis(dq):
            return None
        return src

    def per_axis(self, node: onnx.NodeProto) -> bool:
        """Whether a QuantizeLinear / DequantizeLinear has a constant scale of
        more than one value."""
        scale = self.const(node.input[1]) if len(node.input) > 1 else None
        return scale is not None and scale.size != 1

    def linear_quant(
        self,
        node: onnx.NodeProto,
        x: _Val,
        cls: type[nn.NNOp],
        dtype: np.dtype | type,
    ) -> _Val:
        """QuantizeLinear / DequantizeLinear with its scale and zero point as
        operands (`nn.quantize_linear` / `nn.dequantize_linear`): per axis, or
        of a raw integer tensor; the parameters shaped to broadcast along the
        axis in the value's layout."""
        scale, zp, axis = self.quant_params(node)
        shape = nn.shape_of(x.ssa)
        rank = len(shape)
        if node.op_type == "DequantizeLinear" and zp.dtype != nn.dtype_of(x.ssa):
            raise self.fail(
                f"the zero point is {zp.dtype} but '{node.input[0]}' is {x.ssa.type}", node
            )
        if scale.size == 1:
            s_arr, z_arr = scale.reshape(()), zp.reshape(())
        else:
            if not -rank <= axis < rank:
                raise self.fail(f"axis {axis} is outside the rank-{rank} input", node)
            onnx_shape = shape
            if x.layout == "cl":
                onnx_shape = tuple(shape[i] for i in _to_plain_perm(rank))
            n = onnx_shape[axis % rank]
            if scale.size != n or zp.size not in (1, n):
                raise self.fail(
                    f"per-axis parameters of axis {axis} need {n} values (the axis length), "
                    f"got {scale.size} scales and {zp.size} zero points",
                    node,
                )
            along = [1] * rank
            along[axis % rank] = n
            s_arr = scale.reshape(-1).reshape(along)
            z_arr = np.broadcast_to(zp.reshape(-1), (n,)).reshape(along)
            if x.layout == "cl":
                s_arr = np.transpose(s_arr, _to_cl_perm(rank))
                z_arr = np.transpose(z_arr, _to_cl_perm(rank))
        s_w = self.weight(np.ascontiguousarray(s_arr, np.float32), "scale")
        z_w = self.weight(np.ascontiguousarray(z_arr), "zero_point")
        out_dt = zp.dtype if cls is nn.QuantizeLinearOp else dtype
        op = self.emit(cls, [x.ssa, s_w, z_w], dtype=out_dt, result_shapes=[shape])
        return _Val(op.results[0], x.layout)

    def value(self, name: str) -> _Val:
        """The float (or already quantized-input) value named `name`."""
        if name in self.env:
            return self.env[name]
        c = self.const(name)
        if c is not None:
            v = _Val(self.weight(c, "const"), "plain")
            self.env[name] = v
            return v
        dq = self.dq_node(name)
        if dq is not None:
            cw = self.const(dq.input[0])
            if cw is not None:  # a dequantized constant: its float32 values
                scale, zp, axis = self.quant_params(dq)
                per_axis = axis if scale.size != 1 else None
                arr = K.dequantize(cw, scale=scale, zero_point=zp, axis=per_axis)
                v = _Val(self.weight(np.asarray(arr, np.float32), "const"), "plain")
                self.env[name] = v
                return v
            src = self.env.get(dq.input[0])
            if src is None:
                raise self.fail(f"value '{dq.input[0]}' is used before it is defined", dq)
            scale, _, axis = self.quant_params(dq)
            if scale.size != 1 or nn.quant_of(src.ssa) is None:
                v = self.linear_quant(dq, src, nn.DequantizeLinearOp, np.float32)
                self.env[name] = v
                return v
            sq = nn.quant_of(src.ssa)
            if sq is not None and (
                np.float32(scale.reshape(())) != sq.scale_value
                or int(np.asarray(self.quant_params(dq)[1]).reshape(())) != sq.zp_value
            ):
                raise self.fail(
                    f"DequantizeLinear reads '{dq.input[0]}' with scale "
                    f"{float(scale.reshape(()))} and zero point "
                    f"{int(np.asarray(self.quant_params(dq)[1]).reshape(()))}, but it was "
                    f"quantized with scale {float(sq.scale_value)} and zero point "
                    f"{sq.zp_value}; requantizing between them is not supported",
                    dq,
                )
            op = self.emit(nn.DequantizeOp, [src.ssa])
            v = _Val(op.results[0], src.layout)
            self.env[name] = v
            return v
        raise self.fail(f"value '{name}' is used before it is defined")

    def to_cl(self, v: _Val) -> _Val:
        r = len(nn.shape_of(v.ssa))
        if v.layout == "cl" or r not in (3, 4):
            return _Val(v.ssa, "cl" if r in (3, 4) else v.layout)
        return _Val(self.permute(v.ssa, _to_cl_perm(r)), "cl")

    def to_plain(self, v: _Val) -> _Val:
        if v.layout == "plain":
            return v
        r = len(nn.shape_of(v.ssa))
        return _Val(self.permute(v.ssa, _to_plain_perm(r)), "plain")

    def permute(self, x: SSAValue, perm: tuple[int, ...]) -> SSAValue:
        shape = nn.shape_of(x)
        new_shape = tuple(shape[i] for i in perm)
        moved = [i for i in perm if shape[i] != 1]
        dt, q = nn.dtype_of(x), nn.quant_of(x)
        if moved == sorted(moved):  # only unit axes move: the bytes do not
            op = self.emit(nn.ReshapeOp, [x], dtype=dt, quant=q, result_shapes=[new_shape])
        else:
            op = self.emit(nn.TransposeOp, [x], {"perm": nn.ints_prop(perm)}, dtype=dt, quant=q)
        return op.results[0]

    # ----------------------------------------------------------------- the walk
    def index(self) -> None:
        """Constants, producers and consumers of this graph's names.

        An If or Loop node counts as a consumer of every outer name its
        bodies read, so fusion does not swallow a value a body still needs.
        """
        g = self.graph
        simp = self.simplified
        if simp is not None:
            self.consts.update(simp.consts)
        else:
            for init in g.initializer:
                self.consts[init.name] = numpy_helper.to_array(init)
        for i, node in enumerate(g.node):
            self.node_index[id(node)] = simp.origin_index[i] if simp is not None else i
            for o in node.output:
                self.producer[o] = node
            for inp in node.input:
                self.consumers.setdefault(inp, []).append(node)
            for sub in subgraphs(node):
                for name in sorted(captures(sub)):
                    self.consumers.setdefault(name, []).append(node)
            if node.op_type == "Constant":
                self.current = node
                self.consts[node.output[0]] = self.constant_value(node)
        self.current = None
        self.fold_batch_norms()

    def import_nodes(self) -> None:
        """Emit every node of this graph in order (lazily skipped ones aside)."""
        for node in self.graph.node:
            if id(node) in self.done or node.op_type in (
                "Constant",
                "DequantizeLinear",
            ):
                continue
            self.current = node
            if node.op_type not in _HANDLERS:
                raise self.fail(
                    f"unsupported operator '{node.op_type}'"
                    + (f" (domain '{node.domain}')" if node.domain else "")
                    + "; supported operators: "
                    + ", ".join(SUPPORTED_OPS)
                )
            if node.domain not in ("", "ai.onnx"):
                raise self.fail(f"unsupported operator domain '{node.domain}'")
            _HANDLERS[node.op_type](self, node)
        self.current = None

    def body(
        self,
        node: onnx.NodeProto,
        attr: str,
        graph: onnx.GraphProto,
        args: Sequence[tuple[str, Attribute, Layout]],
    ) -> tuple[_Importer, Block]:
        """Import a subgraph attribute into a new block with `args` (name, type,
        layout) as block arguments; the caller adds the terminator."""
        child = _Importer(self.model, f"{self.where(node)}: {attr}", {}, parent=self, graph=graph)
        block = Block(arg_types=[t for _, t, _ in args])
        for (name, _, layout), arg in zip(args, block.args):
            arg.name_hint = _hint(name)
            child.env[name] = _Val(arg, layout)
        child.builder = Builder(InsertPoint.at_end(block))
        child.index()
        child.import_nodes()
        return child, block

    def to_layout(self, v: _Val, layout: Layout) -> _Val:
        return self.to_cl(v) if layout == "cl" else self.to_plain(v)

    def run(self) -> Imported:
        g = self.graph
        self.index()

        arg_types: list[Attribute] = []
        arg_layouts: list[str] = []
        real_inputs = [i for i in g.input if i.name not in self.consts]
        if not real_inputs:
            raise ImportDiagnostic(self.origin, "the model has no runtime inputs")
        for inp in real_inputs:
            shape, dtype = self.input_type(inp)
            layout = "cl" if len(shape) in (3, 4) else "plain"
            if layout == "cl" and self.channels_last_input(inp.name, len(shape)):
                layout = "plain"  # held as it arrives: its transposes are no ops
            if layout == "cl":
                shape = tuple(shape[i] for i in _to_cl_perm(len(shape)))
            # a scalar crosses the boundary as one element of shape 1 ("scalar")
            quant = self.input_quant(inp.name, dtype)
            arg_types.append(nn.tensor_type(shape or (1,), dtype, quant))
            arg_layouts.append(
                "plain" if layout == "plain" and shape else
                "nchw" if len(shape) == 4 else "ncw" if len(shape) == 3 else
                "scalar" if not shape else "plain"
            )
        block = Block(arg_types=arg_types)
        self.builder = Builder(InsertPoint.at_end(block))
        for inp, arg, lay in zip(real_inputs, block.args, arg_layouts):
            arg.name_hint = _hint(inp.name)
            held: SSAValue = arg
            if lay == "scalar":
                held = self.emit(
                    nn.ReshapeOp, [arg], dtype=nn.dtype_of(arg), result_shapes=[()]
                ).results[0]
            self.env[inp.name] = _Val(held, "cl" if lay in ("nchw", "ncw") else "plain")
        self.import_nodes()

        results: list[SSAValue] = []
        out_layouts: list[str] = []
        for out in g.output:
            v = self.value(out.name)
            r = len(nn.shape_of(v.ssa))
            if isinstance(v.ssa.owner, nn.WeightOp) and r > 0:
                # a constant output (a folded Shape, a Constant) is copied
                # into a tensor of its own, as any computed output is: the
                # plan holds and counts it, the run writes it
                copy = self.emit(
                    nn.IdentityOp,
                    [v.ssa],
                    dtype=nn.dtype_of(v.ssa),
                    quant=nn.quant_of(v.ssa),
                )
                v = _Val(copy.results[0], v.layout)
            if r == 0:
                one = self.emit(
                    nn.ReshapeOp,
                    [v.ssa],
                    dtype=nn.dtype_of(v.ssa),
                    quant=nn.quant_of(v.ssa),
                    result_shapes=[(1,)],
                )
                results.append(one.results[0])
                out_layouts.append("scalar")
                continue
            results.append(v.ssa)
            out_layouts.append(("nchw" if r == 4 else "ncw") if v.layout == "cl" else "plain")
        self.b.insert(func.ReturnOp(*results))
        ftype = FunctionType.from_lists(arg_types, [r.type for r in results])
        fn = func.FuncOp("main", ftype, Region(block))
        fn.attributes["nn.input_names"] = ArrayAttr([StringAttr(i.name) for i in real_inputs])
        fn.attributes["nn.input_layouts"] = ArrayAttr([StringAttr(s) for s in arg_layouts])
        fn.attributes["nn.output_names"] = ArrayAttr([StringAttr(o.name) for o in g.output])
        fn.attributes["nn.output_layouts"] = ArrayAttr([StringAttr(s) for s in out_layouts])
        module = ModuleOp([fn])
        try:
            module.verify()
        except VerifyException as e:
            raise ImportDiagnostic(
                self.origin, f"the imported graph does not verify: {e}"
            ) from None
        values = {k: (v.ssa, v.layout) for k, v in self.env.items()}
        return Imported(module, self.weights, values)

    def channels_last_input(self, name: str, rank: int) -> bool:
        """An input of rank 3 or 4 that every reader transposes to channels
        first (NHWC -> NCHW, NWC -> NCW: a TensorFlow export's image or
        sequence), directly or after the DequantizeLinear of an int8 input
        (`input_quant`): it is imported as it arrives, the layout the kernels
        run in, and those transposes are no ops (`_transpose`)."""
        if any(o.name == name for o in self.graph.output):
            return False
        readers = self.consumers.get(name, [])
        if readers and all(r.op_type == "DequantizeLinear" for r in readers):
            readers = [t for r in readers for t in self.consumers.get(r.output[0], [None])]
        want = list(_to_plain_perm(rank))
        return bool(readers) and all(
            r is not None
            and r.op_type == "Transpose"
            and [int(v) for v in self.attrs(r).get("perm", [])] == want
            for r in readers
        )

    def input_quant(self, name: str, dtype: np.dtype) -> nn.QuantAttr | None:
        """The quantization of an int8 or uint8 input that every reader
        dequantizes with the same per-tensor scale and zero point (a fully
        quantized model's input): the input is that quantized tensor, so the
        QDQ groups reading it run on int8. None otherwise (raw integers)."""
        if np.dtype(dtype) not in (np.int8, np.uint8):
            return None
        readers = self.consumers.get(name, [])
        if not readers or any(
            r.op_type != "DequantizeLinear" or r.input[0] != name or self.per_axis(r)
            for r in readers
        ):
            return None
        found: list[nn.QuantAttr] = []
        for r in readers:
            if any(self.const(n) is None for n in r.input[1:] if n):
                return None
            scale, zp, _ = self.quant_params(r)
            if zp.dtype != np.dtype(dtype) or scale.size != 1:
                return None
            found.append(nn.QuantAttr(float(scale.reshape(())), int(zp.reshape(()))))
        return found[0] if all(f == found[0] for f in found) else None

    def constant_value(self, node: onnx.NodeProto) -> np.ndarray:
        a = self.attrs(node)
        if "value" in a:
            return numpy_helper.to_array(a["value"])
        for key in ("value_float", "value_int"):
            if key in a:
                return np.array(a[key])
        for key in ("value_floats", "value_ints"):
            if key in a:
                return np.array(list(a[key]))
        raise self.fail("unsupported Constant form; use 'value' or value_float(s)/value_int(s)")

    def input_type(self, inp: onnx.ValueInfoProto) -> tuple[tuple[int, ...], np.dtype]:
        tt = inp.type.tensor_type
        elem = tt.elem_type
        if elem not in _ONNX_DTYPES:
            type_name = elem_type_name(elem)
            raise ImportDiagnostic(
                f"{self.origin}: input '{inp.name}'",
                f"unsupported element type {type_name}; supported: FLOAT, INT8, UINT8, "
                "INT32, INT64, BOOL",
            )
        dims: list[int] = []
        symbolic: list[str] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(d.dim_value)
            else:
                dims.append(-1)
                symbolic.append(d.dim_param or "?")
        if inp.name in self.input_shapes:
            given = self.input_shapes.pop(inp.name)
            if len(given) != len(dims) or any(d != -1 and d != g for d, g in zip(dims, given)):
                raise ImportDiagnostic(
                    f"{self.origin}: input '{inp.name}'",
                    f"--input-shape {'x'.join(map(str, given))} does not match the "
                    f"model's {'x'.join(str(d) if d > 0 else '?' for d in dims)}",
                )
            dims = list(given)
            try:
                diagnostic.check_tensor_size(
                    f"{self.origin}: input '{inp.name}'",
                    f"--input-shape {inp.name}:{'x'.join(map(str, dims))}",
                    dims,
                    np.dtype(_ONNX_DTYPES[elem]).itemsize,
                )
            except diagnostic.ModelInvalid as e:
                raise ImportDiagnostic(e.where, e.message) from None
        elif symbolic:
            raise ImportDiagnostic(
                f"{self.origin}: input '{inp.name}'",
                f"symbolic dimension '{symbolic[0]}' in shape "
                f"{'x'.join(str(d) if d > 0 else '?' for d in dims)}; give the shape "
                f"with --input-shape {inp.name}:"
                + "x".join(str(d) if d > 0 else "1" for d in dims),
            )
        return tuple(dims), np.dtype(_ONNX_DTYPES[elem])

    def fold_batch_norms(self) -> None:
        """Fold BatchNormalization into a preceding float Conv that only feeds it."""
        for node in self.graph.node:
            if node.op_type != "BatchNormalization" or bn_refusal(self, node) is not None:
                continue
            conv = self.producer.get(node.input[0])
            if (
                conv is None
                or id(conv) not in self.node_index  # a conv of an enclosing graph
                or conv.op_type != "Conv"
                or len(self.consumers.get(conv.output[0], [])) != 1
                or conv.output[0] in self.graph_outputs
            ):
                continue
            w = self.const(conv.input[1])
            b = self.const(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else None
            params = [self.const(n) for n in node.input[1:5]]
            if w is None or w.dtype != np.float32 or any(p is None for p in params):
                continue
            if len(conv.input) > 2 and conv.input[2] and b is None:
                continue
            gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)  # type: ignore[arg-type]
            eps = float(self.attrs(node).get("epsilon", 1e-5))
            k = gamma / np.sqrt(var + eps)
            w2 = (w.astype(np.float64) * k.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
            b0 = np.zeros(w.shape[0]) if b is None else b.astype(np.float64)
            b2 = ((b0 - mean) * k + beta).astype(np.float32)
            wname, bname = conv.output[0] + "::bnw", conv.output[0] + "::bnb"
            self.consts[wname], self.consts[bname] = w2, b2
            new_inputs = [conv.input[0], wname, bname]
            del conv.input[:]
            conv.input.extend(new_inputs)
            # the BN output is now the conv output: rename the conv's result
            del conv.output[:]
            conv.output.append(node.output[0])
            self.producer[node.output[0]] = conv
            self.done.add(id(node))

    # ---------------------------------------------------------- quantized fusion
    def fused_output(self, node: onnx.NodeProto) -> onnx.NodeProto | None:
        """The single QuantizeLinear that is the only consumer of the node's
        output, or of a Relu or Clip (constant bounds) that is the only
        consumer of a convolution's, matrix product's or Add's output (an
        exporter's fused activation: `finish` applies it to the quantized
        result, which is exact, quantization being monotone)."""
        if len(node.output) != 1 or node.output[0] in self.graph_outputs:
            return None
        cons = self.consumers.get(node.output[0], [])
        act = None
        if node.op_type in _ACT_FUSERS and len(cons) == 1 and _fusable_act(self, cons[0]):
            act = cons[0]
            if act.output[0] in self.graph_outputs:
                return None
            cons = self.consumers.get(act.output[0], [])
        if len(cons) != 1 or cons[0].op_type != "QuantizeLinear":
            return None
        if self.per_axis(cons[0]):  # quantized as data
            return None
        q = cons[0]
        scale, zp, _ = self.quant_params(q)
        if scale.size != 1:
            return None
        if act is not None:
            self.fused_acts[id(node)] = act
        return q

    def quantized_inputs(self, node: onnx.NodeProto, names: Sequence[str]) -> list[_Val] | None:
        vals: list[_Val] = []
        for n in names:
            v = self.quantized(n)
            if v is None:
                return None
            vals.append(v)
        return vals

    def finish(
        self,
        node: onnx.NodeProto,
        op: Operation,
        layout: Layout,
        q: onnx.NodeProto | None = None,
    ) -> None:
        self.finish_as(node, op.results[0], layout, q)

    def finish_as(
        self,
        node: onnx.NodeProto,
        value: SSAValue,
        layout: Layout,
        q: onnx.NodeProto | None = None,
    ) -> None:
        """`node`'s output (or its fused Q's, through the activation fused
        between them, `fused_output`) is `value`."""
        out = q.output[0] if q is not None else node.output[0]
        if q is not None:
            self.done.add(id(q))
            act = self.fused_acts.pop(id(node), None)
            if act is not None:  # the activation between the op and its Q
                self.done.add(id(act))
                value = _emit_act(self, act, value).results[0]
        self.env[out] = _Val(value, layout)

    def result_quant(self, q: onnx.NodeProto | None) -> tuple[nn.QuantAttr | None, np.dtype]:
        if q is None:
            return None, np.dtype(np.float32)
        attr, dt = self.quant_attr(q)
        return attr, dt


def _hint(name: str) -> str | None:
    h = re.sub(r"[^A-Za-z0-9_]", "_", name)
    return h if h and not h[0].isdigit() else None


# ======================================================================= handlers

Handler = Callable[[_Importer, onnx.NodeProto], None]
_HANDLERS: dict[str, Handler] = {}


def _handles(*names: str) -> Callable[[Handler], Handler]:
    def deco(f: Handler) -> Handler:
        for n in names:
            _HANDLERS[n] = f
        return f

    return deco


def _float_unary(
    imp: _Importer,
    node: onnx.NodeProto,
    cls: type[nn.NNOp],
    props: dict[str, Attribute],
) -> None:
    q = imp.fused_output(node)
    qin = imp.quantized_inputs(node, [node.input[0]]) if q is not None else None
    if q is not None and qin is not None:
        attr, dt = imp.result_quant(q)
        op = imp.emit(cls, [qin[0].ssa], props, dtype=dt, quant=attr)
        imp.finish(node, op, qin[0].layout, q)
        return
    x = imp.value(node.input[0])
    op = imp.emit(cls, [x.ssa], props)
    imp.finish(node, op, x.layout)


_UNARY: dict[str, type[nn.NNOp]] = {
    "Relu": nn.ReluOp,
    "Sigmoid": nn.SigmoidOp,
    "Tanh": nn.TanhOp,
    "HardSwish": nn.HardSwishOp,
    "Exp": nn.ExpOp,
    "Log": nn.LogOp,
    "Sqrt": nn.SqrtOp,
    "Abs": nn.AbsOp,
    "Floor": nn.FloorOp,
    "Identity": nn.IdentityOp,
    "Dropout": nn.IdentityOp,
}


def _inference_dropout(imp: _Importer, node: onnx.NodeProto) -> None:
    """A Dropout the simplifier kept (its output is a graph output) must be
    in inference mode, its mask (if any) the simplifier's constant of ones."""
    if len(node.input) > 2 and node.input[2]:
        mode = imp.const(node.input[2])
        if mode is None or bool(np.asarray(mode).reshape(())):
            raise imp.fail(
                f"Dropout in training mode ('{node.input[2]}' is true or computed at run "
                "time) is random; only inference mode is supported"
            )
    if len(node.output) > 1 and node.output[1] and imp.const(node.output[1]) is None:
        raise imp.fail(f"Dropout's mask output '{node.output[1]}' needs the input's static shape")


@_handles(*_UNARY)
def _unary(imp: _Importer, node: onnx.NodeProto) -> None:
    if node.op_type == "Dropout":
        _inference_dropout(imp, node)
    if node.op_type == "Identity" and imp.dq_node(node.input[0]) is None:
        x = imp.value(node.input[0])
        if nn.quant_of(x.ssa) is None and nn.dtype_of(x.ssa) != np.float32:
            imp.env[node.output[0]] = x  # integer or bool data passes through
            return
    _float_unary(imp, node, _UNARY[node.op_type], {})


@_handles("HardSigmoid", "LeakyRelu", "Elu", "Gelu")
def _unary_attr(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    t = node.op_type
    cls: type[nn.NNOp]
    props: dict[str, Attribute]
    if t == "HardSigmoid":
        cls, props = (
            nn.HardSigmoidOp,
            {
                "alpha": nn.float_prop(a.get("alpha", 0.2)),
                "beta": nn.float_prop(a.get("beta", 0.5)),
            },
        )
    elif t == "LeakyRelu":
        cls, props = nn.LeakyReluOp, {"alpha": nn.float_prop(a.get("alpha", 0.01))}
    elif t == "Elu":
        cls, props = nn.EluOp, {"alpha": nn.float_prop(a.get("alpha", 1.0))}
    else:
        approx = a.get("approximate", b"none")
        approx = approx.decode() if isinstance(approx, bytes) else str(approx)
        cls, props = nn.GeluOp, {"approximate": StringAttr(approx)}
    _float_unary(imp, node, cls, props)


def _clip_bounds(imp: _Importer, node: onnx.NodeProto) -> tuple[float, float]:
    a = imp.attrs(node)
    big = float(np.finfo(np.float32).max)
    lo, hi = float(a.get("min", -big)), float(a.get("max", big))
    if len(node.input) > 1 and node.input[1]:
        lo = float(imp.require_const(node, node.input[1], "Clip's min").reshape(()))
    if len(node.input) > 2 and node.input[2]:
        hi = float(imp.require_const(node, node.input[2], "Clip's max").reshape(()))
    return max(lo, -big), min(hi, big)


@_handles("Clip")
def _clip(imp: _Importer, node: onnx.NodeProto) -> None:
    lo, hi = _clip_bounds(imp, node)
    _float_unary(imp, node, nn.ClipOp, {"min": nn.float_prop(lo), "max": nn.float_prop(hi)})


_ACT_FUSERS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul", "Add"})
"""Ops whose QDQ group may hold a Relu or Clip before its QuantizeLinear."""


def _fusable_act(imp: _Importer, node: onnx.NodeProto) -> bool:
    """A Relu, or a Clip whose bounds are constants, of one output."""
    if len(node.output) != 1:
        return False
    if node.op_type == "Relu":
        return True
    return node.op_type == "Clip" and all(
        imp.const(n) is not None for n in node.input[1:] if n
    )


def _emit_act(imp: _Importer, act: onnx.NodeProto, x: SSAValue) -> Operation:
    """A fused Relu or Clip on the quantized result `x`, in its quantization."""
    props: dict[str, Attribute] = {}
    cls: type[nn.NNOp] = nn.ReluOp
    if act.op_type == "Clip":
        lo, hi = _clip_bounds(imp, act)
        cls, props = nn.ClipOp, {"min": nn.float_prop(lo), "max": nn.float_prop(hi)}
    return imp.emit(cls, [x], props, dtype=nn.dtype_of(x), quant=nn.quant_of(x))


_BINARY: dict[str, type[nn.NNOp]] = {
    "Add": nn.AddOp,
    "Sub": nn.SubOp,
    "Mul": nn.MulOp,
    "Div": nn.DivOp,
    "Max": nn.MaxOp,
    "Min": nn.MinOp,
    "PRelu": nn.PReluOp,
}


def _match_layout(imp: _Importer, v: _Val, name: str, target: Layout, rank: int) -> SSAValue:
    """Bring a binary operand to the other operand's layout (constants at import)."""
    if v.layout == target:
        return v.ssa
    c = imp.const(name)
    shape = nn.shape_of(v.ssa)
    if target == "cl":
        if c is not None:
            arr = np.asarray(c).reshape((1,) * (rank - c.ndim) + tuple(c.shape))
            arr = np.transpose(arr, _to_cl_perm(rank))
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            return imp.weight(arr, "const")
        if len(shape) < rank:
            v = _Val(
                imp.emit(
                    nn.ReshapeOp,
                    [v.ssa],
                    dtype=nn.dtype_of(v.ssa),
                    quant=nn.quant_of(v.ssa),
                    result_shapes=[(1,) * (rank - len(shape)) + shape],
                ).results[0],
                "plain",
            )
        return imp.to_cl(v).ssa
    return imp.to_plain(v).ssa


def _legacy_broadcast(imp: _Importer, node: onnx.NodeProto) -> None:
    """Before opset 7, `broadcast=1` with `axis` aligns B with A's dimensions
    from `axis` on: B gets unit dimensions around it, which numpy broadcasting
    (opset 7's rule) then reads the same way."""
    a = imp.attrs(node)
    if imp.opset >= 7 or not int(a.get("broadcast", 0)) or "axis" not in a:
        return
    shape_a = _plain_shape(imp.value(node.input[0]))
    name_b = node.input[1]
    vb = imp.value(name_b)
    shape_b = _plain_shape(vb)
    axis = int(a["axis"]) % len(shape_a)
    if axis + len(shape_b) > len(shape_a):
        raise imp.fail(
            f"broadcast axis {axis} puts B's {len(shape_b)} dimensions past A's {len(shape_a)}"
        )
    target = (1,) * axis + shape_b + (1,) * (len(shape_a) - axis - len(shape_b))
    new = f"{name_b}::bcast{axis}"
    c = imp.const(name_b)
    if c is not None:
        imp.consts[new] = np.asarray(c).reshape(target)
    else:
        xp = imp.to_plain(vb)
        op = imp.emit(
            nn.ReshapeOp,
            [xp.ssa],
            dtype=nn.dtype_of(xp.ssa),
            quant=nn.quant_of(xp.ssa),
            result_shapes=[target],
        )
        imp.env[new] = _Val(op.results[0], "plain")
    node.input[1] = new


@_handles(*_BINARY)
def _binary(imp: _Importer, node: onnx.NodeProto) -> None:
    binary_op(imp, node)


def binary_op(
    imp: _Importer, node: onnx.NodeProto, props: dict[str, Attribute] | None = None
) -> None:
    """An elementwise binary node (with `props` for its op) in the layout of
    its operands, QDQ fused where it wraps the node."""
    cls = _BINARY[node.op_type]
    _legacy_broadcast(imp, node)
    q = imp.fused_output(node)
    qin = None
    if q is not None:
        qin = imp.quantized_inputs(node, list(node.input))
        if qin is None and node.op_type in (
            "Add",
            "Sub",
            "Mul",
            "Div",
            "Max",
            "Min",
            "PRelu",
        ):
            # one quantized activation and one constant: the constant stays real
            vals = [imp.quantized(n) for n in node.input]
            if sum(v is not None for v in vals) == 1:
                qin = [v if v is not None else imp.value(n) for v, n in zip(vals, node.input)]
    vals = qin if qin is not None else [imp.value(n) for n in node.input]
    target = "cl" if any(v.layout == "cl" for v in vals) else "plain"
    rank = max(len(nn.shape_of(v.ssa)) for v in vals)
    operands = [_match_layout(imp, v, n, target, rank) for v, n in zip(vals, node.input)]
    if qin is not None:
        attr, dt = imp.result_quant(q)
        op = imp.emit(cls, operands, props, dtype=dt, quant=attr)
        imp.finish(node, op, target, q)
    else:
        dt = nn.dtype_of(operands[0])
        raw = nn.quant_of(operands[0]) is None and dt.kind in "iu"
        if raw and cls is nn.DivOp:
            _no_zero_divisor(imp, node)
        op = imp.emit(cls, operands, props, dtype=dt if raw else np.float32)
        imp.finish(node, op, target)


def _no_zero_divisor(imp: _Importer, node: onnx.NodeProto) -> None:
    """Integer Div by a constant holding 0 is refused: onnxruntime traps
    there (SIGFPE) and ONNX defines no result."""
    c = imp.const(node.input[1])
    if c is not None and np.any(np.asarray(c) == 0):
        where = [int(i) for i in np.argwhere(np.asarray(c) == 0)[0]]
        raise imp.fail(
            f"integer division by zero: the divisor '{node.input[1]}' holds 0 at index "
            f"{where}; onnxruntime traps there and ONNX defines no result"
        )


def _spatial_props(
    imp: _Importer,
    node: onnx.NodeProto,
    spatial_in: Sequence[int],
    kernel: Sequence[int],
) -> dict[str, Attribute]:
    a = imp.attrs(node)
    n = len(spatial_in)
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    pads = list(a.get("pads", [0] * (2 * n)))
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if len(strides) != n or len(dil) != n or len(pads) != 2 * n:
        raise imp.fail(
            f"strides, dilations and pads must have {n}, {n} and {2 * n} values for a {n}D input"
        )
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * n)
        for i in range(n):
            eff = (kernel[i] - 1) * dil[i] + 1
            out = -(-spatial_in[i] // strides[i])
            total = max((out - 1) * strides[i] + eff - spatial_in[i], 0)
            small = total // 2
            pads[i], pads[n + i] = (
                (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
            )
    elif auto == "VALID":
        pads = [0] * (2 * n)
    elif auto != "NOTSET":
        raise imp.fail(f"unknown auto_pad '{auto}'; expected NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    props: dict[str, Attribute] = {"kernel": nn.ints_prop(kernel)}
    if any(s != 1 for s in strides):
        props["strides"] = nn.ints_prop(strides)
    if any(d != 1 for d in dil):
        props["dilations"] = nn.ints_prop(dil)
    if any(pads):
        props["pads"] = nn.ints_prop(pads)
    return props


def _weight_scales(
    imp: _Importer, dq: onnx.NodeProto, channels: int, axis_expected: int
) -> np.ndarray:
    scale, zp, axis = imp.quant_params(dq)
    if np.any(zp != 0):
        raise imp.fail("quantized weights must be symmetric (zero point 0)", dq)
    if scale.size == 1:
        return np.full((channels,), float(scale.reshape(())), np.float32)
    if scale.size != channels or axis % 4 != axis_expected % 4 and axis != axis_expected:
        raise imp.fail(
            f"per-channel weight scales must run along the output channels "
            f"(axis {axis_expected}), got axis {axis} with {scale.size} scales",
            dq,
        )
    return scale.reshape(-1).astype(np.float32)


@_handles("Conv", "ConvTranspose")
def _conv(imp: _Importer, node: onnx.NodeProto) -> None:
    transpose = node.op_type == "ConvTranspose"
    a = imp.attrs(node)
    q = imp.fused_output(node)
    wdq = imp.dq_node(node.input[1])
    qin = imp.quantized_inputs(node, [node.input[0]]) if q is not None else None
    quantized = (
        q is not None
        and qin is not None
        and wdq is not None
        and (imp.const(wdq.input[0]) is not None)
    )
    if quantized:
        assert wdq is not None and qin is not None
        x = imp.to_cl(qin[0])
        w = imp.const(wdq.input[0])
        assert w is not None
    else:
        x = imp.to_cl(imp.value(node.input[0]))
        w = imp.const(node.input[1])
        if w is None:
            raise imp.fail("the weight must be a constant initializer")
    xs = nn.shape_of(x.ssa)
    if len(xs) not in (3, 4) or w.ndim != len(xs):
        raise imp.fail(
            f"expected a 1D or 2D convolution, got input rank {len(xs)}, weight rank {w.ndim}"
        )
    kernel = list(a.get("kernel_shape", w.shape[2:]))
    props = _spatial_props(imp, node, xs[1:-1], kernel)
    g = int(a.get("group", 1))
    if g != 1:
        props["group"] = nn.int_prop(g)
    perm = (0, *range(2, w.ndim), 1)
    if transpose:
        cout = w.shape[1] * g
        if "output_shape" in a:
            raise imp.fail("ConvTranspose's output_shape attribute is not supported; give pads")
        if any(a.get("output_padding", [])):
            props["output_padding"] = nn.ints_prop(a["output_padding"])
    else:
        cout = w.shape[0]
    bias_name = node.input[2] if len(node.input) > 2 else ""
    cls = nn.ConvTransposeOp if transpose else nn.ConvOp
    if quantized:
        assert wdq is not None and q is not None
        ws = _weight_scales(imp, wdq, cout, 1 if transpose else 0)
        if bias_name:
            bdq = imp.dq_node(bias_name)
            bias = imp.const(bdq.input[0]) if bdq is not None else None
            if bias is None or bias.dtype != np.int32:
                raise imp.fail("a quantized convolution needs an int32 bias from DequantizeLinear")
        else:
            bias = np.zeros((cout,), np.int32)
        operands = [
            x.ssa,
            imp.weight(np.transpose(w, perm).astype(np.int8), "weight"),
            imp.weight(bias.astype(np.int32), "bias"),
            imp.weight(ws, "weight_scale"),
        ]
        attr, dt = imp.result_quant(q)
        op = imp.emit(cls, operands, props, dtype=dt, quant=attr)
        imp.finish(node, op, "cl", q)
        return
    bias = imp.const(bias_name) if bias_name else np.zeros((cout,), np.float32)
    if bias is None:
        raise imp.fail("the bias must be a constant initializer")
    if w.dtype != np.float32:
        raise imp.fail(
            f"unsupported weight type {w.dtype} outside a QDQ pattern; supported: float32"
        )
    operands = [
        x.ssa,
        imp.weight(np.transpose(w, perm), "weight"),
        imp.weight(bias.astype(np.float32), "bias"),
    ]
    op = imp.emit(cls, operands, props)
    imp.finish(node, op, "cl")


@_handles("MaxPool", "AveragePool")
def _pool(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    if len(node.output) > 1 and node.output[1]:
        raise imp.fail("MaxPool's Indices output is not supported")
    q = imp.fused_output(node)
    qin = imp.quantized_inputs(node, [node.input[0]]) if q is not None else None
    x = imp.to_cl(qin[0] if qin is not None else imp.value(node.input[0]))
    xs = nn.shape_of(x.ssa)
    if len(xs) not in (3, 4):
        raise imp.fail(f"pooling needs a rank-3 or rank-4 input, got rank {len(xs)}")
    props = _spatial_props(imp, node, xs[1:-1], list(a["kernel_shape"]))
    if (
        node.op_type == "AveragePool"
        and list(a["kernel_shape"]) == list(xs[1:-1])
        and "pads" not in props
    ):
        # a window over the whole map is a global average: it tiles as
        # accumulated bands instead of needing every row at once
        attr, dt = imp.result_quant(q if qin is not None else None)
        op = imp.emit(nn.GlobalAveragePoolOp, [x.ssa], dtype=dt, quant=attr)
        imp.finish(node, op, "cl", q if qin is not None else None)
        return
    if a.get("ceil_mode", 0):
        props["ceil_mode"] = nn.int_prop(1)
    if node.op_type == "MaxPool":
        cls: type[nn.NNOp] = nn.MaxPoolOp
        if a.get("storage_order", 0):
            raise imp.fail("MaxPool storage_order=1 is not supported")
    else:
        cls = nn.AveragePoolOp
        props.pop("dilations", None)
        if a.get("count_include_pad", 0):
            props["count_include_pad"] = nn.int_prop(1)
    attr, dt = imp.result_quant(q if qin is not None else None)
    op = imp.emit(cls, [x.ssa], props, dtype=dt, quant=attr)
    imp.finish(node, op, "cl", q if qin is not None else None)


@_handles("GlobalAveragePool")
def _gap(imp: _Importer, node: onnx.NodeProto) -> None:
    q = imp.fused_output(node)
    qin = imp.quantized_inputs(node, [node.input[0]]) if q is not None else None
    x = imp.to_cl(qin[0] if qin is not None else imp.value(node.input[0]))
    attr, dt = imp.result_quant(q if qin is not None else None)
    op = imp.emit(nn.GlobalAveragePoolOp, [x.ssa], dtype=dt, quant=attr)
    imp.finish(node, op, "cl", q if qin is not None else None)


def bn_refusal(imp: _Importer, node: onnx.NodeProto) -> str | None:
    """Why a BatchNormalization cannot import as inference-mode normalisation
    (its training outputs are read, or opset 7-8's spatial=0), else None."""
    a = imp.attrs(node)
    if any(node.output[1:]):
        return (
            "BatchNormalization's training-mode outputs (running mean and variance) "
            "are not supported; only the normalised output"
        )
    if int(a.get("training_mode", 0)):
        return "BatchNormalization in training mode is not supported"
    if imp.opset < 9 and int(a.get("spatial", 1)) == 0:
        return "BatchNormalization with spatial=0 (per-element statistics) is not supported"
    return None


@_handles("BatchNormalization")
def _bn(imp: _Importer, node: onnx.NodeProto) -> None:
    why = bn_refusal(imp, node)
    if why is not None:
        raise imp.fail(why)
    rank = len(nn.shape_of(imp.value(node.input[0]).ssa))
    if rank > 4:
        raise imp.fail(
            f"BatchNormalization of a rank-{rank} input (3D spatial) is not supported; "
            "supported: rank 2 to 4 (N, C and up to two spatial axes)"
        )
    x = imp.to_cl(imp.value(node.input[0]))
    params = [imp.require_const(node, n, "a BatchNormalization parameter") for n in node.input[1:5]]
    eps = float(imp.attrs(node).get("epsilon", 1e-5))
    ops = [
        imp.weight(p.astype(np.float32), r)
        for p, r in zip(params, ("scale", "bias", "mean", "var"))
    ]
    op = imp.emit(nn.BatchNormOp, [x.ssa, *ops], {"epsilon": nn.float_prop(eps)})
    imp.finish(node, op, "cl")


@_handles("Gemm")
def _gemm(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    ta, tb = int(a.get("transA", 0)), int(a.get("transB", 0))
    q = imp.fused_output(node)
    bdq = imp.dq_node(node.input[1])
    qin = imp.quantized_inputs(node, [node.input[0]]) if q is not None else None
    c_name = node.input[2] if len(node.input) > 2 else ""
    if (
        q is not None
        and qin is not None
        and bdq is not None
        and imp.const(bdq.input[0]) is not None
        and not ta
        and alpha == 1.0
        and beta == 1.0
    ):
        bq = imp.const(bdq.input[0])
        assert bq is not None
        n = bq.shape[0] if tb else bq.shape[1]
        ws = _weight_scales(imp, bdq, n, 0 if tb else 1)
        bmat = bq.T if tb else bq
        if c_name:
            cdq = imp.dq_node(c_name)
            c = imp.const(cdq.input[0]) if cdq is not None else None
            if c is None or c.dtype != np.int32:
                raise imp.fail("a quantized Gemm needs an int32 C from DequantizeLinear")
        else:
            c = np.zeros((n,), np.int32)
        am = imp.to_plain(qin[0])
        operands = [
            am.ssa,
            imp.weight(np.ascontiguousarray(bmat).astype(np.int8), "weight"),
            imp.weight(c.astype(np.int32), "bias"),
            imp.weight(ws, "weight_scale"),
        ]
        attr, dt = imp.result_quant(q)
        op = imp.emit(nn.GemmOp, operands, dtype=dt, quant=attr)
        imp.finish(node, op, "plain", q)
        return
    am = imp.to_plain(imp.value(node.input[0]))
    props: dict[str, Attribute] = {}
    bc = imp.const(node.input[1])
    if bc is not None and bc.dtype == np.float32:
        bmat = (bc.T if tb else bc) * np.float32(alpha)
        bv = imp.weight(np.ascontiguousarray(bmat, np.float32), "weight")
        n = bmat.shape[1]
        cc = imp.const(c_name) if c_name else np.zeros((n,), np.float32)
        if cc is None:
            cv = imp.to_plain(imp.value(c_name)).ssa
            if beta != 1.0:
                props["beta"] = nn.float_prop(beta)
        else:
            cv = imp.weight((cc * np.float32(beta)).astype(np.float32), "bias")
        if ta:
            props["trans_a"] = nn.int_prop(1)
    else:
        bv = imp.to_plain(imp.value(node.input[1])).ssa
        if c_name:
            cv = imp.to_plain(imp.value(c_name)).ssa
        else:
            sb = nn.shape_of(bv)
            cv = imp.weight(np.zeros((sb[0] if tb else sb[1],), np.float32), "bias")
        for key, val, dflt in (("alpha", alpha, 1.0), ("beta", beta, 1.0)):
            if val != dflt:
                props[key] = nn.float_prop(val)
        if ta:
            props["trans_a"] = nn.int_prop(1)
        if tb:
            props["trans_b"] = nn.int_prop(1)
    op = imp.emit(nn.GemmOp, [am.ssa, bv, cv], props)
    imp.finish(node, op, "plain")


@_handles("MatMul")
def _matmul(imp: _Importer, node: onnx.NodeProto) -> None:
    q = imp.fused_output(node)
    if q is not None:
        qa = imp.quantized(node.input[0])
        qb = imp.quantized(node.input[1])
        bdq = imp.dq_node(node.input[1])
        if qa is not None and qb is not None:
            attr, dt = imp.result_quant(q)
            op = imp.emit(
                nn.MatMulOp,
                [imp.to_plain(qa).ssa, imp.to_plain(qb).ssa],
                dtype=dt,
                quant=attr,
            )
            imp.finish(node, op, "plain", q)
            return
        if qa is not None and bdq is not None and imp.const(bdq.input[0]) is not None:
            bq = imp.const(bdq.input[0])
            assert bq is not None
            if bq.ndim == 2:
                ws = _weight_scales(imp, bdq, bq.shape[1], 1)
                attr, dt = imp.result_quant(q)
                op = imp.emit(
                    nn.MatMulOp,
                    [
                        imp.to_plain(qa).ssa,
                        imp.weight(bq.astype(np.int8), "weight"),
                        imp.weight(ws, "weight_scale"),
                    ],
                    dtype=dt,
                    quant=attr,
                )
                imp.finish(node, op, "plain", q)
                return
    a = imp.to_plain(imp.value(node.input[0]))
    b = imp.to_plain(imp.value(node.input[1]))
    op = imp.emit(nn.MatMulOp, [a.ssa, b.ssa])
    imp.finish(node, op, "plain")


def _exact_or_real(
    imp: _Importer, node: onnx.NodeProto, inputs: Sequence[str]
) -> tuple[list[_Val], onnx.NodeProto | None]:
    """Quantized inputs and the fused Q, or float inputs and None."""
    q = imp.fused_output(node)
    if q is not None:
        qin = imp.quantized_inputs(node, inputs)
        if qin is not None:
            return qin, q
    return [imp.value(n) for n in inputs], None


@_handles("Concat")
def _concat(imp: _Importer, node: onnx.NodeProto) -> None:
    vals, q = _exact_or_real(imp, node, list(node.input))
    axis = int(imp.attrs(node)["axis"])
    rank = len(nn.shape_of(vals[0].ssa))
    if all(v.layout == "cl" for v in vals) or (
        any(v.layout == "cl" for v in vals) and rank in (3, 4)
    ):
        vals = [imp.to_cl(v) for v in vals]
        axis, layout = _cl_axis(axis, rank), "cl"
    else:
        vals = [imp.to_plain(v) for v in vals]
        layout = "plain"
    attr, dt = imp.result_quant(q)
    op = imp.emit(
        nn.ConcatOp,
        [v.ssa for v in vals],
        {"axis": nn.int_prop(axis % rank)},
        dtype=dt,
        quant=attr,
    )
    imp.finish(node, op, layout, q)


@_handles("Split")
def _split(imp: _Importer, node: onnx.NodeProto) -> None:
    x = imp.value(node.input[0])
    a = imp.attrs(node)
    shape_plain = _plain_shape(x)
    rank = len(shape_plain)
    axis = int(a.get("axis", 0)) % rank
    if len(node.input) > 1 and node.input[1]:
        sizes = [int(s) for s in imp.require_const(node, node.input[1], "Split's sizes")]
    elif "split" in a:
        sizes = [int(s) for s in a["split"]]
    else:
        k = len(node.output)
        if shape_plain[axis] % k:
            raise imp.fail(f"cannot split {shape_plain[axis]} into {k} equal parts")
        sizes = [shape_plain[axis] // k] * k
    ax = _cl_axis(axis, rank) if x.layout == "cl" else axis
    dt, qa = nn.dtype_of(x.ssa), nn.quant_of(x.ssa)
    op = imp.emit(
        nn.SplitOp,
        [x.ssa],
        {"axis": nn.int_prop(ax), "sizes": nn.ints_prop(sizes)},
        dtype=dt,
        quant=qa,
        n_results=len(sizes),
    )
    for name, r in zip(node.output, op.results):
        imp.env[name] = _Val(r, x.layout)


def _plain_shape(v: _Val) -> tuple[int, ...]:
    s = nn.shape_of(v.ssa)
    return tuple(s[i] for i in _to_plain_perm(len(s))) if v.layout == "cl" else s


def _reshape_to(
    imp: _Importer,
    node: onnx.NodeProto,
    cls: type[nn.NNOp],
    out_shape: Sequence[int],
    props: dict[str, Attribute] | None = None,
) -> None:
    vals, q = _exact_or_real(imp, node, [node.input[0]])
    x = imp.to_plain(vals[0])
    if q is not None and imp.quant_attr(q)[0] != nn.quant_of(x.ssa):
        vals, q = [imp.value(node.input[0])], None
        x = imp.to_plain(vals[0])
    op = imp.emit(
        cls,
        [x.ssa],
        props,
        dtype=nn.dtype_of(x.ssa),
        quant=nn.quant_of(x.ssa),
        result_shapes=[tuple(out_shape)],
    )
    imp.finish(node, op, "plain", q)


@_handles("Reshape")
def _reshape(imp: _Importer, node: onnx.NodeProto) -> None:
    x = (
        imp.value(node.input[0])
        if imp.quantized(node.input[0]) is None
        else imp.quantized(node.input[0])
    )
    assert x is not None
    src = _plain_shape(x)
    target = [int(d) for d in imp.require_const(node, node.input[1], "Reshape's shape")]
    allowzero = int(imp.attrs(node).get("allowzero", 0))
    out = [src[i] if d == 0 and not allowzero else d for i, d in enumerate(target)]
    if out.count(-1) > 1:
        raise imp.fail("Reshape's shape has more than one -1")
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        out[out.index(-1)] = math.prod(src) // max(known, 1)
    if math.prod(out) != math.prod(src):
        raise imp.fail(f"cannot reshape {'x'.join(map(str, src))} into {'x'.join(map(str, out))}")
    _reshape_to(imp, node, nn.ReshapeOp, out)


@_handles("Flatten")
def _flatten(imp: _Importer, node: onnx.NodeProto) -> None:
    x = imp.quantized(node.input[0]) or imp.value(node.input[0])
    src = _plain_shape(x)
    axis = int(imp.attrs(node).get("axis", 1)) % (len(src) + 1)
    out = (math.prod(src[:axis]), math.prod(src[axis:]))
    _reshape_to(imp, node, nn.FlattenOp, out, {"axis": nn.int_prop(axis)})


@_handles("Squeeze", "Unsqueeze")
def _squeeze(imp: _Importer, node: onnx.NodeProto) -> None:
    x = imp.quantized(node.input[0]) or imp.value(node.input[0])
    src = list(_plain_shape(x))
    a = imp.attrs(node)
    if len(node.input) > 1 and node.input[1]:
        axes = [int(v) for v in imp.require_const(node, node.input[1], "the axes")]
    else:
        axes = [int(v) for v in a.get("axes", [])]
    if node.op_type == "Squeeze":
        axes = [ax % len(src) for ax in axes] or [i for i, d in enumerate(src) if d == 1]
        if any(src[ax] != 1 for ax in axes):
            raise imp.fail(f"cannot squeeze axes {axes} of shape {'x'.join(map(str, src))}")
        out = [d for i, d in enumerate(src) if i not in axes]
        cls: type[nn.NNOp] = nn.SqueezeOp
    else:
        r = len(src) + len(axes)
        axes = sorted(ax % r for ax in axes)
        out = list(src)
        for ax in axes:
            out.insert(ax, 1)
        cls = nn.UnsqueezeOp
    _reshape_to(imp, node, cls, out, {"axes": nn.ints_prop(axes)})


@_handles("Transpose")
def _transpose(imp: _Importer, node: onnx.NodeProto) -> None:
    vals, q = _exact_or_real(imp, node, [node.input[0]])
    x = vals[0]
    rank = len(nn.shape_of(x.ssa))
    perm = [int(p) for p in imp.attrs(node).get("perm", list(range(rank))[::-1])]
    layout = "plain"
    if x.layout == "cl":  # compose with the layout change instead of undoing it
        to_plain = _to_plain_perm(rank)
        perm = [to_plain[p] for p in perm]
    elif rank in (3, 4) and perm == list(_to_plain_perm(rank)):
        # channels last to channels first (NHWC -> NCHW): the result's
        # channels-last form is the input as it is
        perm, layout = list(range(rank)), "cl"
    if perm == list(range(rank)):  # no data moves: the result is the input
        imp.finish_as(node, x.ssa, layout, q)
        return
    attr, dt = (nn.quant_of(x.ssa), nn.dtype_of(x.ssa))
    op = imp.emit(nn.TransposeOp, [x.ssa], {"perm": nn.ints_prop(perm)}, dtype=dt, quant=attr)
    imp.finish(node, op, "plain", q)


def _pads_of_axes(imp: _Importer, node: onnx.NodeProto, pads: list[int], rank: int) -> list[int]:
    """Pad's `axes` (opset 18): the pads, begins then ends, of the listed
    axes, as pads for every axis (0 elsewhere)."""
    axes = [int(v) for v in imp.require_const(node, node.input[3], "Pad's axes").reshape(-1)]
    if any(not -rank <= ax < rank for ax in axes):
        raise imp.fail(f"Pad's axes {axes} are outside the rank-{rank} input")
    norm = [ax % rank for ax in axes]
    if len(set(norm)) != len(norm):
        raise imp.fail(f"Pad's axes {axes} name an axis twice")
    if len(pads) != 2 * len(axes):
        raise imp.fail(f"Pad needs {2 * len(axes)} pads for the axes {axes}, got {len(pads)}")
    full = [0] * (2 * rank)
    for i, ax in enumerate(norm):
        full[ax], full[rank + ax] = pads[i], pads[len(axes) + i]
    return full


@_handles("Pad")
def _pad(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    mode = a.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode == "wrap" and imp.opset < 19:
        raise imp.fail(f"Pad's mode 'wrap' exists from opset 19; this model is opset {imp.opset}")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise imp.fail(f"Pad's mode must be constant, reflect, edge or wrap, got {mode!r}")
    vals, q = _exact_or_real(imp, node, [node.input[0]])
    x = vals[0]
    value = 0.0
    if imp.opset < 11:  # pads and value are attributes before opset 11
        pads = [int(p) for p in a.get("pads", [])]
        value = float(a.get("value", 0.0))
    elif len(node.input) > 1 and node.input[1]:
        pads = [int(p) for p in imp.require_const(node, node.input[1], "Pad's pads")]
    else:
        raise imp.fail(f"Pad at opset {imp.opset} needs its pads input")
    if imp.opset >= 11 and len(node.input) > 2 and node.input[2]:
        value = float(imp.require_const(node, node.input[2], "Pad's value").reshape(()))
    rank = len(nn.shape_of(x.ssa))
    if len(node.input) > 3 and node.input[3]:  # opset 18: pads of the listed axes only
        pads = _pads_of_axes(imp, node, pads, rank)
    if len(pads) != 2 * rank:
        raise imp.fail(f"Pad needs {2 * rank} pads for a rank-{rank} input, got {len(pads)}")
    if any(p < 0 for p in pads):
        raise imp.fail("negative pads (cropping) are not supported")
    if x.layout == "cl":
        perm = _to_cl_perm(rank)
        pads = [pads[p] for p in perm] + [pads[rank + p] for p in perm]
    props: dict[str, Attribute] = {"pads": nn.ints_prop(pads), "mode": StringAttr(mode)}
    if value:
        props["value"] = nn.float_prop(value)
    attr, dt = imp.result_quant(q)
    if q is None:
        attr, dt = nn.quant_of(x.ssa), nn.dtype_of(x.ssa)
    op = imp.emit(nn.PadOp, [x.ssa], props, dtype=dt, quant=attr)
    imp.finish(node, op, x.layout, q)


@_handles("Resize", "Upsample")
def _resize(imp: _Importer, node: onnx.NodeProto) -> None:
    """Resize from opset 11 (X, roi, scales, sizes); Resize-10 and Upsample
    (X, scales; Upsample-7/8 scales as an attribute) scale asymmetrically,
    nearest rounding down, which is how they import."""
    a = imp.attrs(node)
    mode = a.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode == "bilinear" and node.op_type == "Upsample":
        mode = "linear"
    if mode not in ("nearest", "linear"):
        raise imp.fail(f"{node.op_type} mode '{mode}' is not supported; supported: nearest, linear")
    old_form = node.op_type == "Upsample" or imp.opset < 11
    ctm = a.get("coordinate_transformation_mode", b"asymmetric" if old_form else b"half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else str(ctm)
    nm = a.get("nearest_mode", b"floor" if old_form else b"round_prefer_floor")
    nm = nm.decode() if isinstance(nm, bytes) else str(nm)
    vals, q = _exact_or_real(imp, node, [node.input[0]])
    x = imp.to_cl(vals[0])
    src = _plain_shape(x)
    sizes = None
    if old_form and "scales" in a:
        scales = np.asarray(a["scales"], np.float32)
    elif old_form:
        name = node.input[1] if len(node.input) > 1 else ""
        scales = imp.require_const(node, name, f"{node.op_type}'s scales") if name else None
    else:
        scales = imp.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        sizes = imp.const(node.input[3]) if len(node.input) > 3 and node.input[3] else None
    if sizes is not None and sizes.size:
        out = [int(s) for s in sizes]
    elif scales is not None and scales.size:
        out = [int(math.floor(d * float(s))) for d, s in zip(src, scales)]
    else:
        raise imp.fail("Resize needs constant scales or sizes")
    if len(out) != len(src) or out[0] != src[0] or out[1] != src[1]:
        raise imp.fail("Resize may only change the spatial axes (N and C must keep their size)")
    out_cl = [out[i] for i in _to_cl_perm(len(out))]
    props: dict[str, Attribute] = {
        "mode": StringAttr(mode),
        "coordinate_transformation_mode": StringAttr(ctm),
    }
    if mode == "nearest":
        props["nearest_mode"] = StringAttr(nm)
    attr, dt = imp.result_quant(q)
    op = imp.emit(nn.ResizeOp, [x.ssa], props, dtype=dt, quant=attr, result_shapes=[out_cl])
    imp.finish(node, op, "cl", q)


@_handles("Softmax", "LogSoftmax")
def _softmax(imp: _Importer, node: onnx.NodeProto) -> None:
    """Opset 13 on: along one axis (default -1). Before 13: the input is read
    as a matrix of prod(shape[:axis]) rows (default axis 1) and each row is
    normalised as a whole, which is one axis only when the dimensions after
    `axis` are all 1; otherwise it imports as reshape, softmax, reshape."""
    vals, q = _exact_or_real(imp, node, [node.input[0]])
    x = vals[0]
    rank = len(nn.shape_of(x.ssa))
    legacy = imp.opset < 13
    axis = int(imp.attrs(node).get("axis", 1 if legacy else -1))
    if not -rank <= axis < rank:
        raise imp.fail(f"axis {axis} is out of range for a rank-{rank} input")
    axis %= rank
    cls = nn.SoftmaxOp if node.op_type == "Softmax" else nn.LogSoftmaxOp
    attr, dt = imp.result_quant(q)
    shape = _plain_shape(x)
    if legacy and math.prod(shape[axis + 1 :]) != 1:
        xp = imp.to_plain(x)
        rows = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        qx, dx = nn.quant_of(xp.ssa), nn.dtype_of(xp.ssa)
        flat = imp.emit(nn.ReshapeOp, [xp.ssa], dtype=dx, quant=qx, result_shapes=[rows])
        sm = imp.emit(cls, [flat.results[0]], {"axis": nn.int_prop(1)}, dtype=dt, quant=attr)
        op = imp.emit(nn.ReshapeOp, [sm.results[0]], dtype=dt, quant=attr, result_shapes=[shape])
        imp.finish(node, op, "plain", q)
        return
    if x.layout == "cl":
        axis = _cl_axis(axis, rank)
    op = imp.emit(cls, [x.ssa], {"axis": nn.int_prop(axis)}, dtype=dt, quant=attr)
    imp.finish(node, op, x.layout, q)


_REDUCE: dict[str, type[nn.NNOp]] = {
    "ReduceMean": nn.ReduceMeanOp,
    "ReduceMax": nn.ReduceMaxOp,
    "ReduceSum": nn.ReduceSumOp,
}


_REAL_ONLY = frozenset({"ReduceL2", "ReduceProd"})
"""Reductions whose int8 form would hang on float64 sums and products in
numpy's order (the C does not lower them): inside a QDQ group they run on
the dequantized values, as LRN and the normalisations do."""


@_handles(*_REDUCE)
def _reduce(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    if node.op_type in _REAL_ONLY:  # the QDQ around it stays: a float op
        vals, q = [imp.value(node.input[0])], None
    else:
        vals, q = _exact_or_real(imp, node, [node.input[0]])
    x = vals[0]
    rank = len(nn.shape_of(x.ssa))
    if len(node.input) > 1 and node.input[1]:
        axes = [int(v) for v in imp.require_const(node, node.input[1], "the axes")]
    else:
        axes = [int(v) for v in a.get("axes", [])]
    keep = int(a.get("keepdims", 1))
    if not axes and int(a.get("noop_with_empty_axes", 0)):
        if q is not None or node.op_type == "ReduceL2":  # not the identity
            raise imp.fail(
                "noop_with_empty_axes is supported where it keeps the input as it is (not "
                "inside a QDQ group, not ReduceL2's sqrt(x * x))"
            )
        imp.env[node.output[0]] = x  # no axes: the input unchanged
        return
    axes = [ax % rank for ax in axes] or list(range(rank))
    held = sorted(_cl_axis(ax, rank) for ax in axes) if x.layout == "cl" else sorted(axes)
    if node.op_type == "ReduceMean" and rank in (3, 4) and held == list(range(1, rank - 1)):
        # a mean over every spatial position of the tensor as held, channels
        # last (PyTorch's x.mean((2, 3)) of an NCHW map, TensorFlow's
        # reduce_mean(x, [1, 2]) of an NHWC one) is the global average pool,
        # which runs by bands of rows
        attr, dt = imp.result_quant(q)
        op = imp.emit(nn.GlobalAveragePoolOp, [x.ssa], dtype=dt, quant=attr)
        if not keep:
            n, c = nn.shape_of(x.ssa)[0], nn.shape_of(x.ssa)[-1]
            op = imp.emit(
                nn.ReshapeOp, [op.results[0]], dtype=dt, quant=attr, result_shapes=[(n, c)]
            )
        imp.finish(node, op, x.layout if keep else "plain", q)
        return
    # the kept axes in channels-last order; without keepdims the result is
    # in the model's order where they come in it (N, H, W of a mean over C)
    kept = [p for p in _to_cl_perm(rank) if p not in axes] if x.layout == "cl" else []
    if x.layout == "cl" and (keep or (kept and kept == sorted(kept))):
        axes = [_cl_axis(ax, rank) for ax in axes]
        layout = "cl" if keep else "plain"
    else:
        x = imp.to_plain(x)
        layout = "plain"
    attr, dt = imp.result_quant(q)
    op = imp.emit(
        _REDUCE[node.op_type],
        [x.ssa],
        {"axes": nn.ints_prop(sorted(axes)), "keepdims": nn.int_prop(keep)},
        dtype=dt,
        quant=attr,
    )
    imp.finish(node, op, layout, q)


@_handles("QuantizeLinear")
def _quantize(imp: _Importer, node: onnx.NodeProto) -> None:
    if imp.quant_params(node)[0].size != 1:
        x = imp.value(node.input[0])
        imp.env[node.output[0]] = imp.linear_quant(node, x, nn.QuantizeLinearOp, np.int8)
        return
    attr, dt = imp.quant_attr(node)
    x = imp.value(node.input[0])
    op = imp.emit(nn.QuantizeOp, [x.ssa], dtype=dt, quant=attr, result_shapes=[nn.shape_of(x.ssa)])
    imp.finish(node, op, x.layout)


_COMPARE: dict[str, type[nn.NNOp]] = {
    "Less": nn.LessOp,
    "LessOrEqual": nn.LessEqualOp,
    "Greater": nn.GreaterOp,
    "GreaterOrEqual": nn.GreaterEqualOp,
    "Equal": nn.EqualOp,
}


@_handles(*_COMPARE)
def _compare(imp: _Importer, node: onnx.NodeProto) -> None:
    """A comparison giving an i1 flag (quantized operands compare as real values)."""
    vals = [imp.value(n) for n in node.input]
    target = "cl" if any(v.layout == "cl" for v in vals) else "plain"
    rank = max(len(nn.shape_of(v.ssa)) for v in vals)
    operands = [_match_layout(imp, v, n, target, rank) for v, n in zip(vals, node.input)]
    op = imp.emit(_COMPARE[node.op_type], operands, dtype=np.bool_)
    imp.finish(node, op, target)


def _boundary_layout(v: _Val) -> Layout:
    """How a value crosses into or out of a body: channels-last when it is a
    rank-3 or rank-4 feature map, as model inputs do; plain otherwise."""
    return "cl" if len(nn.shape_of(v.ssa)) in (3, 4) else "plain"


def _condition(imp: _Importer, node: onnx.NodeProto, name: str) -> SSAValue:
    v = imp.value(name)
    if not nn.is_flag(v.ssa):
        raise imp.fail(
            f"the condition '{name}' must be a single-element bool tensor, got {v.ssa.type}"
        )
    return v.ssa


def _graph_attr(imp: _Importer, node: onnx.NodeProto, attr: str) -> onnx.GraphProto:
    for a in node.attribute:
        if a.name == attr and a.type == onnx.AttributeProto.GRAPH:
            return a.g
    raise imp.fail(f"{node.op_type} needs the graph attribute '{attr}'")


@_handles("If")
def _if(imp: _Importer, node: onnx.NodeProto) -> None:
    """nn.if; both branches must give each output one static type."""
    cond = _condition(imp, node, node.input[0])
    branches: list[tuple[str, _Importer, Block, list[_Val]]] = []
    for attr in ("then_branch", "else_branch"):
        g = _graph_attr(imp, node, attr)
        if len(g.output) != len(node.output):
            raise imp.fail(
                f"{attr} has {len(g.output)} output(s) but the node has {len(node.output)}"
            )
        child, block = imp.body(node, attr, g, [])
        outs = [child.value(o.name) for o in g.output]
        branches.append((attr, child, block, outs))
    layouts = [
        "cl" if "cl" in (_boundary_layout(t), _boundary_layout(e)) else "plain"
        for t, e in zip(branches[0][3], branches[1][3])
    ]
    yielded: list[list[SSAValue]] = []
    for _, child, _, outs in branches:
        vals = [child.to_layout(v, lay).ssa for v, lay in zip(outs, layouts)]
        yielded.append(vals)
    for i, (t, e) in enumerate(zip(*yielded)):
        if t.type != e.type:
            raise imp.fail(
                f"output {i} ('{node.output[i]}') is {t.type} in then_branch but "
                f"{e.type} in else_branch; both branches must give one static type"
            )
    regions: list[Region] = []
    for (_, child, block, _), vals in zip(branches, yielded):
        child.b.insert(nn.YieldOp(*vals))
        regions.append(Region(block))
    op = nn.IfOp(cond, [v.type for v in yielded[0]], regions[0], regions[1])
    _insert_verified(imp, op)
    for name, r, lay in zip(node.output, op.results, layouts):
        imp.env[name] = _Val(r, lay)


_UNBOUNDED_TRIPS = 2**31
"""Exporters write INT64_MAX as the trip count of a while loop: from this
many trips on, the count is read as no limit (the condition ends the loop)."""


@_handles("Loop")
def _loop(imp: _Importer, node: onnx.NodeProto) -> None:
    """nn.loop over loop-carried values; scan outputs are refused."""
    inputs = list(node.input) + [""] * max(0, 2 - len(node.input))
    m_name, c_name, carried = inputs[0], inputs[1], inputs[2:]
    g = _graph_attr(imp, node, "body")
    if len(node.output) > len(carried):
        raise imp.fail(
            f"Loop's scan outputs are not supported: the node has {len(node.output)} "
            f"outputs for {len(carried)} loop-carried value(s); only loop-carried values "
            "are supported"
        )
    if len(g.input) != 2 + len(carried) or len(g.output) != 1 + len(carried):
        raise imp.fail(
            f"the body must take 2 + {len(carried)} inputs and give 1 + {len(carried)} "
            f"outputs, got {len(g.input)} and {len(g.output)}"
        )
    trips: int | None = None
    if m_name:
        m = imp.require_const(node, m_name, "Loop's trip count M")
        trips = int(np.asarray(m).reshape(()))
        if trips < 0:
            raise imp.fail(f"Loop's trip count M must be >= 0, got {trips}")
        if trips >= _UNBOUNDED_TRIPS:
            trips = None
    inits = [imp.value(n) for n in carried]
    cond: SSAValue | None = None
    if c_name:
        c = imp.const(c_name)
        if c is None:
            cond = _condition(imp, node, c_name)
        elif c.size != 1:
            raise imp.fail(f"the condition '{c_name}' must hold one element")
        elif not bool(np.asarray(c).reshape(())) or trips == 0:
            for name, v in zip(node.output, inits):  # the body never runs
                imp.env[name] = v
            return
    layouts = [_boundary_layout(v) for v in inits]
    inits = [imp.to_layout(v, lay) for v, lay in zip(inits, layouts)]
    args: list[tuple[str, Attribute, Layout]] = [
        (g.input[0].name, nn.index_type(), "plain"),
        (g.input[1].name, nn.flag_type(), "plain"),
        *((i.name, v.ssa.type, lay) for i, v, lay in zip(g.input[2:], inits, layouts)),
    ]
    child, block = imp.body(node, "body", g, args)
    go = child.value(g.output[0].name)
    if not nn.is_flag(go.ssa):
        raise imp.fail(
            f"the body's condition output '{g.output[0].name}' must be a single-element "
            f"bool tensor, got {go.ssa.type}"
        )
    outs = [child.to_layout(child.value(o.name), lay) for o, lay in zip(g.output[1:], layouts)]
    for i, (v, init) in enumerate(zip(outs, inits)):
        if v.ssa.type != init.ssa.type:
            raise imp.fail(
                f"loop-carried value {i} ('{carried[i]}') enters the body as "
                f"{init.ssa.type} but leaves it as {v.ssa.type}; a carried value keeps "
                "one static type"
            )
    child.b.insert(nn.YieldOp(go.ssa, *(v.ssa for v in outs)))
    op = nn.LoopOp(cond, [v.ssa for v in inits], Region(block), trips)
    _insert_verified(imp, op)
    for name, r, lay in zip(node.output, op.results, layouts):
        imp.env[name] = _Val(r, lay)


def _insert_verified(imp: _Importer, op: Operation) -> None:
    try:
        op.verify()
    except VerifyException as e:
        raise imp.fail(str(e)) from None
    imp.locate(op)
    imp.b.insert(op)


# ======================================================================== entry


def elem_type_name(elem: int) -> str:
    """ONNX's name of an element type, or its number when ONNX defines none."""
    try:
        return onnx.TensorProto.DataType.Name(elem)  # pyright: ignore[reportArgumentType]
    except ValueError:
        return f"{elem} (not an ONNX element type)"


def load_model(data: bytes, origin: str, base_dir: str | Path | None = None) -> onnx.ModelProto:
    """Parse and check an ONNX model, turning every failure into a diagnostic.

    Tensors stored as external data are read from files relative to
    `base_dir`, the model's own folder (never the current directory)."""
    if not data:
        raise ImportDiagnostic(origin, "the file is empty; expected an ONNX model")
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf raises DecodeError and friends
        raise ImportDiagnostic(
            origin,
            f"not a valid ONNX model (protobuf parse failed: {type(e).__name__})",
        ) from None
    if not model.graph.node and not model.graph.input:
        raise ImportDiagnostic(origin, "not a valid ONNX model (no graph)")
    external = any(t.data_location == onnx.TensorProto.EXTERNAL for t in model.graph.initializer)
    _load_external_data(model, origin, base_dir)
    try:  # the checker reads the weights as loaded, not the file's references
        validate.check_model(model.SerializeToString() if external else data, model, origin)
    except diagnostic.ModelInvalid as e:
        raise ImportDiagnostic(e.where, e.message) from None
    return model


OLDEST_OPSET = 6
"""Opset 6 differs from 7 in legacy broadcasting (`broadcast`, `axis`), which
the binary operators read."""


def _check_opset(model: onnx.ModelProto, origin: str) -> None:
    """Opsets 7 to the newest the installed onnx knows are read, each with its
    own semantics; anything else is refused, never reinterpreted."""
    newest = onnx.defs.onnx_opset_version()
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx") and not OLDEST_OPSET <= o.version <= newest:
            raise ImportDiagnostic(
                origin,
                f"opset {o.version} of the default ONNX domain is not supported; "
                f"supported: {OLDEST_OPSET} to {newest}",
            )


def _load_external_data(model: onnx.ModelProto, origin: str, base_dir: str | Path | None) -> None:
    from onnx.external_data_helper import (
        ExternalDataInfo,
        load_external_data_for_model,
        uses_external_data,
    )

    external = [t for t in model.graph.initializer if uses_external_data(t)]
    if not external:
        return
    if base_dir is None:
        raise ImportDiagnostic(
            origin,
            f"initializer '{external[0].name}' is stored as external data, which is read "
            "relative to the model file; import the model from its file",
        )
    base = Path(base_dir)
    for t in external:
        info = ExternalDataInfo(t)
        f = base / info.location
        if not f.is_file():
            raise ImportDiagnostic(
                origin,
                f"initializer '{t.name}' is stored in external file '{info.location}', "
                f"which does not exist beside the model (looked for {f})",
            )
    try:
        load_external_data_for_model(model, str(base))
    except Exception as e:
        raise ImportDiagnostic(
            origin, f"cannot read the external data beside the model: {e}"
        ) from None


def import_model(
    model: onnx.ModelProto,
    *,
    origin: str = "<model>",
    input_shapes: dict[str, tuple[int, ...]] | None = None,
    weights_ref: str | None = None,
) -> Imported:
    """Import an ONNX model; `weights_ref` is recorded as the module's weight source."""
    shapes = dict(input_shapes or {})
    known = [i.name for i in model.graph.input]
    unknown = sorted(set(shapes) - set(known))
    if unknown:
        raise ImportDiagnostic(
            origin,
            f"--input-shape names no model input: {', '.join(unknown)} "
            f"(inputs: {', '.join(known)})",
        )
    try:
        validate.check_input_shapes(model, shapes, origin)
    except diagnostic.ModelInvalid as e:
        raise ImportDiagnostic(e.where, e.message) from None
    model = onnx.ModelProto.FromString(model.SerializeToString())  # we edit nodes
    _check_opset(model, origin)
    try:
        simplified = simplify(model, shapes)
    except QOperatorError as e:
        node = model.graph.node[e.index]
        raise ImportDiagnostic(
            f"{origin}: node {e.index} '{node.name}' ({node.op_type})", e.message
        ) from None
    imp = _Importer(model, origin, shapes, simplified=simplified)
    result = imp.run()
    result.simplified = simplified
    if imp.input_shapes:
        unknown = ", ".join(sorted(imp.input_shapes))
        known = ", ".join(i.name for i in model.graph.input)
        raise ImportDiagnostic(
            origin, f"--input-shape names no model input: {unknown} (inputs: {known})"
        )
    try:
        validate.check_imported(model, result.module, origin)
    except diagnostic.ModelInvalid as e:
        raise ImportDiagnostic(e.where, e.message) from None
    if weights_ref is not None:
        result.module.attributes["nn.weights"] = StringAttr(weights_ref)
    return result


def import_file(
    path: str | Path, *, input_shapes: dict[str, tuple[int, ...]] | None = None
) -> Imported:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ImportDiagnostic(str(path), f"cannot read the model: {e.strerror}") from None
    model = load_model(data, str(path), base_dir=p.resolve().parent)
    return import_model(
        model, origin=str(path), input_shapes=input_shapes, weights_ref=str(p.resolve())
    )


__all__ = [
    "SUPPORTED_OPS",
    "ImportDiagnostic",
    "Imported",
    "import_file",
    "import_model",
    "load_model",
    "module_io",
    "parse_shape_spec",
]

# the handlers of the extended operator set register themselves on import
from tigris_ir.frontend import extra_ops as _extra_ops  # noqa: E402, F401
from tigris_ir.frontend import int_ops as _int_ops  # noqa: E402, F401
