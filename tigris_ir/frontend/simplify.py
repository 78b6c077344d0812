"""Import-time simplification of an ONNX graph, before any `nn` op exists.

Exporters write graphs with parts that are constants once the input shape is
fixed: weights built by ConstantOfShape, Reshape/Transpose/Cast of weights,
Shape-Gather-Unsqueeze-Concat chains that compute a Reshape's target, Dropout
and Identity nodes. This module removes them from the graph the importer sees:

1. the given input shapes are written into the graph and onnx's own shape
   inference runs with data propagation (it knows every standard operator at
   every opset);
2. walking the nodes in order, a node whose inputs are all constants (graph
   initializers, Constant nodes, earlier folded nodes) is evaluated with onnx's
   reference evaluator (`onnx.reference`, at the model's opset, so each
   version's semantics holds); Shape and Size of a tensor with a static
   inferred shape become constants;
3. Identity, Dropout in inference mode (its mask output, when used, is a
   constant of ones) and a Cast to the type its input already has are removed,
   their outputs renamed to their inputs;
4. nodes whose outputs nobody reads are dropped;
5. a Reshape-Transpose-Reshape chain whose composite moves elements along one
   axis only (ShuffleNet's channel shuffle: C -> g x C/g, swap, -> C) becomes
   one Gather along that axis with constant indices, which tiles along the
   other axes, where the chain's 5-D reshapes need the whole tensor at once;
6. a Pad of zeros on the spatial axes only (a TensorFlow export's explicit
   padding before a VALID convolution), read by nothing but the data input of
   float convolutions that state their pads (no auto_pad), is folded into
   those convolutions' pads: the Pad would need its whole input and output at
   once, the convolution pads as it tiles.

Before all this, onnxruntime's QOperator nodes (QLinearConv, ...) become the
QDQ groups they stand for (`qoperator.py`), which the importer fuses.

The kept nodes remember their index in the original graph, so diagnostics
still name the node the user wrote. What was folded or removed is counted per
operator (`Simplified.folded`, `Simplified.removed`).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from tigris_ir.frontend.qoperator import expand_qoperators
from tigris_ir.reference import kernels as K

_NEVER_FOLD = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
        "If",
        "Loop",
        "Scan",
        "SequenceConstruct",
        "SequenceEmpty",
        "SequenceInsert",
        "SequenceAt",
        "SplitToSequence",
        "ConcatFromSequence",
        "Optional",
        "QuantizeLinear",
        "DequantizeLinear",
    }
)
"""Operators never evaluated at import: random ones (not constants even with
constant inputs), control flow (imported as nn.if / nn.loop), sequences, and
Quantize/DequantizeLinear (the importer fuses them with the ops they wrap:
a dequantized weight stays int8)."""

_ROUNDS = 4

_SHAPE_READERS = frozenset({"Shape", "Size", "Dropout", "Cast"})
"""Operators folded or removed from inferred facts (shapes, types) rather
than constant inputs: while some remain, another round of inference may
help."""

_SMALL = 4096
"""Initializers with at most this many elements go to shape inference with
their values (shape tensors are small); larger ones only with their types."""


@dataclass
class Simplified:
    model: onnx.ModelProto
    consts: dict[str, np.ndarray]
    """Every constant by name: initializers, Constant nodes, folded values."""
    origin_index: list[int]
    """For each node of `model.graph.node`, its index in the original graph."""
    shapes: dict[str, tuple[int | str | None, ...]]
    """Inferred shapes by value name: an int per static dimension, the symbol
    (dim_param) or None for a dynamic one."""
    folded: collections.Counter[str] = field(default_factory=collections.Counter)
    removed: collections.Counter[str] = field(default_factory=collections.Counter)
    nodes_before: int = 0

    def summary(self) -> str:
        """One line of what the simplification did, for `-v`."""

        def fmt(c: collections.Counter[str]) -> str:
            return ", ".join(f"{k} x{v}" for k, v in sorted(c.items())) or "nothing"

        return (
            f"import: {self.nodes_before} nodes -> {len(self.model.graph.node)}; "
            f"folded {sum(self.folded.values())} ({fmt(self.folded)}); "
            f"removed {sum(self.removed.values())} ({fmt(self.removed)})"
        )


def default_opset(model: onnx.ModelProto) -> int:
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 1


def subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The graph-valued attributes of a node (If's branches, Loop's body)."""
    out: list[onnx.GraphProto] = []
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            out.append(a.g)
        elif a.type == onnx.AttributeProto.GRAPHS:
            out.extend(a.graphs)
    return out


def captures(graph: onnx.GraphProto) -> set[str]:
    """Names a subgraph (or one nested in it) reads from enclosing graphs."""
    defined = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    used: set[str] = {o.name for o in graph.output}
    for n in graph.node:
        defined.update(o for o in n.output if o)
        used.update(i for i in n.input if i)
        for sub in subgraphs(n):
            used |= captures(sub)
    return used - defined


def constant_node_value(node: onnx.NodeProto) -> np.ndarray | None:
    """The value of a Constant node, None for a form without one."""
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if a.name == "value":
            return numpy_helper.to_array(v)
        if a.name == "value_float":
            return np.array(v, np.float32)
        if a.name == "value_int":
            return np.array(v, np.int64)
        if a.name == "value_floats":
            return np.array(list(v), np.float32)
        if a.name == "value_ints":
            return np.array(list(v), np.int64)
    return None


def set_input_shapes(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> None:
    """Write given shapes into the graph inputs whose dimensions are symbolic
    (a mismatch with a static dimension is left for the importer to report)."""
    for inp in model.graph.input:
        given = shapes.get(inp.name)
        if given is None:
            continue
        dims = inp.type.tensor_type.shape.dim
        if len(dims) != len(given):
            continue
        if any(
            d.HasField("dim_value") and d.dim_value > 0 and d.dim_value != g
            for d, g in zip(dims, given)
        ):
            continue
        for d, g in zip(dims, given):
            d.Clear()
            d.dim_value = g


def infer_shapes(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    consts: dict[str, np.ndarray],
) -> tuple[dict[str, tuple[int | str | None, ...]], dict[str, int]]:
    """Shapes and element types by onnx's shape inference with data
    propagation over `nodes`, given the constants known so far (small ones
    with their values, large ones only with their types)."""
    g = model.graph
    light = onnx.ModelProto()
    light.ir_version = max(model.ir_version, 4)  # initializers need not be inputs
    light.opset_import.extend(model.opset_import)
    lg = light.graph
    lg.name = g.name
    lg.input.extend(i for i in g.input if i.name not in consts)
    lg.output.extend(g.output)
    lg.node.extend(nodes)
    for name, v in consts.items():
        if v.size <= _SMALL:
            lg.initializer.append(numpy_helper.from_array(v, name))
        else:
            dt = onnx.helper.np_dtype_to_tensor_dtype(v.dtype)
            lg.input.append(onnx.helper.make_tensor_value_info(name, dt, list(v.shape)))
    try:
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=True)
    except Exception:  # inference is a help: the importer reports real problems
        inferred = light
    out: dict[str, tuple[int | str | None, ...]] = {}
    elem: dict[str, int] = {}
    ig = inferred.graph
    for vi in (*ig.input, *ig.value_info, *ig.output):
        tt = vi.type.tensor_type
        if tt.elem_type:
            elem[vi.name] = tt.elem_type
        if not tt.HasField("shape"):
            continue
        dims: list[int | str | None] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param"):
                dims.append(d.dim_param)
            else:
                dims.append(None)
        out[vi.name] = tuple(dims)
    return out, elem


class _Folder:
    def __init__(
        self,
        model: onnx.ModelProto,
        shapes: dict[str, tuple[int | str | None, ...]],
        elem: dict[str, int],
        consts: dict[str, np.ndarray],
    ):
        self.model = model
        self.opset = default_opset(model)
        self.opsets = {
            (o.domain if o.domain != "ai.onnx" else ""): int(o.version) for o in model.opset_import
        }
        self.shapes = shapes
        self.consts = consts
        self.elem = dict(elem)
        self.rename: dict[str, str] = {}
        self.folded: collections.Counter[str] = collections.Counter()
        self.removed: collections.Counter[str] = collections.Counter()
        g = model.graph
        self.pinned = {o.name for o in g.output}
        for node in g.node:
            for sub in subgraphs(node):
                self.pinned |= captures(sub)
        self.run_params = {
            "verbose": 0,
            "log": lambda *_: None,
            "new_ops": None,
            "opsets": self.opsets,
        }

    def name(self, n: str) -> str:
        return self.rename.get(n, n)

    def alias(self, out: str, src: str) -> bool:
        """Read `out` as `src` from now on (False: `out` must keep its name)."""
        if out in self.pinned:
            return False
        self.rename[out] = src
        return True

    def static_shape(self, n: str) -> tuple[int, ...] | None:
        if n in self.consts:
            return tuple(self.consts[n].shape)
        s = self.shapes.get(n)
        if s is None or any(not isinstance(d, int) for d in s):
            return None
        return tuple(int(d) for d in s)  # type: ignore[arg-type]

    def elem_type(self, n: str) -> int | None:
        if n in self.consts:
            return onnx.helper.np_dtype_to_tensor_dtype(self.consts[n].dtype)
        return self.elem.get(n)

    def evaluate(self, node: onnx.NodeProto) -> list[np.ndarray] | None:
        """The node's outputs by onnx's reference evaluator, None when it has
        no implementation (the importer then sees the node); integer Div and
        Pow and a per-row MatMulInteger by the project's definitions
        (`own_fold`)."""
        from onnx.reference.ops import load_op

        args = [self.consts[i] if i else None for i in node.input]
        own = own_fold(node.op_type, args, self.opsets.get(node.domain, self.opset))
        if own is not None:
            return None if isinstance(own, str) else own
        try:
            cls = load_op(node.domain, node.op_type, self.opsets.get(node.domain, self.opset))
            inst = cls(node, self.run_params)
        except Exception:
            return None
        try:
            res = inst.run(*args)
        except Exception:
            return None
        if not isinstance(res, tuple | list):
            res = (res,)
        outs = [np.asarray(r) for r in res]
        if len(outs) < len([o for o in node.output if o]):
            return None
        return outs

    def try_fold(self, node: onnx.NodeProto) -> str:
        """'fold' (outputs are constants), 'remove' (outputs renamed) or 'keep'."""
        t = node.op_type
        if node.domain not in ("", "ai.onnx") or t in _NEVER_FOLD:
            return "keep"
        ins = list(node.input)
        if t == "Constant":
            v = constant_node_value(node)
            if v is None:
                return "keep"
            self.consts[node.output[0]] = v
            return "fold"
        if t == "Identity":
            if ins[0] in self.consts:
                self.consts[node.output[0]] = self.consts[ins[0]]
                return "fold"
            return "remove" if self.alias(node.output[0], ins[0]) else "keep"
        if t == "Dropout":
            return self.dropout(node)
        if t == "Cast" and ins[0] not in self.consts:
            to = next((a.i for a in node.attribute if a.name == "to"), None)
            if to is not None and self.elem_type(ins[0]) == to:
                return "remove" if self.alias(node.output[0], ins[0]) else "keep"
            return "keep"
        if t in ("Shape", "Size") and ins and ins[0] not in self.consts:
            s = self.static_shape(ins[0])
            if s is None:
                return "keep"
            if t == "Size":
                self.consts[node.output[0]] = np.array(int(np.prod(s)), np.int64)
                return "fold"
            a = {x.name: x.i for x in node.attribute}
            r = len(s)
            start, end = a.get("start", 0), a.get("end", r)
            start = min(max(start + r if start < 0 else start, 0), r)
            end = min(max(end + r if end < 0 else end, 0), r)
            self.consts[node.output[0]] = np.array(s[start:end], np.int64)
            return "fold"
        if all((not i) or i in self.consts for i in ins) and not subgraphs(node):
            outs = self.evaluate(node)
            if outs is None:
                return "keep"
            for o, v in zip(node.output, outs):
                if o:
                    self.consts[o] = v
            return "fold"
        return "keep"

    def dropout(self, node: onnx.NodeProto) -> str:
        ins = list(node.input)
        if len(ins) > 2 and ins[2]:
            mode = self.consts.get(ins[2])
            if mode is None or bool(np.asarray(mode).reshape(())):
                return "keep"  # training mode: the importer refuses it by name
        if len(node.output) > 1 and node.output[1]:
            s = self.static_shape(ins[0])
            if s is None:
                return "keep"
            # opset 7-9 gives the mask the input's type, 10 on bool; ones either way
            dt = np.bool_ if self.opset >= 10 else np.float32
            self.consts[node.output[1]] = np.ones(s, dt)
        if ins[0] in self.consts:
            self.consts[node.output[0]] = self.consts[ins[0]]
            return "fold"
        if not self.alias(node.output[0], ins[0]):
            return "keep"
        return "remove"

    def run(self, nodes: list[tuple[int, onnx.NodeProto]]) -> list[tuple[int, onnx.NodeProto]]:
        kept: list[tuple[int, onnx.NodeProto]] = []
        for i, node in nodes:
            for k, n in enumerate(node.input):
                if n in self.rename:
                    node.input[k] = self.rename[n]
            what = self.try_fold(node)
            if what == "fold":
                if node.op_type != "Constant":
                    self.folded[node.op_type] += 1
            elif what == "remove":
                self.removed[node.op_type] += 1
            else:
                kept.append((i, node))
        return _live(kept, self.pinned, self.consts)


def own_fold(
    op_type: str, args: list[np.ndarray | None], opset: int
) -> list[np.ndarray] | str | None:
    """Constant nodes whose run-time definition here is not onnx's reference
    evaluator's (which computes integer Pow exactly in numpy, where
    onnxruntime goes through double, and broadcasts a per-row zero point of
    MatMulInteger along the wrong axis): their values by the project's
    kernels; "keep" for an integer division by zero (the importer refuses
    it by name); None for the evaluator."""
    ints = ("int8", "uint8", "int32", "int64")
    if op_type in ("Div", "Pow") and len(args) == 2:
        a, b = args
        if a is None or b is None:
            return None
        if op_type == "Div" and a.dtype.name in ints and b.dtype == a.dtype:
            return "keep" if np.any(b == 0) else [K.divide_integers(a, b)]
        kinds = ("float32", "int32", "int64")
        if op_type == "Pow" and a.dtype.name in kinds and b.dtype.name in kinds:
            multiply = opset >= 7 and K.pow_multiplies(a.shape, b.shape)
            return [K.power(a, b, multiply=multiply)]
    if op_type == "MatMulInteger" and len(args) > 2:
        a, b, azp = args[0], args[1], args[2]
        if a is None or b is None or azp is None:
            return None
        if a.ndim == 2 and azp.shape == (a.shape[0],):
            bzp = args[3] if len(args) > 3 and args[3] is not None else np.zeros((), np.int64)
            rows = a.astype(np.int64) - azp.astype(np.int64).reshape(-1, 1)
            return [(rows @ (b.astype(np.int64) - bzp.astype(np.int64))).astype(np.int32)]
    return None


def _live(
    kept: list[tuple[int, onnx.NodeProto]],
    pinned: set[str],
    consts: dict[str, np.ndarray],
) -> list[tuple[int, onnx.NodeProto]]:
    """The kept nodes some output of which is read (by a node, a body or the graph)."""
    needed = set(pinned)
    live: list[tuple[int, onnx.NodeProto]] = []
    for i, node in reversed(kept):
        if node.op_type == "Constant" or any(o in needed for o in node.output if o):
            live.append((i, node))
            needed.update(n for n in node.input if n)
            for sub in subgraphs(node):
                needed |= captures(sub)
    live.reverse()
    return live


def single_axis_gather(
    shape: tuple[int, ...], ops: list[tuple[str, tuple[int, ...]]]
) -> tuple[int, list[int]] | None:
    """(axis, indices) when applying `ops` (("reshape", shape) or ("transpose",
    perm), in order) to a tensor of `shape` gives a tensor of the same shape
    equal to a gather of it along one axis; None otherwise (the identity is
    not a gather here)."""
    idx = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    y = idx
    for kind, arg in ops:
        y = y.reshape(arg) if kind == "reshape" else np.transpose(y, arg)
    if y.shape != idx.shape or np.array_equal(y, idx):
        return None
    coords = np.unravel_index(y, shape)
    moved = [a for a in range(len(shape)) if not np.array_equal(coords[a], np.indices(shape)[a])]
    if len(moved) != 1:
        return None
    a = moved[0]
    line = coords[a][(0,) * a + (slice(None),) + (0,) * (len(shape) - a - 1)]
    indices = [int(v) for v in line]
    if not np.array_equal(np.take(idx, indices, axis=a), y):
        return None
    return a, indices


@dataclass
class _Rewriting:
    """What the graph rewrites after folding read and record: the inferred
    shapes, the constants (a rewrite may add one), the graph's output names
    and the count of nodes removed per kind."""

    shapes: dict[str, tuple[int | str | None, ...]]
    consts: dict[str, np.ndarray]
    outputs: set[str]
    removed: collections.Counter[str]


def _readers(nodes: list[tuple[int, onnx.NodeProto]]) -> dict[str, list[int]]:
    """Per value, the positions of the nodes reading it, once per input
    slot; -1 for an If or Loop whose bodies read it."""
    readers: dict[str, list[int]] = {}
    for k, (_, node) in enumerate(nodes):
        for n in node.input:
            if n:
                readers.setdefault(n, []).append(k)
        for sub in subgraphs(node):
            for n in sorted(captures(sub)):
                readers.setdefault(n, []).append(-1)
    return readers


def _gathers_of_shuffles(
    nodes: list[tuple[int, onnx.NodeProto]], g: _Rewriting
) -> list[tuple[int, onnx.NodeProto]]:
    """Item 5 of the module docstring: each Reshape -> Transpose -> Reshape
    chain (inner values read by nothing else) that is a gather along one axis
    becomes that Gather, numbered as the chain's first node."""
    readers = _readers(nodes)
    by_input = {n: k for k, (_, node) in enumerate(nodes) for n in node.input[:1] if n}
    drop: set[int] = set()
    out = list(nodes)

    def static(n: str) -> tuple[int, ...] | None:
        s = g.shapes.get(n)
        if s is None or not all(isinstance(d, int) and d > 0 for d in s):
            return None
        return tuple(int(d) for d in s)  # type: ignore[arg-type]

    for k, (i, r1) in enumerate(nodes):
        if r1.op_type != "Reshape" or k in drop:
            continue
        chain = [k]
        for want in ("Transpose", "Reshape"):
            v = nodes[chain[-1]][1].output[0]
            nxt = by_input.get(v)
            once = len(readers.get(v, [])) == 1
            if nxt is None or nodes[nxt][1].op_type != want or not once or v in g.outputs:
                break
            chain.append(nxt)
        if len(chain) != 3:
            continue
        t, r2 = nodes[chain[1]][1], nodes[chain[2]][1]
        x = r1.input[0]
        s0, s1, s3 = static(x), static(r1.output[0]), static(r2.output[0])
        perm = next((list(a.ints) for a in t.attribute if a.name == "perm"), None)
        if s0 is None or s1 is None or s3 is None or perm is None or int(np.prod(s0)) > 1 << 24:
            continue
        found = single_axis_gather(
            s0, [("reshape", s1), ("transpose", tuple(perm)), ("reshape", s3)]
        )
        if found is None:
            continue
        axis, indices = found
        name = f"{r2.output[0]}__gather_indices"
        g.consts[name] = np.asarray(indices, np.int64)
        gather = onnx.helper.make_node(
            "Gather", [x, name], [r2.output[0]], name=r1.name, axis=axis
        )
        out[k] = (i, gather)
        drop.update(chain[1:])
        g.removed["Reshape-Transpose-Reshape (a Gather)"] += 1
    return [n for k, n in enumerate(out) if k not in drop]


def _pad_of_zeros(
    node: onnx.NodeProto, consts: dict[str, np.ndarray], rank: int | None
) -> list[int] | None:
    """A constant-mode Pad's pads (ONNX order: every begin, then every end)
    where it adds zeros on axes 2 and on only (opset 11 and later: pads and
    value as constant inputs); None otherwise."""
    if rank is None or rank < 3 or len(node.input) < 2 or len(node.input) > 3:
        return None
    mode = next((a.s for a in node.attribute if a.name == "mode"), b"constant")
    pads = consts.get(node.input[1])
    value = consts.get(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if mode != b"constant" or pads is None or pads.size != 2 * rank:
        return None
    if len(node.input) > 2 and node.input[2] and (value is None or np.any(value != 0)):
        return None
    out = [int(v) for v in pads.reshape(-1)]
    if any(v < 0 for v in out) or any(out[a] or out[rank + a] for a in (0, 1)):
        return None
    return out


def _pads_into_convs(
    nodes: list[tuple[int, onnx.NodeProto]], g: _Rewriting
) -> list[tuple[int, onnx.NodeProto]]:
    """Item 6 of the module docstring."""
    readers = _readers(nodes)
    drop: set[int] = set()
    out = list(nodes)
    for k, (_, pad) in enumerate(nodes):
        if pad.op_type != "Pad" or not pad.output or pad.output[0] in g.outputs:
            continue
        shape = g.shapes.get(pad.input[0])
        pads = _pad_of_zeros(pad, g.consts, len(shape) if shape is not None else None)
        users = readers.get(pad.output[0], [])
        if pads is None or not users or -1 in users:
            continue
        convs = [out[u][1] for u in users]
        if not all(
            c.op_type == "Conv"
            and c.input[0] == pad.output[0]
            and pad.output[0] not in c.input[1:]
            and all(a.name != "auto_pad" or a.s in (b"", b"NOTSET") for a in c.attribute)
            and g.consts.get(c.input[1]) is not None
            and g.consts[c.input[1]].dtype == np.float32
            for c in convs
        ):
            continue
        rank = len(pads) // 2
        extra = [*pads[2:rank], *pads[rank + 2 :]]
        for u, conv in zip(users, convs, strict=True):
            own = next((list(a.ints) for a in conv.attribute if a.name == "pads"), None)
            own = own or [0] * len(extra)
            attrs = {
                a.name: onnx.helper.get_attribute_value(a)
                for a in conv.attribute
                if a.name != "pads"
            }
            new = onnx.helper.make_node(
                "Conv",
                [pad.input[0], *conv.input[1:]],
                list(conv.output),
                name=conv.name,
                pads=[a + b for a, b in zip(own, extra, strict=True)],
                **attrs,
            )
            out[u] = (out[u][0], new)
        drop.add(k)
        g.removed["Pad (into a Conv's pads)"] += 1
    return [n for k, n in enumerate(out) if k not in drop]


def simplify(
    model: onnx.ModelProto, input_shapes: dict[str, tuple[int, ...]] | None = None
) -> Simplified:
    """Simplify `model` in place (see the module docstring). Shape inference
    runs again after a round that folded something, since a folded Reshape
    target gives shapes the first inference could not see; at most
    `_ROUNDS` rounds."""
    set_input_shapes(model, dict(input_shapes or {}))
    g = model.graph
    consts = {init.name: numpy_helper.to_array(init) for init in g.initializer}
    for node in g.node:  # QOperator rewriting reads scales given as Constant nodes
        if node.op_type == "Constant" and node.output:
            v = constant_node_value(node)
            if v is not None:
                consts[node.output[0]] = v
    before = len(g.node)
    nodes = expand_qoperators(g, consts)
    folded: collections.Counter[str] = collections.Counter()
    removed: collections.Counter[str] = collections.Counter()
    shapes: dict[str, tuple[int | str | None, ...]] = {}
    for _ in range(_ROUNDS):
        shapes, elem = infer_shapes(model, [n for _, n in nodes], consts)
        folder = _Folder(model, shapes, elem, consts)
        live = folder.run(nodes)
        folded += folder.folded
        removed += folder.removed
        progress = len(live) < len(nodes)
        nodes = live
        if not progress or not any(n.op_type in _SHAPE_READERS for _, n in nodes):
            break
    rewriting = _Rewriting(shapes, consts, {o.name for o in g.output}, removed)
    nodes = _gathers_of_shuffles(nodes, rewriting)
    nodes = _pads_into_convs(nodes, rewriting)
    del g.node[:]
    g.node.extend(n for _, n in nodes)
    return Simplified(
        model=model,
        consts=consts,
        origin_index=[i for i, _ in nodes],
        shapes=shapes,
        folded=folded,
        removed=removed,
        nodes_before=before,
    )


__all__ = ["Simplified", "captures", "default_opset", "simplify", "subgraphs"]
