"""The `nn` IR as the planner's neutral graph (`PlanGraph`).

The planner knows nothing of xDSL; this module describes a function's `nn`
ops (wherever they are nested: plain, inside `tile.stage` or `tile.chain`) as
tensors and nodes, and keeps the way back from node names to ops and from
tensor names to SSA values, so that passes can materialise the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue

from tigris_ir.dialects import nn
from tigris_ir.plan_graph import (
    BAND_AXIS,
    CHANNEL_CONCAT,
    INPUT_BAND_AXES,
    NodeInfo,
    PlanGraph,
    TensorInfo,
    TensorKind,
)
from tigris_ir.tiling import RESIZE_COORDINATES, RESIZE_MODE, RESIZE_NEAREST
from tigris_ir.tiling_class import TilingClass


@dataclass
class GraphView:
    """A PlanGraph with its way back to the IR."""

    graph: PlanGraph
    ops: dict[str, Operation] = field(default_factory=dict[str, Operation])
    values: dict[str, SSAValue] = field(default_factory=dict[str, SSAValue])
    names: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str])


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
    out_rank = len(nn.shape_of(op.results[0]))
    if isinstance(op, nn.TransposeOp):
        perm = op.ints("perm")
        # cut the output axis that comes from the input's leading non-unit axis
        shape = nn.shape_of(op.input)
        lead = next((i for i, d in enumerate(shape) if d != 1), 0)
        out_axis = perm.index(lead)
        return {BAND_AXIS: out_axis, INPUT_BAND_AXES: (lead,)}
    if isinstance(op, nn.ReduceOp):
        reduced = set(op.ints("axes") or range(len(nn.shape_of(op.input))))
        keep = [i for i in range(len(nn.shape_of(op.input))) if i not in reduced]
        if not keep:
            return {BAND_AXIS: 0, INPUT_BAND_AXES: (-1,)}
        in_axis = keep[0]
        out_axis = in_axis if op.int_("keepdims") else 0
        return {BAND_AXIS: out_axis, INPUT_BAND_AXES: (in_axis,)}
    if isinstance(op, nn.ConcatOp | nn.SplitOp):
        axis = op.int_("axis") % out_rank
        band = 0 if axis != 0 else min(1, out_rank - 1)
        return {BAND_AXIS: band}
    if isinstance(op, nn.PadOp):
        pads = op.ints("pads")
        r = out_rank
        band = next((i for i in range(r) if pads[i] == 0 and pads[r + i] == 0), 0)
        return {BAND_AXIS: band}
    return {BAND_AXIS: 0}


def _resize_attrs(op: nn.ResizeOp) -> dict[str, object]:
    """The resize's modes, so that its bands read exactly their source rows."""
    return {
        RESIZE_MODE: op.str_("mode"),
        RESIZE_COORDINATES: op.str_("coordinate_transformation_mode"),
        RESIZE_NEAREST: op.str_("nearest_mode", "round_prefer_floor"),
    }


def nn_ops(fn: func.FuncOp) -> list[nn.NNOp]:
    """The function's `nn` compute ops in program order, through stages and chains."""
    return [op for op in fn.walk() if isinstance(op, nn.NNOp)]


def build_view(fn: func.FuncOp) -> GraphView:
    """Describe a function's `nn` ops as a PlanGraph."""
    view = GraphView(PlanGraph({}, (), (), ()))
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
        tensors[name] = TensorInfo(name, nn.shape_of(v) or (1,), nn.elem_bytes(v), kind)
        return name

    inputs = [name_of(a, "input") for a in fn.body.block.args]
    returned: list[SSAValue] = []
    for op in fn.walk():
        if isinstance(op, func.ReturnOp):
            returned = list(op.arguments)
    # a stage or chain result stands for the value its tile.yield hands out
    alias: dict[SSAValue, SSAValue] = {}
    for op in fn.walk():
        regions = op.regions
        if op.name in ("tile.stage", "tile.chain") and regions:
            term = regions[0].block.last_op
            if term is not None:
                for r, v in zip(op.results, term.operands):
                    alias[r] = v

    def resolve(v: SSAValue) -> SSAValue:
        while v in alias:
            v = alias[v]
        return v

    out_values = [resolve(v) for v in returned]
    nodes: list[NodeInfo] = []
    for i, op in enumerate(nn_ops(fn)):
        ins: list[str] = []
        for v in op.operands:
            v = resolve(v)
            if isinstance(v.owner, nn.WeightOp):
                ins.append(name_of(v, "const", v.owner.ref.data))
            else:
                ins.append(name_of(v, "activation"))
        name = f"{op.name.removeprefix('nn.')}_{i}"
        outs = [
            name_of(
                r,
                "output" if r in out_values else "activation",
                name if len(op.results) == 1 else f"{name}.{j}",
            )
            for j, r in enumerate(op.results)
        ]
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
        if tiling is TilingClass.INDEPENDENT_AXIS:
            attrs.update(_band_attrs(op))
        if isinstance(op, nn.ResizeOp):
            attrs.update(_resize_attrs(op))
        nodes.append(
            NodeInfo(
                name,
                op.name,
                tiling,
                tuple(ins),
                tuple(outs),
                kernel=kernel if tiling in (TilingClass.HALO, TilingClass.EXPANDED) else (),
                strides=strides if tiling in (TilingClass.HALO, TilingClass.EXPANDED) else (),
                dilations=dilations if tiling in (TilingClass.HALO, TilingClass.EXPANDED) else (),
                pads=pads if tiling in (TilingClass.HALO, TilingClass.EXPANDED) else (),
                macs=_macs(op),
                attrs=attrs,
            )
        )
        view.ops[name] = op
    outputs = [view.names.get(v) or name_of(v, "output") for v in out_values]
    for o in outputs:
        t = tensors[o]
        if t.kind == "activation":
            tensors[o] = TensorInfo(t.name, t.shape, t.elem_bytes, "output")
    view.graph = PlanGraph(tensors, tuple(nodes), tuple(inputs), tuple(outputs))
    return view
