"""Refuse an invalid ONNX model before anything is imported, in ONNX's own terms.

`check_model` runs first on every model (the importer then checks its opsets):
the graph must have outputs, every declared dimension must be
positive, onnx's checker runs in full (with shape inference in strict mode, so
an attribute out of range for its operator's opset schema or a declared shape
that contradicts the inferred one is refused), and then the rules the checker
leaves to the runtime are checked on the inferred shapes: per-axis
quantization parameters (axis in range, one scale and zero point per element
of that axis), quantization scales positive and finite, convolution weights
and biases that fit the input, and no empty or impossibly large tensor.

Diagnostics name the node (its index, name and operator) and the rule with ONNX
axes and the model's own layout (NCHW); nothing here knows the importer's
channels-last layout.

`check_tensor_size` bounds every tensor before it is allocated or planned:
no target this compiler prints for addresses more than 4 GiB (a 32-bit address
space), so a larger tensor is refused with its size whatever the budget.
"""

from __future__ import annotations

import math
import re

import numpy as np
import onnx
from onnx import numpy_helper

from tigris_ir.frontend.diagnostic import (
    ModelInvalid,
    check_tensor_size,
    format_shape,
)

_ELEM_BYTES: dict[int, int] = {
    onnx.TensorProto.FLOAT: 4,
    onnx.TensorProto.INT8: 1,
    onnx.TensorProto.UINT8: 1,
    onnx.TensorProto.INT32: 4,
    onnx.TensorProto.INT64: 8,
    onnx.TensorProto.BOOL: 1,
    onnx.TensorProto.FLOAT16: 2,
    onnx.TensorProto.DOUBLE: 8,
}


def check_model(data: bytes, model: onnx.ModelProto, origin: str) -> None:
    """Every rule above, in order; the first broken one raises ModelInvalid."""
    _check_text(model.graph, origin)
    g = model.graph
    if not g.output:
        raise ModelInvalid(origin, "the graph has no outputs; a model must declare at least one")
    for vi in [*g.input, *g.output, *g.value_info]:
        _check_declared(vi, origin)
    _check_stored_data(g, origin)
    try:
        onnx.checker.check_model(data, full_check=True)
    except Exception as e:  # the checker raises ValidationError, InferenceError, ...
        raise _checker_diagnostic(e, model, origin) from None
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    _NodeRules(inferred, origin).check()


def _check_stored_data(g: onnx.GraphProto, origin: str) -> None:
    """Every initializer (of the graph and its bodies) holds as many elements
    as its dimensions say: onnx's checker leaves that to the runtime."""

    def check(t: onnx.TensorProto, what: str) -> None:
        dims = list(t.dims)
        bad = [d for d in dims if d < 0]
        if bad:
            raise ModelInvalid(f"{origin}: {what} '{t.name}'", f"dimension {bad[0]} is negative")
        if t.data_location == onnx.TensorProto.EXTERNAL:
            return  # read beside the model first, then checked again
        try:
            numpy_helper.to_array(t)
        except Exception as e:  # numpy's reshape error, an unknown data type, ...
            shape = f"a tensor of shape {'x'.join(map(str, dims))}" if dims else "a scalar"
            reason = (str(e).strip().splitlines() or [""])[0]
            if t.HasField("raw_data"):
                try:
                    size = onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
                    reason = (
                        f"{len(t.raw_data)} bytes of raw data, {math.prod(dims) * size} "
                        "needed"
                    )
                except Exception:  # an unknown data type: numpy's reason stands
                    pass
            raise ModelInvalid(
                f"{origin}: {what} '{t.name}'",
                f"its stored data does not hold {shape} ({reason})",
            ) from None

    for t in g.initializer:
        check(t, "initializer")
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                check(a.t, f"the '{a.name}' tensor of node '{n.name}' ({n.op_type})")
            if a.type == onnx.AttributeProto.GRAPH:
                _check_stored_data(a.g, origin)
            for sub in a.graphs:
                _check_stored_data(sub, origin)


def _check_text(g: onnx.GraphProto, origin: str) -> None:
    """Names are text: protobuf hands a string field of invalid UTF-8 over as bytes."""

    def bad(value: object, what: str) -> None:
        if not isinstance(value, str):
            raise ModelInvalid(origin, f"{what} is not valid UTF-8 text: {value!r:.60}")

    bad(g.name, "the graph's name")
    for i, n in enumerate(g.node):
        for key in ("name", "op_type", "domain"):
            bad(getattr(n, key), f"the {key} of node {i}")
        for v in [*n.input, *n.output]:
            bad(v, f"a value name of node {i}")
        for a in n.attribute:
            bad(a.name, f"an attribute name of node {i}")
            if a.type == onnx.AttributeProto.GRAPH:
                _check_text(a.g, origin)
            for sub in a.graphs:
                _check_text(sub, origin)
    for vi in [*g.input, *g.output, *g.value_info]:
        bad(vi.name, "a graph input, output or value_info name")
    for t in g.initializer:
        bad(t.name, "an initializer name")


def _check_declared(vi: onnx.ValueInfoProto, origin: str) -> None:
    if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
        return
    dims = vi.type.tensor_type.shape.dim
    static = [d.dim_value for d in dims if d.HasField("dim_value")]
    if any(d < 1 for d in static):
        shown = "x".join(
            str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims
        )
        raise ModelInvalid(
            f"{origin}: value '{vi.name}'",
            f"declared shape {shown} has a dimension below 1; dimensions must be >= 1 "
            "(or symbolic)",
        )
    if len(static) == len(dims):
        size = _ELEM_BYTES.get(vi.type.tensor_type.elem_type, 1)
        check_tensor_size(f"{origin}: value '{vi.name}'", "the tensor", static, size)


_NODE_ERROR = re.compile(r"\(op_type:(\w+)(?:, node name: ([^)]*))?\): (.*?)(?=\(op_type:|$)")


def _checker_diagnostic(e: Exception, model: onnx.ModelProto, origin: str) -> ModelInvalid:
    text = " ".join(str(e).split()) or type(e).__name__
    found = list(_NODE_ERROR.finditer(text))
    if found:
        # an error inside a subgraph (If, Loop, Scan bodies) names the node that
        # holds the body, then the body's node: the rule is the innermost's
        m = found[0]
        op, name = m.group(1), m.group(2) or ""
        rule = re.sub(r"^(\[\w+\] )+", "", found[-1].group(3).strip())
        nodes = model.graph.node
        if name:
            idx = next((i for i, n in enumerate(nodes) if n.name == name), None)
        else:  # an unnamed node: known when it is the only one of its operator
            same = [i for i, n in enumerate(nodes) if n.op_type == op]
            idx = same[0] if len(same) == 1 else None
        where = f"{origin}: node {idx if idx is not None else '?'} '{name}' ({op})"
        for inner in found[1:]:
            where += f": body node '{inner.group(2) or ''}' ({inner.group(1)})"
        if idx is not None and rule.startswith(("Inferred shape and existing", "Inferred elem")):
            outs = ", ".join(f"'{o}'" for o in model.graph.node[idx].output if o)
            rule = f"the declared type of {outs} contradicts the inferred one: {rule}"
        return ModelInvalid(where, _short(rule))
    text = re.sub(r"^(\[\w+\] )+", "", text)
    return ModelInvalid(origin, f"the model is malformed: {_short(text)}")


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


class _NodeRules:
    """The rules the checker leaves to the runtime, on the inferred shapes."""

    def __init__(self, model: onnx.ModelProto, origin: str):
        g = model.graph
        self.origin = origin
        self.graph = g
        self.shapes: dict[str, list[int | None]] = {}
        self.elem: dict[str, int] = {}
        for vi in [*g.input, *g.value_info, *g.output]:
            tt = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and tt.HasField("shape"):
                self.shapes[vi.name] = [
                    d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim
                ]
                self.elem[vi.name] = tt.elem_type
        self.consts: dict[str, onnx.TensorProto] = {t.name: t for t in g.initializer}
        for n in g.node:
            if n.op_type == "Constant" and n.output:
                for a in n.attribute:
                    if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                        self.consts[n.output[0]] = a.t
        for t in self.consts.values():
            self.shapes.setdefault(t.name, list(t.dims))

    def where(self, i: int, node: onnx.NodeProto) -> str:
        return f"{self.origin}: node {i} '{node.name}' ({node.op_type})"

    def const(self, name: str) -> np.ndarray | None:
        t = self.consts.get(name)
        if t is None:
            return None
        try:
            return numpy_helper.to_array(t)
        except Exception:  # the checker has vetted sizes; a value it cannot read is no constant
            return None

    def check(self) -> None:
        for i, node in enumerate(self.graph.node):
            if node.domain not in ("", "ai.onnx"):
                continue
            rule = getattr(self, f"rule_{node.op_type}", None)
            if rule is not None:
                rule(i, node)
            for out in node.output:
                shape = self.shapes.get(out)
                static = [d for d in shape or [] if d is not None]
                if out and shape is not None and len(static) == len(shape):
                    size = _ELEM_BYTES.get(self.elem.get(out, 0), 1)
                    check_tensor_size(self.where(i, node), f"output '{out}'", static, size)

    # -- quantization -------------------------------------------------------
    def _quant(self, i: int, node: onnx.NodeProto) -> None:
        x = self.shapes.get(node.input[0])
        scale = self.const(node.input[1]) if len(node.input) > 1 else None
        zp = self.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        where = self.where(i, node)
        if scale is not None:
            if scale.dtype.kind == "f" and not np.all(np.isfinite(scale) & (scale > 0)):
                bad = scale.reshape(-1)[~(np.isfinite(scale) & (scale > 0)).reshape(-1)][0]
                raise ModelInvalid(
                    where, f"the scale '{node.input[1]}' must be positive and finite, got {bad}"
                )
            if scale.ndim > 1:
                raise ModelInvalid(
                    where,
                    f"the scale '{node.input[1]}' must be a scalar (per tensor) or 1-D "
                    f"(per axis), got shape {format_shape(scale.shape)}",
                )
            if scale.ndim == 1 and x is not None:
                rank = len(x)
                if not -rank <= axis < rank:
                    raise ModelInvalid(
                        where,
                        f"axis {axis} is out of range for the rank-{rank} input "
                        f"'{node.input[0]}' (ONNX axes {-rank} to {rank - 1})",
                    )
                n = x[axis % rank]
                if n is not None and scale.size not in (n,) and not (scale.size == 1 and n == 1):
                    raise ModelInvalid(
                        where,
                        f"a per-axis scale needs one value per element of axis {axis} "
                        f"({n} for input '{node.input[0]}' of shape "
                        f"{format_shape([d or 0 for d in x])}), got {scale.size}",
                    )
        if zp is not None and scale is not None and zp.shape != scale.shape:
            raise ModelInvalid(
                where,
                f"the zero point '{node.input[2]}' has shape {format_shape(zp.shape)} but the "
                f"scale has shape {format_shape(scale.shape)}; they must agree",
            )

    rule_QuantizeLinear = _quant
    rule_DequantizeLinear = _quant

    # -- convolution --------------------------------------------------------
    def rule_Conv(self, i: int, node: onnx.NodeProto) -> None:
        x = self.shapes.get(node.input[0])
        w = self.shapes.get(node.input[1])
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        where = self.where(i, node)
        if group < 1:
            raise ModelInvalid(where, f"group must be >= 1, got {group}")
        if x is None or w is None or len(x) < 2 or len(w) < 2:
            return
        c, m, cg = x[1], w[0], w[1]
        if c is not None and cg is not None and cg * group != c:
            raise ModelInvalid(
                where,
                f"the weight '{node.input[1]}' takes {cg} input channels per group x group "
                f"{group} = {cg * group}, but the input '{node.input[0]}' has C = {c} (NCHW)",
            )
        if m is not None and m % group:
            raise ModelInvalid(where, f"the {m} output channels do not divide into group {group}")
        if len(node.input) > 2 and node.input[2]:
            b = self.shapes.get(node.input[2])
            if b is not None and m is not None and b != [m]:
                raise ModelInvalid(
                    where,
                    f"the bias '{node.input[2]}' must hold one value per output channel "
                    f"({m}), got shape {format_shape([d or 0 for d in b])}",
                )

    def rule_ConvTranspose(self, i: int, node: onnx.NodeProto) -> None:
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        if group < 1:
            raise ModelInvalid(self.where(i, node), f"group must be >= 1, got {group}")


def check_imported(model: onnx.ModelProto, module, origin: str) -> None:
    """The imported function computes exactly the declared output shapes (in
    the model's layout): a declared static shape the import disagrees with is
    refused, never reinterpreted."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ArrayAttr, StringAttr, TensorType

    fn = next((op for op in module.ops if isinstance(op, func.FuncOp)), None)
    if fn is None:
        return
    lay = fn.attributes.get("nn.output_layouts")
    layouts = (
        [a.data for a in lay.data if isinstance(a, StringAttr)]
        if isinstance(lay, ArrayAttr)
        else []
    )
    for i, (out, ty) in enumerate(zip(model.graph.output, fn.function_type.outputs.data)):
        if not isinstance(ty, TensorType):
            continue
        got = list(ty.get_shape())
        if i < len(layouts) and layouts[i] in ("nchw", "ncw"):
            got = [got[0], got[-1], *got[1:-1]]
        tt = out.type.tensor_type
        if not out.type.HasField("tensor_type") or not tt.HasField("shape"):
            continue
        dims = tt.shape.dim
        if len(dims) != len(got) and not (len(dims) == 0 and got in ([], [1])):
            raise ModelInvalid(
                f"{origin}: output '{out.name}'",
                f"declared rank {len(dims)} but the graph computes shape {format_shape(got)}",
            )
        for d, g in zip(dims, got):
            if d.HasField("dim_value") and d.dim_value != g:
                declared = "x".join(
                    str(x.dim_value) if x.HasField("dim_value") else (x.dim_param or "?")
                    for x in dims
                )
                raise ModelInvalid(
                    f"{origin}: output '{out.name}'",
                    f"declared shape {declared} but the graph computes {format_shape(got)}",
                )


def check_input_shapes(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]], origin: str):
    """Shapes given on the command line (--input-shape) within the size limit,
    before the importer folds or allocates anything with them."""
    for inp in model.graph.input:
        if inp.name in shapes:
            size = _ELEM_BYTES.get(inp.type.tensor_type.elem_type, 1)
            given = shapes[inp.name]
            check_tensor_size(
                f"{origin}: input '{inp.name}'",
                f"--input-shape {inp.name}:{'x'.join(map(str, given))}",
                given,
                size,
            )
