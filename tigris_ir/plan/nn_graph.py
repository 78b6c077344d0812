"""The `nn` IR as the planner's neutral graph (`PlanGraph`).

The planner knows nothing of xDSL; this module describes a function's `nn`
ops (wherever they are nested: plain, inside `tile.stage` or `tile.chain`) as
tensors and nodes, and keeps the way back from node names to ops and from
tensor names to SSA values, so that passes can materialise the plan. The
bodies of `nn.if` and `nn.loop` are graphs of their own (`build_body_view`);
in the enclosing graph the op is one node.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import nn
from tigris_ir.plan.graph import (
    BAND_AXIS,
    CHANNEL_CONCAT,
    CHANNEL_DENSE,
    CHANNEL_LOCAL,
    INPUT_BAND_AXES,
    NodeInfo,
    PlanGraph,
    TensorInfo,
    TensorKind,
)
from tigris_ir.plan.tiling import RESIZE_COORDINATES, RESIZE_MODE, RESIZE_NEAREST
from tigris_ir.plan.tiling_class import TilingClass


@dataclass
class GraphView:
    """A PlanGraph with its way back to the IR."""

    graph: PlanGraph
    ops: dict[str, Operation] = field(default_factory=dict[str, Operation])
    values: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    names: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])
    workspace: dict[str, int] = field(default_factory=dict[str, int])
    """Tensors standing for an If or Loop body's peak (name -> bytes); no IR value."""
    scalars: dict[str, str] = field(default_factory=dict[str, str])
    """A Loop's trip number and condition (name -> numpy dtype name): the fixed
    places its body reads them from each trip; no IR value."""
    alias: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    """A stage or chain result -> the value it stands for."""

    def tensor_of(self, v: SSAValue) -> str | None:
        """The graph tensor of an IR value (through stage and chain results)."""
        while v in self.alias:
            v = self.alias[v]
        return self.names.get(v)


def _macs(op: nn.NNOp) -> int:
    if isinstance(op, nn.ConvOp | nn.GemmOp | nn.MatMulOp):
        return op.macs()
    if isinstance(op, nn.ConvTransposeOp):
        ws = nn.shape_of(op.weight)
        return math.prod(nn.shape_of(op.input)) * math.prod(ws[1:])
    if isinstance(op, nn.WindowOp):
        return math.prod(nn.shape_of(op.results[0])) * math.prod(op.kernel())
    return 0


def _band_attrs(op: nn.NNOp) -> dict[str, object]:
    """Which axis the bands of an independent-axis op cut, per output and input."""
    stated = op.independent_axes()
    if stated is not None:
        return {BAND_AXIS: stated[0], INPUT_BAND_AXES: stated[1]}
    out_rank = len(nn.shape_of(op.results[0]))
    if isinstance(op, nn.TransposeOp):
        perm = op.ints("perm")
        # cut the output axis that comes from the input's leading non-unit axis
        shape = nn.shape_of(op.input)
        lead = next((i for i, d in enumerate(shape) if d != 1), 0)
        out_axis = perm.index(lead)
        return {BAND_AXIS: out_axis, INPUT_BAND_AXES: (lead,)}
    if isinstance(op, nn.ReduceOp):
        shape = nn.shape_of(op.input)
        reduced = set(op.ints("axes") or range(len(shape)))
        keep = [i for i in range(len(shape)) if i not in reduced]
        if not keep:
            return {BAND_AXIS: 0, INPUT_BAND_AXES: (-1,)}
        in_axis = _leading_cut(shape, keep)
        out_axis = in_axis if op.int_("keepdims") else keep.index(in_axis)
        return {BAND_AXIS: out_axis, INPUT_BAND_AXES: (in_axis,)}
    if isinstance(op, nn.ConcatOp | nn.SplitOp):
        shape = nn.shape_of(op.results[0])
        axis = op.int_("axis") % out_rank
        free = [i for i in range(out_rank) if i != axis]
        band = _leading_cut(shape, free) if free else 0
        return {BAND_AXIS: band}
    if isinstance(op, nn.PadOp):
        pads = op.ints("pads")
        r = out_rank
        free = [i for i in range(r) if pads[i] == 0 and pads[r + i] == 0]
        band = _leading_cut(nn.shape_of(op.results[0]), free) if free else 0
        return {BAND_AXIS: band}
    return {BAND_AXIS: 0}


def _leading_cut(shape: tuple[int, ...], axes: list[int]) -> int:
    """Of the axes an op leaves independent, the first of more than one
    element (H of a channel split of an (N, H, W, C) map, not N = 1): bands
    of it can be cut; the first of them if all are single."""
    return next((a for a in axes if shape[a] > 1), axes[0])


def _resize_attrs(op: nn.ResizeOp) -> dict[str, object]:
    """The resize's modes, so that its bands read exactly their source rows."""
    return {
        RESIZE_MODE: op.str_("mode"),
        RESIZE_COORDINATES: op.str_("coordinate_transformation_mode"),
        RESIZE_NEAREST: op.str_("nearest_mode", "round_prefer_floor"),
    }


def scope_ops(block: Block) -> list[Operation]:
    """The nodes of one graph in program order: `nn` compute ops and `nn.if` /
    `nn.loop` ops, through stages and chains but not into the bodies of control
    flow, which are graphs of their own."""
    out: list[Operation] = []

    def visit(b: Block) -> None:
        for op in b.ops:
            if isinstance(op, nn.NNOp | nn.ControlFlowOp):
                out.append(op)
            elif op.name in ("tile.stage", "tile.chain"):
                for region in op.regions:
                    for inner in region.blocks:
                        visit(inner)

    visit(block)
    return out


def nn_ops(fn: func.FuncOp) -> list[nn.NNOp]:
    """The function's `nn` compute ops in program order, through stages and
    chains (not inside If and Loop bodies)."""
    return [op for op in scope_ops(fn.body.block) if isinstance(op, nn.NNOp)]


def control_flow_ops(block: Block) -> list[nn.ControlFlowOp]:
    """The `nn.if` and `nn.loop` nodes of one graph."""
    return [op for op in scope_ops(block) if isinstance(op, nn.ControlFlowOp)]


@dataclass(frozen=True)
class BodyNeed:
    """What the bodies of one If or Loop add to its node in the enclosing plan:
    `peak`, the largest body plan's fast peak, held while the node runs (a
    tensor of that many bytes the node alone uses), and `macs`, per run."""

    peak: int
    macs: int


def _aliases(root: Operation | Block) -> dict[SSAValue, SSAValue]:
    """A stage or chain result stands for the value its tile.yield hands out."""
    alias: dict[SSAValue, SSAValue] = {}
    for op in root.walk():
        regions = op.regions
        if op.name in ("tile.stage", "tile.chain") and regions:
            term = regions[0].block.last_op
            if term is not None:
                for r, v in zip(op.results, term.operands):
                    alias[r] = v
    return alias


def build_view(fn: func.FuncOp, needs: Mapping[Operation, BodyNeed] | None = None) -> GraphView:
    """Describe a function's `nn` ops as a PlanGraph.

    An `nn.if` or `nn.loop` is one node that runs whole; it reads its operands
    and every outer value its bodies capture. With `needs`, it also produces
    a workspace tensor of its bodies' peak (see `BodyNeed`).
    """
    block = fn.body.block
    returned: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            returned = list(op.arguments)
    for i, v in enumerate(returned):
        if isinstance(v.owner, nn.WeightOp):
            raise PassFailedException(
                f"output #{i} is the weight '{v.owner.ref.data}' itself: a plan writes "
                "every output of the function, so a constant output is copied into one "
                "by an op (nn.identity, as the importer does)"
            )
    return _build(block, list(block.args), returned, _aliases(fn), needs or {}, False)


def build_body_view(region: Region, needs: Mapping[Operation, BodyNeed] | None = None) -> GraphView:
    """Describe an If or Loop body as a PlanGraph of its own: its inputs are the
    block arguments and the outer values it reads, its outputs what it yields
    (a yielded constant stays in flash and is no output)."""
    block = region.block
    term = block.last_op
    returned = list(term.operands) if isinstance(term, nn.YieldOp) else []
    owner = region.parent_op()
    root = owner if owner is not None else block
    return _build(block, list(block.args), returned, _aliases(root), needs or {}, True)


def _build(
    block: Block,
    args: Sequence[SSAValue],
    returned: Sequence[SSAValue],
    alias: Mapping[SSAValue, SSAValue],
    needs: Mapping[Operation, BodyNeed],
    outer_inputs: bool,
) -> GraphView:
    view = GraphView(PlanGraph({}, (), (), ()), alias=dict(alias))
    tensors: dict[str, TensorInfo] = {}
    counter = 0

    def name_of(v: SSAValue, kind: TensorKind, base: str | None = None) -> str:
        nonlocal counter
        if v in view.names:
            return view.names[v]
        base = v.name_hint or base or f"v{counter}"
        counter += 1
        name = base if base not in tensors else f"{base}_{counter}"
        view.names[v] = name
        view.values[name] = v
        tensors[name] = TensorInfo(name, nn.shape_of(v) or (1,), nn.value_bytes(v), kind)
        return name

    def resolve(v: SSAValue) -> SSAValue:
        while v in alias:
            v = alias[v]
        return v

    inputs = [name_of(a, "input") for a in args]
    out_values = [resolve(v) for v in returned]
    if outer_inputs:  # a body may yield a constant: it stays in flash
        out_values = [v for v in out_values if not isinstance(v.owner, nn.WeightOp)]

    def operand(v: SSAValue) -> str:
        v = resolve(v)
        if isinstance(v.owner, nn.WeightOp):
            return name_of(v, "const", v.owner.ref.data)
        if outer_inputs and v not in view.names:
            inputs.append(name_of(v, "input"))  # a value of an enclosing graph
            return inputs[-1]
        return name_of(v, "activation")

    nodes: list[NodeInfo] = []
    for i, op in enumerate(scope_ops(block)):
        name = f"{op.name.removeprefix('nn.')}_{i}"
        if isinstance(op, nn.ControlFlowOp):
            ins = list(dict.fromkeys(operand(v) for v in (*op.operands, *op.captured())))
        else:
            ins = [operand(v) for v in op.operands]
        outs = [
            name_of(
                r,
                "output" if r in out_values else "activation",
                name if len(op.results) == 1 else f"{name}.{j}",
            )
            for j, r in enumerate(op.results)
        ]
        view.ops[name] = op
        if isinstance(op, nn.ControlFlowOp):
            nodes.append(_control_node(op, name, ins, outs, needs.get(op), tensors, view))
        else:
            assert isinstance(op, nn.NNOp)
            nodes.append(_node(op, name, ins, outs))
    if outer_inputs:  # a body may hand out an outer value unchanged
        inputs.extend(name_of(v, "input") for v in out_values if v not in view.names)
    outputs = [view.names.get(v) or name_of(v, "output") for v in out_values]
    for o in outputs:
        t = tensors[o]
        if t.kind == "activation":
            tensors[o] = TensorInfo(t.name, t.shape, t.elem_bytes, "output")
    view.graph = PlanGraph(tensors, tuple(nodes), tuple(inputs), tuple(outputs))
    return view


def _control_node(
    op: nn.ControlFlowOp,
    name: str,
    ins: Sequence[str],
    outs: Sequence[str],
    need: BodyNeed | None,
    tensors: dict[str, TensorInfo],
    view: GraphView,
) -> NodeInfo:
    """An If or Loop as one node that runs whole: it holds its operands and
    results while a body runs, and the body's own peak on top of them."""
    outs = list(outs)
    if isinstance(op, nn.LoopOp):  # the trip number and condition of every trip
        for suffix, dtype in LOOP_SCALARS:
            t = f"{name}.{suffix}"
            tensors[t] = TensorInfo(t, (1,), np.dtype(dtype).itemsize, "activation")
            view.scalars[t] = dtype
            outs.append(t)
    if need is not None and need.peak > 0:
        ws = f"{name}.body"
        tensors[ws] = TensorInfo(ws, (need.peak,), 1, "activation")
        view.workspace[ws] = need.peak
        outs.append(ws)
    return NodeInfo(
        name,
        op.name,
        op.tiling(),
        tuple(ins),
        tuple(outs),
        macs=need.macs if need is not None else 0,
    )


LOOP_SCALARS = (("trip", "int64"), ("go", "bool"))
"""The tensors a Loop node holds for its body beside its operands and results:
the trip number and the condition its body reads (suffixes of the node name)."""


def _channel_local(op: nn.NNOp, tiling: TilingClass) -> bool:
    """Result channel c reads only channel c of the operands: an elementwise
    op, a max or average pool, a depthwise convolution of multiplier one."""
    if tiling is TilingClass.POINTWISE:
        return True
    if isinstance(op, nn.MaxPoolOp | nn.AveragePoolOp):
        return True
    if isinstance(op, nn.ConvOp):
        c = nn.shape_of(op.input)[-1]
        return op.groups() == c == nn.shape_of(op.output)[-1] and c > 1
    return False


def _node(op: nn.NNOp, name: str, ins: Sequence[str], outs: Sequence[str]) -> NodeInfo:
    tiling = op.tiling()
    attrs: dict[str, object] = {}
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    pads: tuple[int, ...] = ()
    if isinstance(op, nn.WindowOp):
        kernel, strides, pads = op.kernel(), op.strides(), op.pads()
        dilations = op.dilations()
    elif isinstance(op, nn.GlobalAveragePoolOp):
        kernel = tuple(nn.shape_of(op.input)[1:-1])
    if isinstance(op, nn.ConcatOp) and tiling is TilingClass.POINTWISE:
        attrs[CHANNEL_CONCAT] = True
    elif _channel_local(op, tiling):
        attrs[CHANNEL_LOCAL] = True
    elif isinstance(op, nn.ConvOp) and op.groups() == 1:
        attrs[CHANNEL_DENSE] = True
    if tiling is TilingClass.INDEPENDENT_AXIS:
        attrs.update(_band_attrs(op))
    if isinstance(op, nn.ResizeOp):
        attrs.update(_resize_attrs(op))
    windowed = tiling in (TilingClass.HALO, TilingClass.EXPANDED)
    return NodeInfo(
        name,
        op.name,
        tiling,
        tuple(ins),
        tuple(outs),
        kernel=kernel if windowed else (),
        strides=strides if windowed else (),
        dilations=dilations if windowed else (),
        pads=pads if windowed else (),
        macs=_macs(op),
        attrs=attrs,
    )
