"""Import handlers of the extended operator set.

Registered with `onnx_import`'s `_handles` (this module is imported at the
end of `onnx_import`, so every handler here is known to the importer). Each
handler follows the conventions of the base handlers: channels-last feature
maps, QDQ groups fused into the op on quantized tensors where the op has
quantized semantics, every problem an `ImportDiagnostic` naming the node.

Some operators are written with ops the dialect already has, exactly:
variadic Sum / Mean / Max / Min as a chain of binary ops (Mean divides the
sum by the count once), GlobalMaxPool as a ReduceMax over the spatial axes.
"""

from __future__ import annotations

import numpy as np
import onnx
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, SSAValue

from tigris_ir.dialects import nn
from tigris_ir.frontend import onnx_import as base
from tigris_ir.frontend.onnx_import import _float_unary, _handles, _Importer, _Val
from tigris_ir.reference import kernels as K

_PLAIN_UNARY: dict[str, type[nn.NNOp]] = {
    "Neg": nn.NegOp,
    "Reciprocal": nn.ReciprocalOp,
    "Softplus": nn.SoftplusOp,
    "Softsign": nn.SoftsignOp,
    "Sign": nn.SignOp,
    "Erf": nn.ErfOp,
    "Mish": nn.MishOp,
}


@_handles(*_PLAIN_UNARY)
def _plain_unary(imp: _Importer, node: onnx.NodeProto) -> None:
    _float_unary(imp, node, _PLAIN_UNARY[node.op_type], {})


@_handles("Selu")
def _selu(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    props: dict[str, Attribute] = {
        "alpha": nn.float_prop(a.get("alpha", 1.67326319217681884765625)),
        "gamma": nn.float_prop(a.get("gamma", 1.05070102214813232421875)),
    }
    _float_unary(imp, node, nn.SeluOp, props)


@_handles("Shrink")
def _shrink(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    props: dict[str, Attribute] = {
        "bias": nn.float_prop(a.get("bias", 0.0)),
        "lambd": nn.float_prop(a.get("lambd", 0.5)),
    }
    _float_unary(imp, node, nn.ShrinkOp, props)


base._BINARY["Pow"] = nn.PowOp  # noqa: SLF001


@_handles("Pow")
def _pow(imp: _Importer, node: onnx.NodeProto) -> None:
    """Pow, with onnxruntime's shortcut for the exponents 2 and 3 decided
    from the ONNX shapes (`kernels.pow_multiplies`; opset 7's broadcasting,
    none before it: onnxruntime has no older Pow)."""
    shapes = [base._plain_shape(imp.value(n)) for n in node.input[:2]]  # noqa: SLF001
    props: dict[str, Attribute] = {}
    if _opset(imp) >= 7 and K.pow_multiplies(*shapes):
        props["multiply"] = nn.int_prop(1)
    base.binary_op(imp, node, props)


def _opset(imp: _Importer) -> int:
    for o in imp.model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 1


def _sub_node(
    imp: _Importer, node: onnx.NodeProto, op_type: str, inputs: list[str], output: str
) -> onnx.NodeProto:
    """A node standing for one step of `node`, reported under its name."""
    step = onnx.helper.make_node(op_type, inputs, [output], name=node.name)
    imp.node_index[id(step)] = imp.node_index.get(id(node), -1)
    return step


def run_step(
    imp: _Importer, node: onnx.NodeProto, op_type: str, inputs: list[str], output: str, **attrs
) -> None:
    """Import one step of `node` as a node of `op_type` (by its own handler),
    reported under `node`'s name."""
    step = _sub_node(imp, node, op_type, inputs, output)
    step.attribute.extend(onnx.helper.make_attribute(k, v) for k, v in attrs.items())
    _run(imp, step, base._HANDLERS[op_type])  # noqa: SLF001


def _run(imp: _Importer, step: onnx.NodeProto, handler: base.Handler) -> None:
    saved = imp.current
    imp.current = step
    try:
        handler(imp, step)
    finally:
        imp.current = saved


_VARIADIC = {"Sum": "Add", "Mean": "Add", "Max": "Max", "Min": "Min"}


@_handles(*_VARIADIC)
def _variadic(imp: _Importer, node: onnx.NodeProto) -> None:
    """Sum, Mean, Max and Min of any number of inputs, with broadcasting: a
    chain of binary ops from the left (Mean then divides by the count)."""
    names = [n for n in node.input]
    if not names or any(not n for n in names):
        raise imp.fail(f"{node.op_type} needs at least one input, and no empty input names")
    out = node.output[0]
    if len(names) == 1 and node.op_type != "Mean":
        imp.env[out] = imp.value(names[0])
        return
    binary = _VARIADIC[node.op_type]
    mean = node.op_type == "Mean"
    if len(names) == 2 and not mean:
        _run(imp, _sub_node(imp, node, binary, names, out), base._binary)  # noqa: SLF001
        return
    acc = names[0]
    for i, name in enumerate(names[1:], 1):
        last = i == len(names) - 1 and not mean
        dest = out if last else f"{out}::{node.op_type.lower()}{i}"
        _run(imp, _sub_node(imp, node, binary, [acc, name], dest), base._binary)  # noqa: SLF001
        acc = dest
    if mean:
        count = f"{out}::count"
        imp.consts[count] = np.array(len(names), np.float32)
        _run(imp, _sub_node(imp, node, "Div", [acc, count], out), base._binary)  # noqa: SLF001


@_handles("GlobalMaxPool")
def _global_max_pool(imp: _Importer, node: onnx.NodeProto) -> None:
    """The maximum over every spatial position: ReduceMax over H and W (or W)."""
    q = imp.fused_output(node)
    qin = imp.quantized_inputs(node, [node.input[0]]) if q is not None else None
    x = imp.value(node.input[0]) if qin is None else qin[0]
    rank = len(nn.shape_of(x.ssa))
    if rank < 3:
        raise imp.fail(f"GlobalMaxPool takes an (N, C, spatial...) tensor, got rank {rank}")
    if rank in (3, 4):
        x = imp.to_cl(x)
        axes, layout = list(range(1, rank - 1)), "cl"
    else:
        axes, layout = list(range(2, rank)), x.layout
    attr, dt = imp.result_quant(q if qin is not None else None)
    props: dict[str, Attribute] = {"axes": nn.ints_prop(axes), "keepdims": nn.int_prop(1)}
    op = imp.emit(nn.ReduceMaxOp, [x.ssa], props, dtype=dt, quant=attr)
    imp.finish(node, op, layout, q if qin is not None else None)


base._REDUCE.update(  # noqa: SLF001
    {"ReduceMin": nn.ReduceMinOp, "ReduceL2": nn.ReduceL2Op, "ReduceProd": nn.ReduceProdOp}
)
_handles("ReduceMin", "ReduceL2", "ReduceProd")(base._reduce)  # noqa: SLF001

_base_prelu = base._HANDLERS["PRelu"]  # noqa: SLF001


@_handles("PRelu")
def _prelu(imp: _Importer, node: onnx.NodeProto) -> None:
    """PRelu; before opset 7 a slope of shape (C,) is per channel (axis 1),
    which numpy broadcasting (opset 7 on) would align with the last axis."""
    slope = imp.const(node.input[1]) if len(node.input) > 1 else None
    if _opset(imp) < 7 and slope is not None and slope.ndim == 1 and slope.size > 1:
        x = imp.value(node.input[0])
        shape = _onnx_shape(x)
        if len(shape) < 2 or shape[1] != slope.size:
            raise imp.fail(
                f"the slope has {slope.size} values but the input {list(shape)} has "
                f"{shape[1] if len(shape) > 1 else 1} channels (axis 1); before opset 7 "
                "a slope of shape (C,) is per channel"
            )
        name = f"{node.output[0]}::slope"
        imp.consts[name] = slope.reshape(slope.size, *([1] * (len(shape) - 2)))
        step = _sub_node(imp, node, "PRelu", [node.input[0], name], node.output[0])
        _run(imp, step, _base_prelu)
        return
    _base_prelu(imp, node)


def _onnx_shape(v: _Val) -> tuple[int, ...]:
    """The ONNX (NCHW) shape of a value, whatever its layout inside."""
    shape = nn.shape_of(v.ssa)
    if v.layout == "cl" and len(shape) in (3, 4):
        return (shape[0], shape[-1], *shape[1:-1])
    return shape



@_handles("LRN")
def _lrn(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    if "size" not in a:
        raise imp.fail("LRN needs its 'size' attribute")
    x = imp.value(node.input[0])
    if len(nn.shape_of(x.ssa)) not in (3, 4):
        raise imp.fail(f"LRN takes an NCW or NCHW tensor, got rank {len(nn.shape_of(x.ssa))}")
    x = imp.to_cl(x)
    props: dict[str, Attribute] = {
        "size": nn.int_prop(int(a["size"])),
        "alpha": nn.float_prop(a.get("alpha", 1e-4)),
        "beta": nn.float_prop(a.get("beta", 0.75)),
        "bias": nn.float_prop(a.get("bias", 1.0)),
    }
    op = imp.emit(nn.LRNOp, [x.ssa], props)
    imp.finish(node, op, "cl")


def _param(imp: _Importer, node: onnx.NodeProto, index: int, what: str) -> np.ndarray:
    arr = imp.require_const(node, node.input[index], what)
    return np.asarray(arr, np.float32)


@_handles("LayerNormalization")
def _layer_norm(imp: _Importer, node: onnx.NodeProto) -> None:
    """Normalised over the ONNX axes from `axis` on, in the model's own layout."""
    a = imp.attrs(node)
    if any(o for o in node.output[1:]):
        raise imp.fail("LayerNormalization's Mean and InvStdDev outputs are not supported")
    x = imp.to_plain(imp.value(node.input[0]))
    shape = nn.shape_of(x.ssa)
    axis = int(a.get("axis", -1))
    if not -len(shape) <= axis < len(shape):
        raise imp.fail(f"axis {axis} is outside the rank-{len(shape)} input")
    axis %= len(shape)
    scale = _param(imp, node, 1, "the scale")
    has_bias = len(node.input) > 2 and node.input[2]
    bias = _param(imp, node, 2, "the bias") if has_bias else np.zeros((), np.float32)
    props: dict[str, Attribute] = {
        "axis": nn.int_prop(axis),
        "epsilon": nn.float_prop(a.get("epsilon", 1e-5)),
    }
    ops = [x.ssa, imp.weight(scale, "scale"), imp.weight(bias, "bias")]
    op = imp.emit(nn.LayerNormOp, ops, props)
    imp.finish(node, op, "plain")


@_handles("InstanceNormalization")
def _instance_norm(imp: _Importer, node: onnx.NodeProto) -> None:
    a = imp.attrs(node)
    x = imp.value(node.input[0])
    rank = len(nn.shape_of(x.ssa))
    if rank not in (3, 4):
        raise imp.fail(f"InstanceNormalization takes an NCW or NCHW tensor, got rank {rank}")
    x = imp.to_cl(x)
    c = nn.shape_of(x.ssa)[-1]
    params = []
    for i, what in ((1, "scale"), (2, "bias")):
        p = _param(imp, node, i, f"the {what}")
        if p.shape != (c,):
            raise imp.fail(f"the {what} has shape {list(p.shape)}; the input has {c} channels")
        params.append(imp.weight(p, what))
    props: dict[str, Attribute] = {"epsilon": nn.float_prop(a.get("epsilon", 1e-5))}
    op = imp.emit(nn.InstanceNormOp, [x.ssa, *params], props)
    imp.finish(node, op, "cl")


# ---------------------------------------------------------------- selections


def _ints_input(imp: _Importer, node: onnx.NodeProto, index: int, what: str) -> list[int] | None:
    if len(node.input) <= index or not node.input[index]:
        return None
    arr = imp.require_const(node, node.input[index], what)
    if not np.issubdtype(arr.dtype, np.integer):
        raise imp.fail(f"{what} must be integers, got {arr.dtype}")
    return [int(v) for v in np.asarray(arr).reshape(-1)]


def _exact_input(imp: _Importer, node: onnx.NodeProto) -> tuple[_Val, onnx.NodeProto | None]:
    vals, q = base._exact_or_real(imp, node, [node.input[0]])  # noqa: SLF001
    return vals[0], q


def _emit_selection(
    imp: _Importer,
    node: onnx.NodeProto,
    cls: type[nn.NNOp],
    x: _Val,
    props: dict[str, Attribute],
    q: onnx.NodeProto | None,
) -> None:
    attr, dt = imp.result_quant(q)
    if q is None and nn.quant_of(x.ssa) is not None:  # a selection keeps its input's type
        attr, dt = nn.quant_of(x.ssa), nn.dtype_of(x.ssa)
    op = imp.emit(cls, [x.ssa], props, dtype=dt, quant=attr)
    imp.finish(node, op, x.layout, q)


def _internal_axis(x: _Val, axis: int, rank: int) -> int:
    return base._cl_axis(axis, rank) if x.layout == "cl" else axis  # noqa: SLF001


@_handles("Slice")
def _slice(imp: _Importer, node: onnx.NodeProto) -> None:
    """Slice (attributes before opset 10, inputs from 10): any axes, steps and
    negative indices, clamped to each axis as ONNX clamps them."""
    x, q = _exact_input(imp, node)
    onnx_shape = _onnx_shape(x)
    rank = len(onnx_shape)
    if _opset(imp) < 10:
        a = imp.attrs(node)
        starts, ends = [int(v) for v in a.get("starts", [])], [int(v) for v in a.get("ends", [])]
        axes_l: list[int] | None = [int(v) for v in a["axes"]] if "axes" in a else None
        steps: list[int] | None = None
    else:
        starts = _ints_input(imp, node, 1, "Slice's starts") or []
        ends = _ints_input(imp, node, 2, "Slice's ends") or []
        axes_l = _ints_input(imp, node, 3, "Slice's axes")
        steps = _ints_input(imp, node, 4, "Slice's steps")
    axes = axes_l if axes_l is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise imp.fail("starts, ends, axes and steps must have one length")
    bounds = [(0, d, 1) for d in onnx_shape]
    seen: set[int] = set()
    for b, e, ax, st in zip(starts, ends, axes, steps):
        if not -rank <= ax < rank:
            raise imp.fail(f"axis {ax} is outside the rank-{rank} input")
        ax %= rank
        if ax in seen:
            raise imp.fail(f"axis {ax} is sliced twice")
        seen.add(ax)
        if st == 0:
            raise imp.fail(f"the step of axis {ax} is 0")
        bounds[ax] = slice(b, e, st).indices(onnx_shape[ax])
    internal = [0] * rank
    for ax in range(rank):
        internal[_internal_axis(x, ax, rank)] = ax
    props: dict[str, Attribute] = {
        k: nn.ints_prop([bounds[internal[i]][j] for i in range(rank)])
        for j, k in enumerate(("starts", "ends", "steps"))
    }
    _emit_selection(imp, node, nn.SliceOp, x, props, q)


@_handles("Tile")
def _tile(imp: _Importer, node: onnx.NodeProto) -> None:
    x, q = _exact_input(imp, node)
    rank = len(nn.shape_of(x.ssa))
    reps = _ints_input(imp, node, 1, "Tile's repeats")
    if reps is None or len(reps) != rank:
        raise imp.fail(f"repeats must hold {rank} values, one per input axis")
    internal = [0] * rank
    for ax in range(rank):
        internal[_internal_axis(x, ax, rank)] = reps[ax]
    _emit_selection(imp, node, nn.TileOp, x, {"repeats": nn.ints_prop(internal)}, q)


@_handles("Expand")
def _expand(imp: _Importer, node: onnx.NodeProto) -> None:
    """Broadcast to a shape (numpy rules); the result keeps the input's layout
    when the rank stays, else it is in ONNX's layout."""
    x, q = _exact_input(imp, node)
    want = _ints_input(imp, node, 1, "Expand's shape")
    if want is None:
        raise imp.fail("Expand needs its shape")
    onnx_shape = _onnx_shape(x)
    try:
        out = tuple(np.broadcast_shapes(onnx_shape, tuple(want)))
    except ValueError:
        raise imp.fail(
            f"the input {list(onnx_shape)} does not broadcast to the shape {want}"
        ) from None
    if len(out) != len(onnx_shape):
        x = imp.to_plain(x)
        full = (1,) * (len(out) - len(onnx_shape)) + tuple(onnx_shape)
        r = imp.emit(
            nn.ReshapeOp,
            [x.ssa],
            dtype=nn.dtype_of(x.ssa),
            quant=nn.quant_of(x.ssa),
            result_shapes=[full],
        )
        x = _Val(r.results[0], "plain")
    rank = len(out)
    internal = [0] * rank
    for ax in range(rank):
        internal[_internal_axis(x, ax, rank)] = out[ax]
    _emit_selection(imp, node, nn.ExpandOp, x, {"shape": nn.ints_prop(internal)}, q)


@_handles("Gather")
def _gather(imp: _Importer, node: onnx.NodeProto) -> None:
    """Gather with constant indices of any shape (a 1-D gather, then a reshape
    where the indices are not 1-D); run-time indices are `int_ops.take`."""
    idx_arr = imp.const(node.input[1])
    if idx_arr is None:
        from tigris_ir.frontend import int_ops

        int_ops.take(imp, node)
        return
    x, q = _exact_input(imp, node)
    onnx_shape = _onnx_shape(x)
    rank = len(onnx_shape)
    axis = int(imp.attrs(node).get("axis", 0))
    if not -rank <= axis < rank:
        raise imp.fail(f"axis {axis} is outside the rank-{rank} input")
    axis %= rank
    idx = np.asarray(idx_arr).astype(np.int64)
    n = onnx_shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise imp.fail(f"an index is outside [-{n}, {n}) along axis {axis}")
    flat = [int(v) % n for v in idx.reshape(-1)]
    if idx.ndim != 1:
        x = imp.to_plain(x)
    props: dict[str, Attribute] = {
        "axis": nn.int_prop(_internal_axis(x, axis, rank)),
        "indices": nn.ints_prop(flat),
    }
    if idx.ndim == 1:
        _emit_selection(imp, node, nn.GatherOp, x, props, q)
        return
    attr, dt = imp.result_quant(q)
    if q is None and nn.quant_of(x.ssa) is not None:
        attr, dt = nn.quant_of(x.ssa), nn.dtype_of(x.ssa)
    g = imp.emit(nn.GatherOp, [x.ssa], props, dtype=dt, quant=attr)
    final = (*onnx_shape[:axis], *idx.shape, *onnx_shape[axis + 1 :])
    r = imp.emit(nn.ReshapeOp, [g.results[0]], dtype=dt, quant=attr, result_shapes=[final])
    imp.finish(node, r, "plain", q)


@_handles("DepthToSpace", "SpaceToDepth")
def _depth_space(imp: _Importer, node: onnx.NodeProto) -> None:
    """As ONNX defines them: a reshape, a transpose and a reshape of NCHW."""
    a = imp.attrs(node)
    if "blocksize" not in a:
        raise imp.fail(f"{node.op_type} needs its 'blocksize' attribute")
    bs = int(a["blocksize"])
    x, q = _exact_input(imp, node)
    shape = _onnx_shape(x)
    if len(shape) != 4 or bs < 1:
        raise imp.fail(f"{node.op_type} takes an NCHW tensor and a blocksize >= 1")
    n, c, h, w = shape
    if node.op_type == "DepthToSpace":
        if c % (bs * bs):
            raise imp.fail(f"the channels ({c}) are not a multiple of blocksize^2 ({bs * bs})")
        mode = a.get("mode", b"DCR")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if mode not in ("DCR", "CRD"):
            raise imp.fail(f"mode must be DCR or CRD, got {mode}")
        if mode == "DCR":
            mid, perm = (n, bs, bs, c // (bs * bs), h, w), (0, 3, 4, 1, 5, 2)
        else:
            mid, perm = (n, c // (bs * bs), bs, bs, h, w), (0, 1, 4, 2, 5, 3)
        final = (n, c // (bs * bs), h * bs, w * bs)
    else:
        if h % bs or w % bs:
            raise imp.fail(f"the height and width ({h}, {w}) are not multiples of {bs}")
        mid, perm = (n, c, h // bs, bs, w // bs, bs), (0, 3, 5, 1, 2, 4)
        final = (n, c * bs * bs, h // bs, w // bs)
    attr, dt = imp.result_quant(q)
    if q is None and nn.quant_of(x.ssa) is not None:
        attr, dt = nn.quant_of(x.ssa), nn.dtype_of(x.ssa)
    xp = imp.to_plain(x)
    same = {"dtype": nn.dtype_of(xp.ssa), "quant": nn.quant_of(xp.ssa)}
    r1 = imp.emit(nn.ReshapeOp, [xp.ssa], result_shapes=[mid], **same)  # type: ignore[arg-type]
    t = imp.emit(nn.TransposeOp, [r1.results[0]], {"perm": nn.ints_prop(perm)}, **same)  # type: ignore[arg-type]
    r2 = imp.emit(nn.ReshapeOp, [t.results[0]], dtype=dt, quant=attr, result_shapes=[final])
    imp.finish(node, r2, "plain", q)


# ----------------------------------------------------------- recurrent layers


@_handles("LSTM", "GRU")
def _recurrent(imp: _Importer, node: onnx.NodeProto) -> None:
    """LSTM and GRU, every direction, initial states and outputs; layout 1
    (batch first) is transposed to layout 0 around the op."""
    a = imp.attrs(node)
    lstm = node.op_type == "LSTM"
    gates = 4 if lstm else 3
    for key in ("activations", "activation_alpha", "activation_beta", "clip"):
        if key in a:
            raise imp.fail(f"the '{key}' attribute is not supported (default activations only)")
    if int(a.get("input_forget", 0)):
        raise imp.fail("input_forget = 1 is not supported")
    if "hidden_size" not in a:
        raise imp.fail(f"{node.op_type} needs its 'hidden_size' attribute")
    hidden = int(a["hidden_size"])
    direction = a.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else str(direction)
    if direction not in ("forward", "reverse", "bidirectional"):
        raise imp.fail(
            f'direction must be "forward", "reverse" or "bidirectional", got "{direction}"'
        )
    dirs = 2 if direction == "bidirectional" else 1
    layout = int(a.get("layout", 0))
    if layout not in (0, 1):
        raise imp.fail(f"layout must be 0 or 1, got {layout}")

    def opt(i: int) -> str:
        return node.input[i] if len(node.input) > i and node.input[i] else ""

    if lstm and opt(7):
        raise imp.fail("peephole weights (input P) are not supported")
    x = imp.to_plain(imp.value(node.input[0]))
    if len(nn.shape_of(x.ssa)) != 3:
        raise imp.fail(f"X must have rank 3, got {list(nn.shape_of(x.ssa))}")
    if layout == 1:
        x = _Val(imp.permute(x.ssa, (1, 0, 2)), "plain")
    seq, batch, _ = nn.shape_of(x.ssa)
    if opt(4):
        lens = imp.require_const(node, opt(4), "sequence_lens")
        if np.any(np.asarray(lens) != seq):
            raise imp.fail(f"sequence_lens other than the full length {seq} are not supported")

    def state(i: int, what: str) -> SSAValue:
        if not opt(i):
            return imp.weight(np.zeros((dirs, batch, hidden), np.float32), what)
        v = imp.to_plain(imp.value(opt(i)))
        return imp.permute(v.ssa, (1, 0, 2)) if layout == 1 else v.ssa

    w = imp.to_plain(imp.value(node.input[1])).ssa
    r = imp.to_plain(imp.value(node.input[2])).ssa
    b = (
        imp.to_plain(imp.value(opt(3))).ssa
        if opt(3)
        else imp.weight(np.zeros((dirs, 2 * gates * hidden), np.float32), "bias")
    )
    operands = [x.ssa, w, r, b, state(5, "initial_h")]
    props: dict[str, Attribute] = {
        "hidden_size": nn.int_prop(hidden),
        "direction": StringAttr(direction),
    }
    if lstm:
        operands.append(state(6, "initial_c"))
        cls: type[nn.NNOp] = nn.LSTMOp
    else:
        props["linear_before_reset"] = nn.int_prop(int(a.get("linear_before_reset", 0)))
        cls = nn.GRUOp
    op = imp.emit(cls, operands, props, n_results=3 if lstm else 2)
    for k, name in enumerate(node.output):
        if not name:
            continue
        v = op.results[k]
        if layout == 1:
            v = imp.permute(v, (2, 0, 1, 3) if k == 0 else (1, 0, 2))
        imp.env[name] = _Val(v, "plain")

_NEW = (
    *_PLAIN_UNARY,
    "Selu",
    "Shrink",
    "Pow",
    *_VARIADIC,
    "GlobalMaxPool",
    "ReduceMin",
    "ReduceL2",
    "ReduceProd",
    "LRN",
    "LayerNormalization",
    "InstanceNormalization",
    "Slice",
    "Tile",
    "Expand",
    "Gather",
    "DepthToSpace",
    "SpaceToDepth",
    "LSTM",
    "GRU",
)
base.SUPPORTED_OPS = tuple(sorted({*base.SUPPORTED_OPS, *_NEW}))
