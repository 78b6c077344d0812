"""The neutral graph the planner works on: tensors, nodes, topological order.

No IR is needed: the `nn` dialect (or a test) describes a model as a
`PlanGraph` and the planner answers with a `Plan`. Feature maps are
channels-last, (N, H, W, C) for 2D and (N, W, C) for 1D; the axis that strips
cut is axis 1 in both (the "height" of a 1D map is its W axis). Constants
(weights) live in flash and never count toward the fast budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

from tigris_ir.plan.memory import tensor_bytes
from tigris_ir.plan.tiling_class import TilingClass

TensorKind = Literal["input", "output", "activation", "const"]
TENSOR_KINDS: tuple[str, ...] = ("input", "output", "activation", "const")

CHANNEL_CONCAT = "channel_concat"
"""attrs key of a Concat along the channel axis (a POINTWISE op that recomputes
its rows in a line-buffered chain)."""
CHANNEL_LOCAL = "channel_local"
"""attrs key of an op whose every result channel c reads only channel c of
its non-constant operands (a depthwise convolution, a pool, an elementwise op
other than a channel Concat): a band of such ops may also cut the channels
(`planner.channel_count`)."""
CHANNEL_DENSE = "channel_dense"
"""attrs key of a convolution of one group: every result channel c reads every
channel of its non-constant operand and row c of its constants (axis 0 of the
weights, the bias, per-channel scales), so a group of result channels reads
the operand whole along the channels and its rows of the constants."""
BAND_AXIS = "band_axis"
"""attrs key of an INDEPENDENT_AXIS op: the output axis the bands cut."""
INPUT_BAND_AXES = "input_band_axes"
"""attrs key of an INDEPENDENT_AXIS op: per input, the axis matching BAND_AXIS
(-1: that input is read whole); by default the same index as BAND_AXIS."""


@dataclass(frozen=True)
class TensorInfo:
    """One tensor: static shape, element size in bytes, role in the model."""

    name: str
    shape: tuple[int, ...]
    elem_bytes: int
    kind: TensorKind

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.kind not in TENSOR_KINDS:
            raise ValueError(f"tensor '{self.name}': unknown kind '{self.kind}'")
        if self.elem_bytes <= 0 or any(d <= 0 for d in self.shape):
            raise ValueError(
                f"tensor '{self.name}': bad shape {self.shape} or element size {self.elem_bytes}"
            )

    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def nbytes(self) -> int:
        return tensor_bytes(self.shape, self.elem_bytes)

    @property
    def is_const(self) -> bool:
        return self.kind == "const"

    @property
    def rows_axis(self) -> int | None:
        """The axis bands cut by default: H of (N, H, W, C), W of (N, W, C),
        the rows of a matrix; None for a scalar."""
        if self.rank >= 3:
            return 1
        return 0 if self.rank >= 1 else None

    @property
    def height(self) -> int:
        axis = self.rows_axis
        return 1 if axis is None else self.shape[axis]

    @property
    def row_bytes(self) -> int:
        """Bytes of one row along `rows_axis` (contiguous when N == 1)."""
        return self.nbytes // self.height

    @property
    def width(self) -> int:
        """Columns a 2D tile cuts: W of a rank-4 map, 1 otherwise."""
        return self.shape[2] if self.rank == 4 else 1

    @property
    def cell_bytes(self) -> int:
        """Bytes of one (row, column) position of a rank-4 map: N * C * elem."""
        return self.row_bytes // self.width


@dataclass(frozen=True)
class NodeInfo:
    """One operator.

    kernel, strides and dilations have one entry per spatial axis, height
    first; pads follow ONNX order (all begins, then all ends). `tiling` is the
    op's row of the spec's tileability table.
    """

    name: str
    op: str
    tiling: TilingClass
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    kernel: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dilations: tuple[int, ...] = ()
    pads: tuple[int, ...] = ()
    macs: int = 0
    attrs: Mapping[str, Any] = field(default_factory=dict[str, Any], hash=False)

    def __post_init__(self) -> None:
        for key in ("inputs", "outputs", "kernel", "strides", "dilations", "pads"):
            object.__setattr__(self, key, tuple(getattr(self, key)))
        if not isinstance(self.tiling, TilingClass):
            raise ValueError(f"node '{self.name}': tiling must be a TilingClass")
        n = len(self.kernel)
        if self.tiling in (TilingClass.HALO, TilingClass.EXPANDED) and n == 0:
            raise ValueError(f"node '{self.name}': a {self.tiling.value} op needs a kernel")
        for key in ("strides", "dilations"):
            vals = getattr(self, key)
            if vals and (len(vals) != n or any(v < 1 for v in vals)):
                raise ValueError(f"node '{self.name}': {key} {vals} for kernel {self.kernel}")
        if self.pads and (len(self.pads) != 2 * n or any(p < 0 for p in self.pads)):
            raise ValueError(f"node '{self.name}': pads {self.pads} for kernel {self.kernel}")
        if any(k < 1 for k in self.kernel) or self.macs < 0:
            raise ValueError(f"node '{self.name}': bad kernel {self.kernel} or macs")

    def window(self, axis: int = 0) -> tuple[int, int, int, int, int]:
        """(kernel, stride, dilation, pad_begin, pad_end) along spatial `axis`."""
        n = len(self.kernel)
        if axis >= n:
            return (1, 1, 1, 0, 0)
        s = self.strides[axis] if self.strides else 1
        d = self.dilations[axis] if self.dilations else 1
        pb = self.pads[axis] if self.pads else 0
        pe = self.pads[n + axis] if self.pads else 0
        return (self.kernel[axis], s, d, pb, pe)

    @property
    def is_channel_concat(self) -> bool:
        return bool(self.attrs.get(CHANNEL_CONCAT, False))

    @property
    def is_channel_local(self) -> bool:
        return bool(self.attrs.get(CHANNEL_LOCAL, False))

    @property
    def is_channel_dense(self) -> bool:
        return bool(self.attrs.get(CHANNEL_DENSE, False))


@dataclass(frozen=True)
class PlanGraph:
    """Tensors by name and nodes in topological order, with use tables."""

    tensors: Mapping[str, TensorInfo]
    nodes: tuple[NodeInfo, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    _producer: dict[str, int] = field(init=False, repr=False, compare=False)
    _consumers: dict[str, tuple[int, ...]] = field(init=False, repr=False, compare=False)
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        producer: dict[str, int] = {}
        consumers: dict[str, list[int]] = {}
        index: dict[str, int] = {}
        for name, t in self.tensors.items():
            if name != t.name:
                raise ValueError(f"tensor key '{name}' names tensor '{t.name}'")
        for name in self.inputs:
            self._tensor(name, "graph input")
        for k, node in enumerate(self.nodes):
            if node.name in index:
                raise ValueError(f"two nodes are named '{node.name}'")
            index[node.name] = k
            for name in node.inputs:
                t = self._tensor(name, f"input of '{node.name}'")
                if not t.is_const and name not in producer and name not in self.inputs:
                    raise ValueError(
                        f"node '{node.name}' reads '{name}' before any node produces it "
                        "(nodes must be in topological order)"
                    )
                uses = consumers.setdefault(name, [])
                if not uses or uses[-1] != k:
                    uses.append(k)
            for name in node.outputs:
                t = self._tensor(name, f"output of '{node.name}'")
                if name in producer or name in self.inputs or t.is_const:
                    raise ValueError(f"tensor '{name}' is produced twice or is not an activation")
                producer[name] = k
        for name in self.outputs:
            self._tensor(name, "graph output")
            if name not in producer and name not in self.inputs:
                raise ValueError(f"graph output '{name}' is never produced")
        object.__setattr__(self, "_producer", producer)
        object.__setattr__(self, "_consumers", {k: tuple(v) for k, v in consumers.items()})
        object.__setattr__(self, "_index", index)

    def _tensor(self, name: str, what: str) -> TensorInfo:
        if name not in self.tensors:
            raise ValueError(f"unknown tensor '{name}' ({what})")
        return self.tensors[name]

    def producer(self, name: str) -> int | None:
        """Index of the node producing `name`; None for inputs and constants."""
        return self._producer.get(name)

    def consumers(self, name: str) -> tuple[int, ...]:
        """Indices of the nodes reading `name`, ascending, each once."""
        return self._consumers.get(name, ())

    def last_use(self, name: str) -> int:
        """Index of the last node reading `name`; len(nodes) for a graph output
        (it stays live to the end); -1 when nothing reads it."""
        if name in self.outputs:
            return len(self.nodes)
        uses = self.consumers(name)
        return uses[-1] if uses else -1

    def node_index(self, name: str) -> int:
        return self._index[name]

    @property
    def total_macs(self) -> int:
        return sum(n.macs for n in self.nodes)

    def part(self, start: int, stop: int) -> PlanGraph:
        """Nodes [start, stop) as a graph of their own: its inputs are the
        activations they read that an earlier node (or the caller) made, its
        outputs the tensors they make that a later node reads or the model
        gives. Planned alone, a part shows what its ops need of a plan that
        runs the model part after part (each part's outputs whole between
        them)."""
        if not 0 <= start < stop <= len(self.nodes):
            raise ValueError(f"nodes [{start}, {stop}) of a graph of {len(self.nodes)}")
        nodes = self.nodes[start:stop]
        made = {o for n in nodes for o in n.outputs}
        ins = dict.fromkeys(
            x for n in nodes for x in n.inputs if not self.tensors[x].is_const and x not in made
        )
        outs = dict.fromkeys(
            o for n in nodes for o in n.outputs if self.last_use(o) >= stop
        )
        tensors: dict[str, TensorInfo] = {}
        for n in nodes:
            for x in (*n.inputs, *n.outputs):
                t = self.tensors[x]
                kind = "input" if x in ins else "output" if x in outs else t.kind
                tensors[x] = t if t.kind == kind else replace(t, kind=kind)
        return PlanGraph(tensors, nodes, tuple(ins), tuple(outs))

    def cuts(self) -> tuple[int, ...]:
        """The node indices k where one activation alone is live across k
        (made by nodes [0, k) or a model input they read, and read by nodes
        [k, n) or given by the model): a block boundary, where `part(0, k)`
        gives that activation alone. Ascending."""
        found = []
        live: dict[str, int] = {}  # crossing activations, by last reader
        for k, node in enumerate(self.nodes):
            if k and len(live) == 1:
                found.append(k)
            for o in node.outputs:
                live[o] = self.last_use(o)
            for x in node.inputs:
                if x in self.inputs and not self.tensors[x].is_const:
                    live.setdefault(x, self.last_use(x))
            live = {x: last for x, last in live.items() if last > k}
        return tuple(found)


def _same_pads(size: int, kernel: int, stride: int, dilation: int) -> tuple[int, int]:
    """ONNX SAME_UPPER padding: output ceil(size / stride), extra pad at the end."""
    eff = (kernel - 1) * dilation + 1
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


@dataclass
class GraphBuilder:
    """Builds a PlanGraph by hand with shape inference (tests, examples).

    Feature maps are channels-last; a rank-3 input makes 1D convolutions.
    """

    elem_bytes: int = 1
    tensors: dict[str, TensorInfo] = field(default_factory=dict[str, TensorInfo])
    nodes: list[NodeInfo] = field(default_factory=list[NodeInfo])
    graph_inputs: list[str] = field(default_factory=list[str])
    graph_outputs: list[str] = field(default_factory=list[str])

    def _new(self, prefix: str) -> str:
        return f"{prefix}{len(self.nodes)}"

    def _tensor(self, name: str, shape: Sequence[int], kind: TensorKind, eb: int | None) -> str:
        if name in self.tensors:
            raise ValueError(f"tensor '{name}' already exists")
        self.tensors[name] = TensorInfo(name, tuple(shape), eb or self.elem_bytes, kind)
        return name

    def shape(self, name: str) -> tuple[int, ...]:
        return self.tensors[name].shape

    def input(self, name: str, shape: Sequence[int], elem_bytes: int | None = None) -> str:
        self.graph_inputs.append(name)
        return self._tensor(name, shape, "input", elem_bytes)

    def const(self, name: str, shape: Sequence[int], elem_bytes: int | None = None) -> str:
        return self._tensor(name, shape, "const", elem_bytes)

    def node(
        self,
        op: str,
        tiling: TilingClass,
        inputs: Sequence[str],
        out_shapes: Sequence[Sequence[int]],
        *,
        name: str | None = None,
        elem_bytes: int | None = None,
        **fields: Any,
    ) -> tuple[str, ...]:
        """Appends any node; returns the names of its new output tensors."""
        name = name or self._new(op.split(".")[-1])
        if elem_bytes is None and inputs:
            elem_bytes = self.tensors[inputs[0]].elem_bytes
        eb = elem_bytes
        outs = tuple(
            self._tensor(f"{name}:{i}" if len(out_shapes) > 1 else name, s, "activation", eb)
            for i, s in enumerate(out_shapes)
        )
        self.nodes.append(NodeInfo(name, op, tiling, tuple(inputs), outs, **fields))
        return outs

    def window(
        self,
        op: str,
        x: str,
        out_ch: int,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        pad: str | int | Sequence[int] = "same",
        *,
        groups: int = 1,
        weights: bool = True,
        name: str | None = None,
    ) -> str:
        """A Conv/DepthwiseConv/pool over a rank-3 (1D) or rank-4 (2D) map."""
        shape = self.shape(x)
        n = len(shape) - 2
        ks = (kernel,) * n if isinstance(kernel, int) else tuple(kernel)
        ss = (stride,) * n if isinstance(stride, int) else tuple(stride)
        ds = (dilation,) * n if isinstance(dilation, int) else tuple(dilation)
        if pad == "same":
            pairs = [_same_pads(shape[1 + a], ks[a], ss[a], ds[a]) for a in range(n)]
            pads = tuple(p[0] for p in pairs) + tuple(p[1] for p in pairs)
        elif isinstance(pad, int):
            pads = (pad,) * (2 * n)
        else:
            pads = tuple(int(p) for p in pad)  # type: ignore[union-attr]
        spatial = []
        for a in range(n):
            eff = (ks[a] - 1) * ds[a] + 1
            spatial.append((shape[1 + a] + pads[a] + pads[n + a] - eff) // ss[a] + 1)
        out_shape = (shape[0], *spatial, out_ch)
        cin = shape[-1]
        macs = math.prod(out_shape) * math.prod(ks) * (cin // groups) if weights else 0
        inputs = [x]
        node_name = name or self._new(op.split(".")[-1])
        local = out_ch == cin and (groups == cin or not weights)
        attrs: dict[str, object] = {CHANNEL_LOCAL: True} if local else {}
        if not local and groups == 1 and weights:
            attrs[CHANNEL_DENSE] = True
        if weights:
            w = self.const(f"{node_name}.w", (out_ch, *ks, cin // groups))
            inputs.append(w)
        (out,) = self.node(
            op,
            TilingClass.HALO,
            inputs,
            [out_shape],
            name=node_name,
            kernel=ks,
            strides=ss,
            dilations=ds,
            pads=pads,
            macs=macs,
            attrs=attrs,
        )
        return out

    def conv(
        self,
        x: str,
        out_ch: int,
        kernel: int | Sequence[int] = 3,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        pad: str | int | Sequence[int] = "same",
        *,
        name: str | None = None,
    ) -> str:
        return self.window("nn.conv", x, out_ch, kernel, stride, dilation, pad, name=name)

    def dwconv(
        self,
        x: str,
        kernel: int | Sequence[int] = 3,
        stride: int | Sequence[int] = 1,
        dilation: int | Sequence[int] = 1,
        pad: str | int | Sequence[int] = "same",
        *,
        name: str | None = None,
    ) -> str:
        c = self.shape(x)[-1]
        return self.window("nn.conv", x, c, kernel, stride, dilation, pad, groups=c, name=name)

    def pool(
        self,
        x: str,
        kernel: int | Sequence[int] = 2,
        stride: int | Sequence[int] | None = None,
        pad: str | int | Sequence[int] = 0,
        *,
        op: str = "nn.max_pool",
        name: str | None = None,
    ) -> str:
        c = self.shape(x)[-1]
        stride = kernel if stride is None else stride
        return self.window(op, x, c, kernel, stride, 1, pad, weights=False, name=name)

    def pointwise(self, op: str, *xs: str, name: str | None = None) -> str:
        shape = self.shape(xs[0])
        (out,) = self.node(
            op, TilingClass.POINTWISE, xs, [shape], name=name, attrs={CHANNEL_LOCAL: True}
        )
        return out

    def relu(self, x: str, name: str | None = None) -> str:
        return self.pointwise("nn.relu", x, name=name)

    def add(self, a: str, b: str, name: str | None = None) -> str:
        return self.pointwise("nn.add", a, b, name=name)

    def concat(self, *xs: str, name: str | None = None) -> str:
        """Concat along the channel (last) axis."""
        shape = self.shape(xs[0])
        c = sum(self.shape(x)[-1] for x in xs)
        (out,) = self.node(
            "nn.concat",
            TilingClass.POINTWISE,
            xs,
            [(*shape[:-1], c)],
            name=name,
            attrs={CHANNEL_CONCAT: True},
        )
        return out

    def softmax(self, x: str, name: str | None = None) -> str:
        (out,) = self.node("nn.softmax", TilingClass.WHOLE_ROWS, [x], [self.shape(x)], name=name)
        return out

    def global_avg_pool(self, x: str, name: str | None = None) -> str:
        shape = self.shape(x)
        out_shape = (shape[0], *([1] * (len(shape) - 2)), shape[-1])
        (out,) = self.node(
            "nn.global_average_pool",
            TilingClass.ACCUMULATE,
            [x],
            [out_shape],
            name=name,
            macs=math.prod(shape),
        )
        return out

    def flatten(self, x: str, name: str | None = None) -> str:
        shape = self.shape(x)
        (out,) = self.node(
            "nn.flatten",
            TilingClass.MATRIX_ROWS,
            [x],
            [(shape[0], math.prod(shape[1:]))],
            name=name,
        )
        return out

    def reshape(self, x: str, shape: Sequence[int], name: str | None = None) -> str:
        if math.prod(shape) != math.prod(self.shape(x)):
            raise ValueError(f"reshape {self.shape(x)} -> {tuple(shape)} changes the size")
        (out,) = self.node("nn.reshape", TilingClass.RESHAPE, [x], [shape], name=name)
        return out

    def gemm(self, x: str, n_out: int, name: str | None = None) -> str:
        k = self.shape(x)[-1]
        node_name = name or self._new("gemm")
        w = self.const(f"{node_name}.w", (k, n_out))
        (out,) = self.node(
            "nn.gemm",
            TilingClass.MATRIX_ROWS,
            [x, w],
            [(*self.shape(x)[:-1], n_out)],
            name=node_name,
            macs=math.prod(self.shape(x)[:-1]) * k * n_out,
        )
        return out

    def matmul(self, a: str, b: str, name: str | None = None) -> str:
        sa, sb = self.shape(a), self.shape(b)
        (out,) = self.node(
            "nn.matmul",
            TilingClass.MATRIX_ROWS,
            [a, b],
            [(*sa[:-1], sb[-1])],
            name=name,
            macs=math.prod(sa) * sb[-1],
        )
        return out

    def resize(self, x: str, scale: int, name: str | None = None) -> str:
        n, h, w, c = self.shape(x)
        (out,) = self.node(
            "nn.resize", TilingClass.RESIZE, [x], [(n, h * scale, w * scale, c)], name=name
        )
        return out

    def conv_transpose(
        self,
        x: str,
        out_ch: int,
        kernel: int = 2,
        stride: int = 2,
        pad: int = 0,
        name: str | None = None,
    ) -> str:
        n, h, w, c = self.shape(x)
        ho = (h - 1) * stride - 2 * pad + kernel
        wo = (w - 1) * stride - 2 * pad + kernel
        node_name = name or self._new("conv_transpose")
        wt = self.const(f"{node_name}.w", (c, kernel, kernel, out_ch))
        (out,) = self.node(
            "nn.conv_transpose",
            TilingClass.EXPANDED,
            [x, wt],
            [(n, ho, wo, out_ch)],
            name=node_name,
            kernel=(kernel, kernel),
            strides=(stride, stride),
            dilations=(1, 1),
            pads=(pad, pad, pad, pad),
            macs=n * h * w * c * kernel * kernel * out_ch,
        )
        return out

    def whole(self, op: str, x: str, out_shape: Sequence[int], name: str | None = None) -> str:
        (out,) = self.node(op, TilingClass.WHOLE, [x], [out_shape], name=name)
        return out

    def output(self, *names: str) -> None:
        self.graph_outputs.extend(names)

    def build(self) -> PlanGraph:
        tensors = dict(self.tensors)
        for name in self.graph_outputs:
            if tensors[name].kind == "activation":
                tensors[name] = replace(tensors[name], kind="output")
        return PlanGraph(
            tensors, tuple(self.nodes), tuple(self.graph_inputs), tuple(self.graph_outputs)
        )
