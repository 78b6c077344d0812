"""Import handlers of integer and boolean data.

Registered with `onnx_import`'s `_handles` like `extra_ops` (imported at the
end of `onnx_import`): Cast between FLOAT, INT8, UINT8, INT32, INT64 and
BOOL; Not, And, Or, Xor; Where; ArgMax and ArgMin, and Hardmax through them; TopK with a constant K;
Gather with run-time indices (`nn.take`); Shape and Size of what the shape inference left open
(the importer knows every static shape); Range, whose length would depend on
run-time values, refused by name.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from xdsl.ir import Attribute, SSAValue

from tigris_ir.dialects import nn
from tigris_ir.frontend import onnx_import as base
from tigris_ir.frontend.extra_ops import run_step
from tigris_ir.frontend.onnx_import import _handles, _Importer, _Val

_CAST_TYPES = base._ONNX_DTYPES
"""The element types a Cast converts between: those the importer reads."""


def _matched(imp: _Importer, node: onnx.NodeProto, names: list[str]) -> tuple[list[SSAValue], str]:
    """The operands of an elementwise node in one layout (channels-last when
    any of them is a feature map), and that layout."""
    vals = [imp.value(n) for n in names]
    target = "cl" if any(v.layout == "cl" for v in vals) else "plain"
    rank = max(len(nn.shape_of(v.ssa)) for v in vals)
    match = base._match_layout  # noqa: SLF001
    return [match(imp, v, n, target, rank) for v, n in zip(vals, names)], target


@_handles("Cast")
def _cast(imp: _Importer, node: onnx.NodeProto) -> None:
    to = imp.attrs(node).get("to")
    if not isinstance(to, int) or to not in _CAST_TYPES:
        raise imp.fail(
            f"Cast to {base.elem_type_name(to) if isinstance(to, int) else repr(to)} is not "
            "supported; supported: FLOAT, INT8, UINT8, INT32, INT64, BOOL"
        )
    x = imp.value(node.input[0])
    dt = np.dtype(_CAST_TYPES[to])
    if nn.quant_of(x.ssa) is None and nn.dtype_of(x.ssa) == dt:
        imp.env[node.output[0]] = x
        return
    op = imp.emit(nn.CastOp, [x.ssa], dtype=dt, result_shapes=[nn.shape_of(x.ssa)])
    imp.finish(node, op, x.layout)


_LOGIC: dict[str, type[nn.NNOp]] = {"And": nn.AndOp, "Or": nn.OrOp, "Xor": nn.XorOp}


@_handles("Not")
def _not(imp: _Importer, node: onnx.NodeProto) -> None:
    x = imp.value(node.input[0])
    op = imp.emit(nn.NotOp, [x.ssa], dtype=np.bool_)
    imp.finish(node, op, x.layout)


@_handles(*_LOGIC)
def _logic(imp: _Importer, node: onnx.NodeProto) -> None:
    operands, layout = _matched(imp, node, list(node.input))
    op = imp.emit(_LOGIC[node.op_type], operands, dtype=np.bool_)
    imp.finish(node, op, layout)


@_handles("Where")
def _where(imp: _Importer, node: onnx.NodeProto) -> None:
    operands, layout = _matched(imp, node, list(node.input))
    dt = nn.dtype_of(operands[1])
    if nn.dtype_of(operands[2]) != dt:
        raise imp.fail(
            f"x ('{node.input[1]}') is {operands[1].type} but y ('{node.input[2]}') is "
            f"{operands[2].type}; Where takes one element type"
        )
    op = imp.emit(nn.WhereOp, operands, dtype=dt)
    imp.finish(node, op, layout)


@_handles("ArgMax", "ArgMin")
def _arg_reduce(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    x = imp.value(node.input[0])
    rank = len(nn.shape_of(x.ssa))
    axis = int(a.get("axis", 0))
    if not -rank <= axis < rank:
        raise imp.fail(f"axis {axis} is outside the rank-{rank} input")
    keep = int(a.get("keepdims", 1))
    layout = x.layout
    if x.layout == "cl" and not keep:
        # over the channels the result (N, H, W) is in ONNX's order already
        layout = "plain"
        if axis % rank != 1:
            x = imp.to_plain(x)
    internal = base._cl_axis(axis, rank) if x.layout == "cl" else axis % rank  # noqa: SLF001
    props: dict[str, Attribute] = {
        "axes": nn.ints_prop([internal]),
        "keepdims": nn.int_prop(keep),
        "select_last_index": nn.int_prop(int(a.get("select_last_index", 0))),
    }
    cls = nn.ArgMaxOp if node.op_type == "ArgMax" else nn.ArgMinOp
    op = imp.emit(cls, [x.ssa], props, dtype=np.int64)
    imp.finish(node, op, layout)


@_handles("Hardmax")
def _hardmax(imp: _Importer, node: onnx.NodeProto) -> None:
    """Hardmax as ArgMax (keeping the axis), Equal with the positions along
    the axis, and Cast to FLOAT: 1 at the first maximum, 0 elsewhere. Opset 13
    on: along one axis (default -1). Before 13: the input read as a matrix of
    prod(shape[:axis]) rows (default axis 1), each row as a whole."""
    x = imp.value(node.input[0])
    if nn.dtype_of(x.ssa) != np.float32 or nn.quant_of(x.ssa) is not None:
        raise imp.fail(f"Hardmax of {x.ssa.type} is not supported; supported: FLOAT")
    shape = base._plain_shape(x)  # noqa: SLF001
    rank = len(shape)
    legacy = imp.opset < 13
    axis = int(imp.attrs(node).get("axis", 1 if legacy else -1))
    if not -rank <= axis < rank:
        raise imp.fail(f"axis {axis} is out of range for a rank-{rank} input")
    axis %= rank
    out = node.output[0]
    src = node.input[0]
    if legacy and math.prod(shape[axis + 1 :]) != 1:
        rows = (math.prod(shape[:axis]), math.prod(shape[axis:]))
        imp.consts[f"{out}::rows"] = np.array(rows, np.int64)
        run_step(imp, node, "Reshape", [src, f"{out}::rows"], f"{out}::flat")
        src, axis, work = f"{out}::flat", 1, rows
    else:
        work = tuple(shape)
    dest = f"{out}::hard" if work != tuple(shape) else out
    at = [1] * len(work)
    at[axis] = work[axis]
    imp.consts[f"{out}::positions"] = np.arange(work[axis], dtype=np.int64).reshape(at)
    run_step(imp, node, "ArgMax", [src], f"{out}::index", axis=axis, keepdims=1)
    run_step(imp, node, "Equal", [f"{out}::positions", f"{out}::index"], f"{out}::one")
    run_step(imp, node, "Cast", [f"{out}::one"], dest, to=onnx.TensorProto.FLOAT)
    if dest != out:
        imp.consts[f"{out}::shape"] = np.array(shape, np.int64)
        run_step(imp, node, "Reshape", [dest, f"{out}::shape"], out)


@_handles("TopK")
def _top_k(imp: _Importer, node: onnx.NodeProto) -> None:
    """TopK with a constant K (opset 1: the attribute k; 10 on: the input K):
    `nn.top_k_values` and `nn.top_k_indices` for the outputs the graph uses.
    A rank-1 input runs as one row of a (1, n) matrix."""
    a = imp.attrs(node)
    if imp.opset < 10:
        if "k" not in a:
            raise imp.fail("TopK before opset 10 needs its attribute k")
        k = int(a["k"])
    else:
        if len(node.input) < 2 or not node.input[1]:
            raise imp.fail("TopK from opset 10 takes K as its second input; it has none")
        kc = imp.require_const(node, node.input[1], "K")
        if kc.size != 1 or not np.issubdtype(kc.dtype, np.integer):
            raise imp.fail(f"K must hold one integer, got {kc.dtype} of shape {list(kc.shape)}")
        k = int(kc.reshape(-1)[0])
    x = imp.value(node.input[0])
    if nn.dtype_of(x.ssa) == np.bool_:
        raise imp.fail(f"TopK of {x.ssa.type} is not supported; it orders numbers")
    shape = base._plain_shape(x)  # noqa: SLF001
    rank = len(shape)
    axis = int(a.get("axis", -1))
    if not -rank <= axis < rank:
        raise imp.fail(f"axis {axis} is out of range for a rank-{rank} input")
    axis %= rank
    if not 1 <= k <= shape[axis]:
        raise imp.fail(
            f"K = {k} must be in [1, {shape[axis]}], the length of axis {axis} of '{node.input[0]}'"
        )
    outs = list(node.output) + [""] * (2 - len(node.output))
    if rank == 1:
        row = f"{node.output[0] or node.output[1]}::row"
        imp.consts[f"{row}::shape"] = np.array([1, shape[0]], np.int64)
        run_step(imp, node, "Reshape", [node.input[0], f"{row}::shape"], row)
        x, axis = imp.value(row), 1
    internal = base._cl_axis(axis, rank) if x.layout == "cl" else axis  # noqa: SLF001
    props: dict[str, Attribute] = {
        "axis": nn.int_prop(internal),
        "k": nn.int_prop(k),
        "largest": nn.int_prop(int(a.get("largest", 1))),
    }
    kinds = ((nn.TopKValuesOp, nn.dtype_of(x.ssa)), (nn.TopKIndicesOp, np.dtype(np.int64)))
    for name, (cls, dt) in zip(outs, kinds):
        if not name or not (imp.consumers.get(name) or name in imp.graph_outputs):
            continue
        quant = nn.quant_of(x.ssa) if cls is nn.TopKValuesOp else None
        op = imp.emit(cls, [x.ssa], props, dtype=dt, quant=quant)
        if rank == 1:
            tmp = f"{name}::row"
            imp.env[tmp] = _Val(op.results[0], "plain")
            imp.consts[f"{tmp}::shape"] = np.array([k], np.int64)
            run_step(imp, node, "Reshape", [tmp, f"{tmp}::shape"], name)
        else:
            imp.env[name] = _Val(op.results[0], x.layout)


def take(imp: _Importer, node: onnx.NodeProto) -> None:
    """Gather whose indices are computed at run time: `nn.take` in ONNX's layout."""
    x = imp.to_plain(imp.value(node.input[0]))
    idx = imp.to_plain(imp.value(node.input[1]))
    if nn.dtype_of(idx.ssa) not in (np.int32, np.int64) or nn.quant_of(idx.ssa) is not None:
        raise imp.fail(
            f"the indices ('{node.input[1]}') must be INT32 or INT64, got {idx.ssa.type}"
        )
    rank = len(nn.shape_of(x.ssa))
    axis = int(imp.attrs(node).get("axis", 0))
    if not -rank <= axis < rank:
        raise imp.fail(f"axis {axis} is outside the rank-{rank} input")
    op = imp.emit(
        nn.TakeOp,
        [x.ssa, idx.ssa],
        {"axis": nn.int_prop(axis % rank)},
        dtype=nn.dtype_of(x.ssa),
        quant=nn.quant_of(x.ssa),
    )
    imp.finish(node, op, "plain")


@_handles("Shape", "Size")
def _shape(imp: _Importer, node: onnx.NodeProto) -> None:
    """The static shape (ONNX's axis order) or element count, as a constant."""
    x = imp.value(node.input[0])
    shape = nn.shape_of(x.ssa)
    if x.layout == "cl":
        shape = tuple(shape[i] for i in base._to_plain_perm(len(shape)))  # noqa: SLF001
    if node.op_type == "Size":
        value = np.array(int(np.prod(shape)), np.int64)
    else:
        a = imp.attrs(node)
        r = len(shape)
        start, end = int(a.get("start", 0)), int(a.get("end", r))
        start = min(max(start + r if start < 0 else start, 0), r)
        end = min(max(end + r if end < 0 else end, 0), r)
        value = np.array(shape[start:end], np.int64)
    imp.consts[node.output[0]] = value
    imp.env[node.output[0]] = _Val(imp.weight(value, "shape"), "plain")


@_handles("Range")
def _range(imp: _Importer, node: onnx.NodeProto) -> None:
    """Range folds when its inputs are constants; otherwise its length is a
    run-time value, and every tensor here has a static shape."""
    for n in node.input:
        if imp.const(n) is None:
            cause = imp.runtime_cause(n) or "but it is computed at run time"
            raise imp.fail(
                f"Range's output length depends on '{n}', which must be a constant at "
                f"import (tensors have static shapes), {cause}"
            )
    raise imp.fail("Range of constants should have been folded at import")


_NEW = (
    "Cast", "Not", "And", "Or", "Xor", "Where", "ArgMax", "ArgMin", "Hardmax", "Shape", "Size",
    "Range", "TopK",
)
base.SUPPORTED_OPS = tuple(sorted({*base.SUPPORTED_OPS, *_NEW}))


def _zero_point(imp: _Importer, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
    if len(node.input) <= index or not node.input[index]:
        return np.zeros((), np.int64)
    zp = imp.require_const(node, node.input[index], what)
    if not np.issubdtype(zp.dtype, np.integer):
        raise imp.fail(f"{what} must be an integer, got {zp.dtype}")
    return zp.astype(np.int64)


@_handles("MatMulInteger")
def _matmul_integer(imp: _Importer, node: onnx.NodeProto) -> None:
    """(A - a_zero_point) @ (B - b_zero_point) in int32; B a constant matrix,
    its zero point (one or per column) subtracted at import."""
    a = imp.to_plain(imp.value(node.input[0]))
    if nn.dtype_of(a.ssa) not in (np.int8, np.uint8):
        raise imp.fail(f"A ('{node.input[0]}') must be INT8 or UINT8, got {a.ssa.type}")
    b = imp.require_const(node, node.input[1], "B")
    if b.dtype not in (np.int8, np.uint8) or b.ndim != 2:
        raise imp.fail(f"B must be an INT8 or UINT8 matrix, got {b.dtype} of shape {list(b.shape)}")
    azp = _zero_point(imp, node, 2, "a_zero_point")
    bzp = _zero_point(imp, node, 3, "b_zero_point")
    if bzp.size not in (1, b.shape[1]):
        raise imp.fail(f"b_zero_point must hold 1 or {b.shape[1]} values, got {bzp.size}")
    bw = imp.weight((b.astype(np.int64) - bzp.reshape(-1)).astype(np.int32), "b")
    x = a.ssa
    if azp.size == 1:
        props: dict[str, Attribute] = {"a_zero_point": nn.int_prop(int(azp.reshape(-1)[0]))}
    else:  # per row: A - a_zero_point in int32 first
        rows = _row_zero_points(imp, node, azp, nn.shape_of(a.ssa))
        x = imp.emit(nn.CastOp, [x], dtype=np.int32, result_shapes=[nn.shape_of(x)]).results[0]
        x = imp.emit(nn.SubOp, [x, imp.weight(rows, "a_zero_point")], dtype=np.int32).results[0]
        props = {"a_zero_point": nn.int_prop(0)}
    op = imp.emit(nn.MatMulIntegerOp, [x, bw], props, dtype=np.int32)
    imp.finish(node, op, "plain")


def _row_zero_points(
    imp: _Importer, node: onnx.NodeProto, azp: np.ndarray, shape: tuple[int, ...]
) -> np.ndarray:
    """A per-row a_zero_point as an int32 tensor of shape (..., M, 1): ONNX
    gives M values for an (M, K) A, or the shape (D1, ..., M, 1) for an
    (D1, ..., M, K) A."""
    rows = (*shape[:-1], 1)
    if len(shape) == 2 and azp.shape == (shape[0],):
        return azp.reshape(rows).astype(np.int32)
    if azp.shape != rows:
        want = f"{shape[0]} values or the shape {list(rows)}" if len(shape) == 2 else list(rows)
        raise imp.fail(
            f"a_zero_point of shape {list(azp.shape)} fits neither one zero point nor one per "
            f"row of A {list(shape)}: give one value or {want}"
        )
    return azp.astype(np.int32)


base.SUPPORTED_OPS = tuple(sorted({*base.SUPPORTED_OPS, "MatMulInteger"}))


@_handles("ConvInteger")
def _conv_integer(imp: _Importer, node: onnx.NodeProto) -> None:
    """ConvInteger of a channels-last feature map: the weights (Cout, Cin/g,
    *kernel) moved to (Cout, *kernel, Cin/g) and their zero point (one or per
    output channel) subtracted at import."""
    x = imp.value(node.input[0])
    rank = len(nn.shape_of(x.ssa))
    if rank not in (3, 4):
        raise imp.fail(f"the input must be a rank-3 or rank-4 feature map, got rank {rank}")
    x = imp.to_cl(x)
    if nn.dtype_of(x.ssa) not in (np.int8, np.uint8):
        raise imp.fail(f"x ('{node.input[0]}') must be INT8 or UINT8, got {x.ssa.type}")
    w = imp.require_const(node, node.input[1], "the weight")
    if w.dtype not in (np.int8, np.uint8) or w.ndim != rank:
        raise imp.fail(f"the weight must be INT8 or UINT8 of rank {rank}, got {w.dtype} {w.shape}")
    xzp = _zero_point(imp, node, 2, "x_zero_point")
    if xzp.size != 1:
        raise imp.fail("x_zero_point must be one value")
    wzp = _zero_point(imp, node, 3, "w_zero_point")
    if wzp.size not in (1, w.shape[0]):
        raise imp.fail(f"w_zero_point must hold 1 or {w.shape[0]} values, got {wzp.size}")
    wi = w.astype(np.int64) - wzp.reshape(-1, *([1] * (rank - 1)))
    wcl = np.ascontiguousarray(np.moveaxis(wi, 1, -1)).astype(np.int32)
    a = imp.attrs(node)
    nsp = rank - 2
    kernel = list(a.get("kernel_shape", w.shape[2:]))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise imp.fail("auto_pad is not supported; give explicit pads")
    props: dict[str, Attribute] = {
        "kernel": nn.ints_prop(kernel),
        "strides": nn.ints_prop(a.get("strides", [1] * nsp)),
        "dilations": nn.ints_prop(a.get("dilations", [1] * nsp)),
        "pads": nn.ints_prop(a.get("pads", [0] * (2 * nsp))),
        "group": nn.int_prop(int(a.get("group", 1))),
        "x_zero_point": nn.int_prop(int(xzp.reshape(-1)[0])),
    }
    op = imp.emit(nn.ConvIntegerOp, [x.ssa, imp.weight(wcl, "w")], props, dtype=np.int32)
    imp.finish(node, op, "cl")


base.SUPPORTED_OPS = tuple(sorted({*base.SUPPORTED_OPS, "ConvInteger"}))
