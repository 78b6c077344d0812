"""`lower-to-loops`: the plan as loop-level IR (scf, memref, arith, loop).

The function becomes its schedule (`tigris_ir.loops.schedule.schedule`):
model inputs are `"slow"` memref arguments and outputs returned memrefs
(`"fast"` ones when the plan runs in place); a tensor crossing a unit
boundary is a `"slow"` `memref.alloc` from the start of its producing unit
to the end of its last reader. Per unit:

* a normal stage: `memref.alloc` of each fast buffer where the planner's cost
  model allocates it, `memref.copy` of whole inputs in and outputs out,
  `loop.band` on whole tensors, `memref.dealloc` at last use;
* a tiled stage or chain: every buffer allocated once (at the plan's rows),
  then `scf.for` over the tiles. Each tile's exact row ranges come from a
  table (`memref.global` of index values, one row per tile, column names in
  `loop.columns`): `memref.subview` + `memref.copy` move a line buffer's
  history to its start, load new rows from slow memory and spill the tile's
  output rows; `loop.band` computes each op's rows (its padding at the image
  border), `loop.accumulate` / `loop.finish` a GlobalAveragePool.

Weights become external `memref.global`s (initial value `uninitialized`,
`loop.ref` naming the weight) in the default memory space: they live in
flash. Buffers have no addresses yet: `plan-arena` gives them static offsets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    TensorType,
    UnitAttr,
    f64,
    i1,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from tigris_ir.dialects import loop, nn
from tigris_ir.loops.schedule import (
    NormalUnit,
    PlanRunError,
    Program,
    Tile,
    TiledUnit,
    operand_source,
    schedule,
    view_dtypes,
    weight_ref,
)
from tigris_ir.plan.band import Band
from tigris_ir.plan.ir import (
    PlanOptions,
    ScopePlan,
    main_func,
)
from tigris_ir.plan.nn_graph import GraphView
from tigris_ir.plan.scratch import run_blocks
from tigris_ir.plan.tiling import GraphTables, map_range, same_place


def memref_of(shape: Sequence[int], dtype: np.dtype, space: StringAttr | None) -> MemRefType:
    elem = (
        Float64Type()  # GlobalAveragePool accumulators
        if np.dtype(dtype) == np.float64
        else nn.tensor_type((1,), dtype).element_type
    )
    return MemRefType(elem, list(shape), NoneAttr(), space if space is not None else NoneAttr())


def _hint(name: str) -> str:
    """An SSA name hint for a tensor name (xDSL reads `_N` as a uniquing
    suffix, so `conv_2` becomes `conv2`)."""
    h = re.sub(r"_(\d+)", r"\1", re.sub(r"[^A-Za-z0-9_]", "_", name))
    return h if h and not h[0].isdigit() else f"t{h}"


@dataclass
class _Table:
    """Per-tile index values of one unit: columns by key."""

    keys: list[tuple[object, ...]]
    rows: list[list[int]]

    def col(self, key: tuple[object, ...]) -> int:
        return self.keys.index(key)


def _put(
    v: dict[tuple[object, ...], int],
    tile: Tile,
    held_axes: Mapping[str, list[int]],
    kind: str,
    who: object,
    t: str,
    band: Band,
) -> None:
    """Table values of a band of tensor t (empty: at its buffer's first row)."""
    for a in held_axes[t]:
        base = tile.held[t][a][0]
        lo, hi = band.get(a, (base, base))
        v[(kind, who, a, 0)] = lo
        v[(kind, who, a, 1)] = hi


class _Lowering:
    """The loop IR of one graph: the function, or (`root` given) an If / Loop
    body lowered into a block of its own, its node names and tensors prefixed
    with the body's path."""

    def __init__(
        self,
        prog: Program | None,
        view: GraphView,
        fn: func.FuncOp,
        tree: ScopePlan | None = None,
        root: _Lowering | None = None,
    ):
        self.prog = prog
        self.view = view
        self.graph = view.graph
        self.fn = fn
        self.tree = tree
        self.root = root if root is not None else self
        self.prefix = tree.prefix if tree is not None and root is not None else ""
        self.tables = GraphTables(self.graph)
        self.dtypes = view_dtypes(view)
        self.globals: list[Operation] = []
        self.block = Block()
        self.ops: list[Operation] = []
        self.slow: dict[str, SSAValue] = {}
        self.given_out: dict[str, SSAValue] = {}
        """A body's streamed outputs: the enclosing node's result buffers."""
        self.weights: dict[str, SSAValue] = {}
        self.weight_syms: dict[str, tuple[str, MemRefType]] = {}
        self.consts: dict[int, SSAValue] = {}
        self.results: list[SSAValue | None] = [None] * len(self.graph.outputs)
        self.sent = prog.plan.streamed_outputs if prog is not None else frozenset()
        self.symbols: set[str] = set()

    # ---- helpers -------------------------------------------------------

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def const(self, v: int) -> SSAValue:
        if v not in self.consts:
            c = arith.ConstantOp(IntegerAttr(v, IndexType()))
            c.result.name_hint = f"c{v}" if v >= 0 else f"cm{-v}"
            # constants live at the top of the function
            first = self.block.first_op
            if first is None:
                self.block.add_op(c)
            else:
                self.block.insert_op_before(c, first)
            self.consts[v] = c.result
        return self.consts[v]

    def symbol(self, base: str) -> str:
        name = _hint(base)
        n = name
        i = 1
        symbols = self.root.symbols
        while n in symbols:
            n = f"{name}_{i}"
            i += 1
        symbols.add(n)
        return n

    def dtype(self, name: str) -> np.dtype:
        return self.dtypes[name]

    def weight(self, name: str) -> SSAValue:
        """The `memref.get_global` of a constant tensor (at the function top)."""
        if name not in self.weights:
            ref = weight_ref(self.view, name)
            info = self.graph.tensors[name]
            t = memref_of(info.shape, self.dtype(name), None)
            self.weights[name] = self.weight_global(ref, t)
        return self.weights[name]

    def weight_global(self, ref: str, t: MemRefType) -> SSAValue:
        """A `memref.get_global` here of the weight `ref` (one global per weight)."""
        syms = self.root.weight_syms
        if ref not in syms:
            sym = self.symbol("w_" + ref)
            g = memref.GlobalOp.get(StringAttr(sym), t, UnitAttr())
            g.attributes[loop.REF_ATTR] = StringAttr(ref)
            self.root.globals.append(g)
            syms[ref] = (sym, t)
        sym, t = syms[ref]
        get = memref.GetGlobalOp(sym, t)
        get.memref.name_hint = _hint("w_" + ref)
        self.add(get)
        return get.memref

    def constant_value(self, v: SSAValue) -> SSAValue:
        """The flash memref of a constant a body yields."""
        owner = v.owner
        assert isinstance(owner, nn.WeightOp)
        t = memref_of(nn.shape_of(v) or (1,), nn.dtype_of(v), None)
        return self.weight_global(owner.ref.data, t)

    def alloc(
        self,
        key: str,
        shape: Sequence[int],
        dtype: np.dtype,
        space: StringAttr,
        tensor: str | None = None,
    ) -> SSAValue:
        op = memref.AllocOp.get(
            memref_of(shape, dtype, space).element_type, shape=list(shape), memory_space=space
        )
        op.attributes[loop.TENSOR_ATTR] = StringAttr(self.prefix + (tensor or key))
        op.memref.name_hint = _hint(("s_" if space == loop.SLOW else "") + key)
        self.add(op)
        return op.memref

    def subview(
        self, source: SSAValue, band: Mapping[int, tuple[SSAValue, SSAValue]], into: list[Operation]
    ) -> SSAValue:
        """A band of `source`: per cut axis (offset, size) index values."""
        t = source.type
        assert isinstance(t, MemRefType)
        shape = t.get_shape()
        offsets: list[SSAValue | int] = [0] * len(shape)
        sizes: list[SSAValue | int] = list(shape)
        for ax, (off, size) in band.items():
            offsets[ax] = off
            sizes[ax] = size
        strides: list[SSAValue | int] = [1] * len(shape)
        rt = memref.SubviewOp.infer_result_type(t, offsets, sizes, strides)
        op = memref.SubviewOp.get(source, offsets, sizes, strides, rt)
        into.append(op)
        return op.result

    # ---- the function ----------------------------------------------------

    def lower(self) -> func.FuncOp:
        graph, prog = self.graph, self.prog
        assert prog is not None
        in_place = prog.plan.in_place
        single = prog.plan.single_arena
        space = loop.FAST if in_place or single else loop.SLOW
        stream = prog.plan.stream_input
        arg_types = [
            memref_of(graph.tensors[x].shape, self.dtype(x), loop.STREAM if stream else space)
            for x in graph.inputs
        ]
        self.block = Block(arg_types=arg_types)
        for x, a in zip(graph.inputs, self.block.args):
            a.name_hint = _hint(x)
            self.slow[x] = a
        self.run_units()
        outs = [self.slow[o] for o in graph.outputs]
        self.add(func.ReturnOp(*outs))
        ftype = FunctionType.from_lists(arg_types, [v.type for v in outs])
        new = func.FuncOp(self.fn.sym_name.data, ftype, Region(self.block))
        for key in (
            "nn.input_names",
            "nn.input_layouts",
            "nn.output_names",
            "nn.output_layouts",
            "nn.boundary",
        ):
            if key in self.fn.attributes:
                new.attributes[key] = self.fn.attributes[key]
        p = prog.plan
        new.attributes[loop.PLAN_ATTR] = DictionaryAttr(
            {
                "peak": IntegerAttr(p.peak, i64),
                "slow_peak": IntegerAttr(p.slow_peak, i64),
                "slow_reads": IntegerAttr(p.slow_reads, i64),
                "slow_writes": IntegerAttr(p.slow_writes, i64),
                "budget": IntegerAttr(p.budget, i64),
            }
        )
        return new

    def run_units(self) -> None:
        """Every unit of the plan into `self.block`, with the slow (or, in one
        arena, resident) buffers of tensors crossing units."""
        graph, prog = self.graph, self.prog
        assert prog is not None
        in_place = prog.plan.in_place
        single = prog.plan.single_arena
        # a single arena keeps what would be in slow memory in the fast one
        resident = loop.FAST if single else loop.SLOW
        sent = self.sent
        for u in prog.units:
            if not in_place:
                for name, b in prog.slow_birth.items():
                    if b == u.index and graph.producer(name) is not None:
                        info = graph.tensors[name]
                        where = loop.STREAM if name in sent else resident
                        given = self.given_out.get(name) if name in sent else None
                        self.slow[name] = given or self.alloc(
                            name, info.shape, self.dtype(name), where
                        )
            if isinstance(u, NormalUnit):
                self.normal(u)
            else:
                self.tiled(u)
            if not in_place:
                for name, d in prog.slow_death.items():
                    if (
                        d == u.index
                        and name not in graph.outputs
                        and graph.producer(name) is not None
                    ):
                        self.add(memref.DeallocOp.get(self.slow[name]))
        if in_place:  # an in-place plan sends its streamed outputs when it ends
            for name in graph.outputs:
                if name in sent:
                    info = graph.tensors[name]
                    out = self.given_out.get(name) or self.alloc(
                        name, info.shape, self.dtype(name), loop.STREAM
                    )
                    self.add(memref.CopyOp(self.slow[name], out))
                    self.slow[name] = out

    # ---- units -------------------------------------------------------------

    def band_op(
        self,
        k: int,
        ins: list[SSAValue],
        outs: list[SSAValue],
        bounds: list[SSAValue],
        cuts: list[list[int]],
        cls: type[loop.BandComputeOp] = loop.BandOp,
    ) -> loop.BandComputeOp:
        node = self.graph.nodes[k].name
        op = cls(ins, outs, bounds, cuts, loop.band_body(self.view.ops[node]))
        op.attributes[loop.NODE_ATTR] = StringAttr(self.prefix + node)
        return op

    def normal(self, u: NormalUnit) -> None:
        graph = self.graph
        in_place = u.in_place
        assert self.prog is not None
        single = self.prog.plan.single_arena and not in_place
        streamed = set(graph.inputs) if self.prog.plan.stream_input else set[str]()
        stage_outs = set(u.stage.outputs)
        fast: dict[str, SSAValue] = {}
        for ev, what in u.events:
            if ev == "load":
                assert isinstance(what, str)
                if (in_place or single) and what not in streamed:  # read where it is
                    fast[what] = self.slow[what]
                    continue
                buf = u.buffers[what]
                fast[what] = self.alloc(what, buf.shape, buf.dtype, loop.FAST)
                self.add(memref.CopyOp(self.slow[what], fast[what]))
            elif ev == "alloc":
                assert isinstance(what, str)
                if single and what in stage_outs and what not in self.sent:  # in place
                    fast[what] = self.slow[what]
                    continue
                buf = u.buffers[what]
                fast[what] = self.alloc(what, buf.shape, buf.dtype, loop.FAST)
                if in_place and what in graph.outputs:
                    self.slow[what] = fast[what]
            elif ev == "op":
                assert isinstance(what, int)
                node = graph.nodes[what]
                if isinstance(self.view.ops.get(node.name), nn.ControlFlowOp):
                    self.control(what, fast)
                    continue
                ins = [
                    self.weight(n) if graph.tensors[n].is_const else fast[n] for n in node.inputs
                ]
                outs = [fast[o] for o in node.outputs]
                cuts: list[list[int]] = [[] for _ in (*ins, *outs)]
                self.add(self.band_op(what, ins, outs, [], cuts))
            elif ev == "free":
                assert isinstance(what, str)
                if single and what in u.stage.inputs and what not in streamed:
                    continue  # resident: freed after its last reader's unit
                if not (in_place and what in graph.inputs and what not in streamed):
                    self.add(memref.DeallocOp.get(fast[what]))
            else:
                assert isinstance(what, str)
                if not in_place and (not single or what in self.sent):
                    self.add(memref.CopyOp(fast[what], self.slow[what]))
        if not in_place:
            for o in u.stage.outputs:
                if not single or o in self.sent:
                    self.add(memref.DeallocOp.get(fast[o]))

    # ---- control flow --------------------------------------------------------

    def control(self, k: int, fast: dict[str, SSAValue]) -> None:
        """An If or Loop node of a normal stage: its operands, results,
        workspace (and a Loop's trip number and condition) are the stage's
        fast buffers; each body is lowered in place, its buffers within the
        workspace (`plan-arena`), reading the node's operands and writing its
        results where the stage holds them."""
        node = self.graph.nodes[k]
        op = self.view.ops[node.name]
        assert isinstance(op, nn.ControlFlowOp) and self.tree is not None
        scopes = [b for b in self.tree.bodies if b.owner == node.name]
        regions = op.bodies()
        if len(scopes) != len(regions):
            raise PassFailedException(f"lower-to-loops: '{node.name}' has no plan of its bodies")
        results = [fast[self._tensor(r)] for r in op.results]
        ws = f"{node.name}.body"
        if isinstance(op, nn.IfOp):
            ctl = self._if(op, scopes, results, fast)
        else:
            assert isinstance(op, nn.LoopOp)
            ctl = self._loop(op, node.name, scopes[0], results, fast)
        if ws in fast:
            ctl.attributes[loop.WORKSPACE_ATTR] = StringAttr(self.prefix + ws)
        ctl.attributes[loop.NODE_ATTR] = StringAttr(self.prefix + node.name)
        ctl.attributes[loop.BODIES_ATTR] = ArrayAttr(
            [
                DictionaryAttr({"path": StringAttr(sc.path), "peak": IntegerAttr(sc.peak, i64)})
                for sc in scopes
            ]
        )
        self.add(ctl)

    def _tensor(self, v: SSAValue) -> str:
        name = self.view.tensor_of(v)
        if name is None:
            raise PassFailedException(f"lower-to-loops: {v.name_hint or 'a value'} is no tensor")
        return name

    def _outer(self, v: SSAValue, fast: Mapping[str, SSAValue]) -> SSAValue:
        """The memref of a value of this graph a body reads."""
        if isinstance(v.owner, nn.WeightOp):
            return self.constant_value(v)
        name = self._tensor(v)
        return fast[name] if name in fast else self.slow[name]

    def _scalar(self, mem: SSAValue, ops: list[Operation]) -> SSAValue:
        """The one element of a condition (or trip) buffer."""
        t = mem.type
        assert isinstance(t, MemRefType)
        ld = memref.LoadOp.get(mem, [self.const(0)] * len(t.get_shape()))
        ops.append(ld)
        return ld.res

    def _if(
        self,
        op: nn.IfOp,
        scopes: list[ScopePlan],
        results: list[SSAValue],
        fast: dict[str, SSAValue],
    ) -> Operation:
        pre: list[Operation] = []
        cond = self._scalar(self._outer(op.cond, fast), pre)
        for p in pre:
            self.add(p)
        blocks = []
        for sc, (_, region) in zip(scopes, op.bodies()):
            term = region.block.last_op
            assert isinstance(term, nn.YieldOp)
            ops, _ = self.body(sc, region, [], list(term.values), results, fast)
            blocks.append(Block([*ops, scf.YieldOp()]))
        return scf.IfOp(cond, [], Region(blocks[0]), Region(blocks[1]))

    def _loop(
        self,
        op: nn.LoopOp,
        name: str,
        sc: ScopePlan,
        results: list[SSAValue],
        fast: dict[str, SSAValue],
    ) -> Operation:
        """The carried values' fixed places are the node's results: the inits
        are copied there, every trip reads them and writes them back."""
        region = op.body
        term = region.block.last_op
        assert isinstance(term, nn.YieldOp)
        yielded = list(term.values)
        carried_args: list[SSAValue] = list(region.block.args[2:])
        for j, v in enumerate(yielded[1:]):
            if v in carried_args and carried_args.index(v) != j:
                raise PassFailedException(
                    f"lower-to-loops: '{name}' hands carried value {carried_args.index(v)} on as "
                    f"carried value {j}: a Loop that permutes its carried values is not lowered"
                )
        for init, res in zip(op.inits, results):
            self.add(memref.CopyOp(self._outer(init, fast), res))
        trip, go = fast[f"{name}.trip"], fast[f"{name}.go"]
        pre: list[Operation] = []
        if op.cond is not None:
            go0 = self._scalar(self._outer(op.cond, fast), pre)
        else:
            true = arith.ConstantOp(IntegerAttr(1, i1))
            pre.append(true)
            go0 = true.result
        for p in pre:
            self.add(p)
        before = Block(arg_types=[IndexType(), i1])
        i, g = before.args
        i.name_hint, g.name_hint = "trip", "go"
        run: SSAValue = g
        trips = op.trips()
        if trips is not None:
            lt = arith.CmpiOp(i, self.const(trips), "slt")
            both = arith.AndIOp(lt.result, g)
            before.add_ops([lt, both])
            run = both.result
        before.add_op(scf.ConditionOp(run, i, g))
        after = Block(arg_types=[IndexType(), i1])
        i, g = after.args
        i.name_hint, g.name_hint = "trip", "go"
        ops: list[Operation] = []
        as_i64 = arith.IndexCastOp(i, i64)
        ops += [as_i64, memref.StoreOp.get(as_i64.result, trip, [self.const(0)])]
        ops.append(memref.StoreOp.get(g, go, [self.const(0)]))
        body_ops, nxt = self.body(
            sc, region, [trip, go, *results], yielded[1:], results, fast, yielded[0]
        )
        assert nxt is not None
        ops += body_ops
        one = arith.AddiOp(i, self.const(1))
        ops += [one, scf.YieldOp(one.result, nxt)]
        after.add_ops(ops)
        return scf.WhileOp([self.const(0), go0], [IndexType(), i1], Region(before), Region(after))

    def body(
        self,
        sc: ScopePlan,
        region: Region,
        args: Sequence[SSAValue],
        yielded: Sequence[SSAValue],
        results: Sequence[SSAValue],
        fast: Mapping[str, SSAValue],
        cond: SSAValue | None = None,
    ) -> tuple[list[Operation], SSAValue | None]:
        """The ops of one body run: its units on the node's buffers, its
        results copied into the node's (unless streamed there) and, with
        `cond` (a Loop's next condition), that condition's load last."""
        view = sc.view
        g = view.graph
        block_args: list[SSAValue] = list(region.block.args)
        given: dict[str, SSAValue] = {}
        for x in g.inputs:
            v = view.values[x]
            given[x] = args[block_args.index(v)] if v in block_args else self._outer(v, fast)
        prog = None
        if sc.plan is not None:
            try:
                prog = schedule(view, sc.plan)
            except PlanRunError as e:
                raise PassFailedException(f"lower-to-loops: {sc.path}: {e}") from None
        low = _Lowering(prog, view, self.fn, sc, self.root)
        low.slow = dict(given)
        streamed = prog.plan.streamed_outputs if prog is not None else frozenset()
        for v, res in zip(yielded, results):
            name = view.tensor_of(v)
            if name is not None and name in streamed and name not in low.given_out:
                low.given_out[name] = res
        if prog is not None:
            low.run_units()

        def value(v: SSAValue) -> SSAValue:
            if isinstance(v.owner, nn.WeightOp):
                return low.constant_value(v)
            name = view.tensor_of(v)
            assert name is not None
            return low.slow[name]

        for v, res in zip(yielded, results):
            src = value(v)
            if src is not res:
                low.add(memref.CopyOp(src, res))
        nxt = None
        if cond is not None:
            src = value(cond)
            nxt = memref.LoadOp.get(src, [low.const(0)] * len(nn.shape_of(cond) or (1,)))
            low.add(nxt)
        for op in list(low.block.ops):  # what the body still holds when it ends
            if isinstance(op, memref.AllocOp) and not any(
                isinstance(u.operation, memref.DeallocOp) for u in op.memref.uses
            ):
                low.add(memref.DeallocOp.get(op.memref))
        ops = list(low.block.ops)
        for o in ops:
            o.detach()
        return ops, (nxt.res if nxt is not None else None)

    def tiled(self, u: TiledUnit) -> None:
        graph = self.graph
        fast: dict[str, SSAValue] = {}
        if u.workspace is not None:  # the scratch buffers lie in it, allocated per tile
            ws = u.workspace
            fast[ws.key] = self.alloc(ws.key, ws.shape, ws.dtype, loop.FAST)
        for key, buf in u.buffers.items():
            if buf.key != key or buf.key in u.scratch:
                continue  # held in the buffer of the in-place activation that overwrites it
            tensor = key.removesuffix(".acc")
            dtype = buf.dtype
            if key != tensor and u.gap is not None and self.fixed_gap(u.gap):
                dtype = np.dtype(np.int64)  # integer-only sums, the same 8 bytes
            fast[key] = self.alloc(key, buf.shape, dtype, loop.FAST, tensor)
        for key, buf in u.buffers.items():
            if buf.key != key and buf.key not in u.scratch:
                fast[key] = fast[buf.key]
        for t in u.once:
            self.add(memref.CopyOp(self.slow[t], fast[t]))
        for k in u.nodes:
            if k != u.gap:
                for n in graph.nodes[k].inputs:
                    if graph.tensors[n].is_const:
                        self.weight(n)
        if u.gap is None:
            if u.tiles:
                self.add(self.tile_loop(u, fast))
        else:
            self.accumulation(u, fast)
        for key, buf in u.buffers.items():
            if buf.key == key and key not in u.scratch:
                self.add(memref.DeallocOp.get(fast[key]))
        if u.workspace is not None:
            self.add(memref.DeallocOp.get(fast[u.workspace.key]))

    def fixed_gap(self, k: int) -> bool:
        """Whether node k's GlobalAveragePool sums integers (`nn.requant`
        fixed): its accumulator is then int64 instead of float64."""
        op = self.view.ops[self.graph.nodes[k].name]
        return nn.quant_of(op.operands[0]) is not None and nn.requant_fixed(op)

    def accumulation(self, u: TiledUnit, fast: dict[str, SSAValue]) -> None:
        """A GlobalAveragePool's tiles: per channel group (one when the
        channels are not cut) the sums start at zero, the group's tiles add
        their bands, `loop.finish` takes the mean and the group's outputs are
        spilled. Several groups are an outer `scf.for` over a group table."""
        graph = self.graph
        assert u.gap is not None
        out = graph.nodes[u.gap].outputs[0]
        acc, res = fast[out + ".acc"], fast[out]
        last = graph.tensors[out].rank - 1
        per = len(u.tiles) // len(u.acc_groups)
        whole = len(u.acc_groups) == 1 and u.acc_groups[0] == (0, graph.tensors[out].shape[-1])
        fixed = self.fixed_gap(u.gap)
        zero = arith.ConstantOp(IntegerAttr(0, i64) if fixed else FloatAttr(0.0, f64))
        self.add(zero)
        if whole:
            self.add(FillOp([zero.result], [acc], res=[]))
            if u.tiles:
                self.add(self.tile_loop(u, fast))
            self.add(self.band_op(u.gap, [acc], [res], [], [[], []], loop.FinishOp))
            self.add(memref.CopyOp(res, self.slow[out]))
            return
        n_groups = len(u.acc_groups)
        get = self.range_table(f"{u.name.replace(' ', '')}_groups", u.acc_groups, ("c.0", "c.1"))
        self.add(get)
        body = Block(arg_types=[IndexType()])
        grp = body.args[0]
        grp.name_hint = "group"
        ops: list[Operation] = [FillOp([zero.result], [acc], res=[])]
        inner = self.tile_loop(u, fast, (grp, per))
        ops.append(inner)
        c0 = memref.LoadOp.get(get.memref, [grp, self.const(0)])
        c1 = memref.LoadOp.get(get.memref, [grp, self.const(1)])
        c0.res.name_hint, c1.res.name_hint = "group_lo", "group_hi"
        n = arith.SubiOp(c1.res, c0.res)
        ops += [c0, c1, n]
        acc_g = self.subview(acc, {last: (self.const(0), n.result)}, ops)
        res_g = self.subview(res, {last: (self.const(0), n.result)}, ops)
        ops.append(
            self.band_op(
                u.gap,
                [acc_g],
                [res_g],
                [c0.res, c1.res, c0.res, c1.res],
                [[last], [last]],
                loop.FinishOp,
            )
        )
        slow_g = self.subview(self.slow[out], {last: (c0.res, n.result)}, ops)
        ops.append(memref.CopyOp(res_g, slow_g))
        ops.append(scf.YieldOp())
        for op in ops:
            body.add_op(op)
        outer = scf.ForOp(self.const(0), self.const(n_groups), self.const(1), [], Region(body))
        outer.attributes[loop.UNIT_ATTR] = StringAttr(u.name + " channel groups")
        self.add(outer)

    # ---- the tile loop -----------------------------------------------------

    def table(self, u: TiledUnit) -> _Table:
        """The unit's per-tile index values (the exact ranges of the plan)."""
        graph = self.graph
        first = u.tiles[0]
        held_axes = {t: sorted(b) for t, b in first.held.items()}
        keys: list[tuple[object, ...]] = []

        def add(*key: object) -> None:
            if key not in keys:
                keys.append(key)

        for t, axes in held_axes.items():
            for a in axes:
                add("held", t, a, 0)
                add("held", t, a, 1)
        for tile in u.tiles:
            for t in tile.keep:
                add("keep", t, "src")
                add("keep", t, "n")
        load_t = sorted({t for tile in u.tiles for t, _ in tile.loads}, key=list(first.held).index)
        spill_t = sorted(
            {t for tile in u.tiles for t, _ in tile.spills}, key=list(first.held).index
        )
        op_k = sorted({s.node for tile in u.tiles for s in tile.ops})
        for t in load_t:
            for a in held_axes[t]:
                add("load", t, a, 0)
                add("load", t, a, 1)
        for k in op_k:
            o = graph.nodes[k].outputs[0]
            for a in held_axes[o]:
                add("out", k, a, 0)
                add("out", k, a, 1)
        for t in spill_t:
            for a in held_axes[t]:
                add("spill", t, a, 0)
                add("spill", t, a, 1)
        if first.accumulate is not None:
            for a in sorted(first.accumulate):
                add("acc", a, 0)
                add("acc", a, 1)
        ranged = {}  # pixel runs whose tiles run some of their blocks: per tile which
        for run in u.pixel_runs:
            per_tile = self.run_blocks(u, run)[1]
            if per_tile is not None:
                ranged[run[0]] = per_tile
                add("run", run[0], "blocks", 0)
                add("run", run[0], "blocks", 1)
        rows: list[list[int]] = []
        prev: dict[str, Band] = {}
        for n, tile in enumerate(u.tiles):
            v: dict[tuple[object, ...], int] = {
                ("run", k, "blocks", e): ends[n][e] for k, ends in ranged.items() for e in (0, 1)
            }
            for t, b in tile.held.items():
                for a, (lo, hi) in b.items():
                    v[("held", t, a, 0)] = lo
                    v[("held", t, a, 1)] = hi
            for t, (lo, hi) in tile.keep.items():
                v[("keep", t, "src")] = lo - prev[t][u.axes[t]][0]
                v[("keep", t, "n")] = hi - lo
            loads, spills = dict(tile.loads), dict(tile.spills)
            steps = {s.node: s.out for s in tile.ops}
            for t in load_t:
                _put(v, tile, held_axes, "load", t, t, loads.get(t, {}))
            for k in op_k:
                o = graph.nodes[k].outputs[0]
                _put(v, tile, held_axes, "out", k, o, steps.get(k) or self.empty_band(u, tile, k))
            for t in spill_t:
                _put(v, tile, held_axes, "spill", t, t, spills.get(t, {}))
            if tile.accumulate is not None:
                for a, (lo, hi) in tile.accumulate.items():
                    v[("acc", a, 0)] = lo
                    v[("acc", a, 1)] = hi
            rows.append([v.get(key, 0) for key in keys])
            prev = dict(tile.held)
        return _Table(keys, rows)

    def col_name(self, key: tuple[object, ...]) -> str:
        """`load_x_lo`, `out_conv0_hi2`: a table value's SSA name."""
        kind = str(key[0])
        if kind == "keep":
            return _hint(f"keep_{key[1]}_{key[2]}")
        if kind == "run":  # a pixel run's first and end block in the tile
            who = self.graph.nodes[key[1]].name if isinstance(key[1], int) else key[1]
            return _hint(f"run_{who}_{'first' if key[3] == 0 else 'end'}")
        if kind == "acc":
            ax, end = key[1], key[2]
            who = ""
        else:
            who, ax, end = key[1], key[2], key[3]
            if isinstance(who, int):
                who = self.graph.nodes[who].name
            who = f"_{who}"
        side = "lo" if end == 0 else "hi"
        return _hint(f"{kind}{who}_{side}") + ("" if ax == 1 else f"_ax{ax}")

    def empty_band(self, u: TiledUnit, tile: Tile, k: int) -> Band:
        """An empty band for an op with no rows in this tile: at a row every
        buffer its subviews cut holds, so each subview stays in bounds."""
        graph = self.graph
        node = graph.nodes[k]
        band: dict[int, tuple[int, int]] = {}
        for a, (lo0, _) in tile.held[node.outputs[0]].items():
            lo = lo0
            o0 = node.outputs[0]
            hi_cap = (
                graph.tensors[o0].shape[a]
                if o0 in u.resident_outputs
                else lo0 + u.buffers[o0].shape[a]
            )
            for name in node.inputs:
                if graph.tensors[name].is_const or not tile.held.get(name):
                    continue
                src = operand_source(self.tables, u, k, name, tile.held[name])
                for b, (kind, ax) in (src or {}).items():
                    if kind == "out" and ax == a and name in u.resident_inputs:
                        hi_cap = min(hi_cap, graph.tensors[name].shape[b])
                    elif kind == "out" and ax == a:
                        lo = max(lo, tile.held[name][b][0])
                        hi_cap = min(hi_cap, tile.held[name][b][0] + u.buffers[name].shape[b])
            if lo > hi_cap:
                raise PassFailedException(
                    f"lower-to-loops: {u.name} tile {tile.index}: no row of '{node.name}' lies "
                    "in every buffer it reads (an empty band cannot be placed)"
                )
            band[a] = (lo, lo)
        return band

    def tile_loop(
        self, u: TiledUnit, fast: dict[str, SSAValue], group: tuple[SSAValue, int] | None = None
    ) -> scf.ForOp:
        """The `scf.for` over a unit's tiles (with `group` = (g, n): the n
        tiles of channel group g, tile g * n + t)."""
        graph = self.graph
        tab = self.table(u)
        n = len(tab.rows)
        unit = u.name.replace(" ", "")
        groups: dict[tuple[object, ...], list[int]] = {}
        for j, key in enumerate(tab.keys):
            groups.setdefault(key[:1] if key[0] == "acc" else key[:2], []).append(j)
        tables: dict[tuple[object, ...], tuple[SSAValue, list[int]]] = {}
        for gkey, cols_of in groups.items():
            parts = list(gkey)
            what = parts[1] if len(parts) > 1 else ""
            if isinstance(what, int):
                what = graph.nodes[what].name
            sym = self.symbol(f"{unit}_{parts[0]}_{what}" if what else f"{unit}_{parts[0]}")
            ttype = MemRefType(IndexType(), [n, len(cols_of)])
            flat = [row[j] for row in tab.rows for j in cols_of]
            init = DenseIntOrFPElementsAttr.from_list(
                TensorType(IndexType(), [n, len(cols_of)]), flat
            )
            g = memref.GlobalOp.get(StringAttr(sym), ttype, init, constant=UnitAttr())
            g.attributes[loop.COLUMNS_ATTR] = ArrayAttr(
                [StringAttr(".".join(str(x) for x in tab.keys[j][len(gkey) :])) for j in cols_of]
            )
            self.root.globals.append(g)
            get = memref.GetGlobalOp(sym, ttype)
            get.memref.name_hint = sym
            self.add(get)
            tables[gkey] = (get.memref, cols_of)
        body = Block(arg_types=[IndexType()])
        i: SSAValue = body.args[0]
        i.name_hint = "tile"
        ops: list[Operation] = []
        count = n
        if group is not None:
            grp, count = group
            first = arith.MuliOp(grp, self.const(count))
            idx = arith.AddiOp(first.result, i)
            idx.result.name_hint = "index"
            ops += [first, idx]
            i = idx.result
        cols: dict[tuple[object, ...], SSAValue] = {}
        diffs: dict[tuple[int, int], SSAValue] = {}

        def col(*key: object) -> SSAValue:
            if key not in cols:
                gkey = key[:1] if key[0] == "acc" else key[:2]
                table, cols_of = tables[gkey]
                ld = memref.LoadOp.get(table, [i, self.const(cols_of.index(tab.col(key)))])
                ld.res.name_hint = self.col_name(key)
                ops.append(ld)
                cols[key] = ld.res
            return cols[key]

        def sub(a: SSAValue, b: SSAValue) -> SSAValue:
            key = (id(a), id(b))
            if key not in diffs:
                op = arith.SubiOp(a, b)
                ops.append(op)
                diffs[key] = op.result
            return diffs[key]

        held_axes = {t: sorted(b) for t, b in u.tiles[0].held.items()}

        def local(t: str, kind: str, who: object) -> dict[int, tuple[SSAValue, SSAValue]]:
            """(offset in t's buffer, size) per held axis of the band `kind`."""
            band = {}
            for a in held_axes[t]:
                lo, hi = col(kind, who, a, 0), col(kind, who, a, 1)
                band[a] = (sub(lo, col("held", t, a, 0)), sub(hi, lo))
            return band

        def glob(t: str, kind: str, who: object) -> dict[int, tuple[SSAValue, SSAValue]]:
            band = {}
            for a in held_axes[t]:
                lo, hi = col(kind, who, a, 0), col(kind, who, a, 1)
                band[a] = (lo, sub(hi, lo))
            return band

        keep_t = [key[1] for key in tab.keys if key[0] == "keep" and key[2] == "src"]
        for t in keep_t:
            assert isinstance(t, str)
            ax = u.axes[t]
            nrows = col("keep", t, "n")
            src_band = {ax: (col("keep", t, "src"), nrows)}
            dst_band = {ax: (self.const(0), nrows)}
            if 2 in held_axes[t] and ax == 1:  # a column band: the columns it holds
                width = sub(col("held", t, 2, 1), col("held", t, 2, 0))
                src_band[2] = dst_band[2] = (self.const(0), width)
            src = self.subview(fast[t], src_band, ops)
            dst = self.subview(fast[t], dst_band, ops)
            ops.append(memref.CopyOp(src, dst))
        for t in dict.fromkeys(key[1] for key in tab.keys if key[0] == "load"):
            assert isinstance(t, str)
            s = self.subview(self.slow[t], glob(t, "load", t), ops)
            f = self.subview(fast[t], local(t, "load", t), ops)
            ops.append(memref.CopyOp(s, f))
        live: dict[str, SSAValue] = {}
        gone: set[str] = set()

        def scratch_events(k: int, before: bool) -> None:
            """Allocate a scratch buffer before its first step, free it after its last."""
            for owner, (first, last) in u.scratch.items():
                if before and first <= k and owner not in live and owner not in gone:
                    buf = u.buffers[owner]
                    a = memref.AllocOp.get(
                        memref_of(buf.shape, buf.dtype, loop.FAST).element_type,
                        shape=list(buf.shape),
                        memory_space=loop.FAST,
                    )
                    a.attributes[loop.TENSOR_ATTR] = StringAttr(self.prefix + owner)
                    a.memref.name_hint = _hint(owner)
                    ops.append(a)
                    live[owner] = a.memref
                    for key, b in u.buffers.items():
                        if b.key == owner:
                            fast[key] = a.memref
                elif not before and last <= k and owner in live:
                    ops.append(memref.DeallocOp.get(live.pop(owner)))
                    gone.add(owner)

        outs_k = [k for k in dict.fromkeys(key[1] for key in tab.keys if key[0] == "out")]
        runs = {r[0]: r for r in u.pixel_runs}
        steps = [k for k in (u.nodes if u.scratch else outs_k) if isinstance(k, int)]
        at = 0
        while at < len(steps):
            k = steps[at]
            run = runs.get(k)
            if run is None:
                scratch_events(k, True)
                if k in outs_k:
                    ops.append(self.tile_op(u, k, fast, col, sub, ops))
                scratch_events(k, False)
                at += 1
                continue
            for r in run:
                scratch_events(r, True)
            ops.append(self.pixel_loop(u, [r for r in run if r in outs_k], fast, col, sub, ops))
            for r in run:
                scratch_events(r, False)
            at += len(run)
        if u.tiles[0].accumulate is not None and u.gap is not None:
            x = graph.nodes[u.gap].inputs[0]
            out = graph.nodes[u.gap].outputs[0]
            acc_axes = sorted(u.tiles[0].accumulate)
            xb = {
                a: (
                    sub(col("acc", a, 0), col("held", x, a, 0)),
                    sub(col("acc", a, 1), col("acc", a, 0)),
                )
                for a in acc_axes
            }
            xs = self.subview(fast[x], xb, ops)
            bounds = [v for a in acc_axes for v in (col("acc", a, 0), col("acc", a, 1))]
            last = graph.tensors[x].rank - 1
            acc = fast[out + ".acc"]
            cuts: list[list[int]] = [acc_axes, []]
            if last in acc_axes:  # a channel group: its sums start the buffer
                lo, hi = col("acc", last, 0), col("acc", last, 1)
                acc = self.subview(acc, {last: (self.const(0), sub(hi, lo))}, ops)
                cuts = [acc_axes, [last]]
                bounds += [lo, hi]
            ops.append(self.band_op(u.gap, [xs], [acc], bounds, cuts, loop.AccumulateOp))
        for t in dict.fromkeys(key[1] for key in tab.keys if key[0] == "spill"):
            assert isinstance(t, str)
            f = self.subview(fast[t], local(t, "spill", t), ops)
            s = self.subview(self.slow[t], glob(t, "spill", t), ops)
            ops.append(memref.CopyOp(f, s))
        for v in live.values():
            ops.append(memref.DeallocOp.get(v))
        ops.append(scf.YieldOp())
        for op in ops:
            body.add_op(op)
        for_op = scf.ForOp(self.const(0), self.const(count), self.const(1), [], Region(body))
        for_op.attributes[loop.UNIT_ATTR] = StringAttr(u.name)
        for_op.attributes[loop.KIND_ATTR] = StringAttr(
            u.kind
            + (", " + loop.LINE_BUFFERED if u.line_buffered else "")
            + (", " + loop.COLUMN_BANDS if u.line_buffered and _column_bands(u) else "")
        )
        if u.channel_group:
            for_op.attributes[loop.CHANNEL_GROUP_ATTR] = IntegerAttr(u.channel_group, i64)
        if u.workspace is not None:  # a tile's scratch buffers lie in the workspace
            for_op.attributes[loop.WORKSPACE_ATTR] = StringAttr(self.prefix + u.workspace.key)
            path = f"{self.prefix}{u.name} tile"
            for_op.attributes[loop.BODIES_ATTR] = ArrayAttr(
                [
                    DictionaryAttr(
                        {"path": StringAttr(path), "peak": IntegerAttr(u.workspace.size, i64)}
                    )
                ]
            )
        return for_op

    def range_table(
        self, base: str, ranges: Sequence[tuple[int, ...]], columns: tuple[str, ...]
    ) -> memref.GetGlobalOp:
        """A constant table of index values, one row each (`loop.columns`
        naming its columns), and the op that reads it (not yet placed)."""
        sym = self.symbol(base)
        shape = [len(ranges), len(columns)]
        ttype = MemRefType(IndexType(), shape)
        init = DenseIntOrFPElementsAttr.from_list(
            TensorType(IndexType(), shape), [v for r in ranges for v in r]
        )
        g = memref.GlobalOp.get(StringAttr(sym), ttype, init, constant=UnitAttr())
        g.attributes[loop.COLUMNS_ATTR] = ArrayAttr([StringAttr(c) for c in columns])
        self.root.globals.append(g)
        get = memref.GetGlobalOp(sym, ttype)
        get.memref.name_hint = sym
        return get

    def run_blocks(
        self, u: TiledUnit, run: Sequence[int]
    ) -> tuple[list[list[tuple[int, int]]], list[tuple[int, int]] | None]:
        """The blocks of a pixel run: per block the columns of each op of the
        run (a window feeder's: its window's behind the block's; the others
        the block's own), over the columns the run's ops compute in each tile
        (the whole width, or a column band's); and per tile the first and end
        block, None where every tile runs every block (whole rows: a tile
        computing no row of the run runs its blocks on empty rows)."""
        graph = self.graph
        feeders = set(u.feeders)
        sink = next(k for k in run if k not in feeders)
        width = graph.tensors[graph.nodes[sink].outputs[0]].shape[2]
        maps = {t: c for t, _, _, c in self.tables.node_bands[sink].ins}
        spans: list[tuple[int, int] | None] = []
        for tile in u.tiles:
            step = next((st for st in tile.ops if st.node == sink), None)
            spans.append(None if step is None else step.out.get(2, (0, width)))
        firsts: dict[tuple[int, int], int] = {}
        blocks: list[list[tuple[int, int]]] = []
        for span in spans:
            if span is None or span in firsts:
                continue
            firsts[span] = len(blocks)
            for a, b in run_blocks(span[0], span[1], u.pixel_block):
                row = []
                for k in run:
                    if k in feeders:
                        o = graph.nodes[k].outputs[0]
                        cmap = maps[o]
                        assert cmap is not None
                        row.append(map_range(cmap, a, b, graph.tensors[o].shape[2]))
                    else:
                        row.append((a, b))
                blocks.append(row)
        per_tile = []
        for span in spans:
            if span is None:
                per_tile.append((0, 0))
            else:
                first = firsts[span]
                per_tile.append((first, first + len(run_blocks(*span, u.pixel_block))))
        if len(firsts) <= 1:  # whole rows: every tile runs every block (some, empty rows)
            return blocks, None
        return blocks, per_tile

    def pixel_loop(
        self,
        u: TiledUnit,
        run: Sequence[int],
        fast: dict[str, SSAValue],
        col,
        sub,
        ops: list[Operation],
    ) -> scf.ForOp:
        """A pixel run inside a tile: `scf.for` over blocks of `u.pixel_block`
        output columns (bounds from a table), each computing its columns of
        every op of the run (`tile_op` with the block's columns; a window
        feeder the window's columns behind them). In column bands (or where
        some tiles compute none of the run) the blocks of the tile are a
        range of the table's rows, read from the unit's table."""
        graph = self.graph
        b = u.pixel_block
        blocks, per_tile = self.run_blocks(u, run)
        plain = not any(k in u.feeders for k in run)
        name = f"{u.name.replace(' ', '')}_blocks_{graph.nodes[run[0]].name}"
        if plain:  # every op of the run computes the block's columns
            get = self.range_table(name, [r[0] for r in blocks], ("lo", "hi"))
        else:
            columns = tuple(
                f"{graph.nodes[k].name}.{e}" for k in run for e in ("lo", "hi")
            )
            get = self.range_table(name, [tuple(v for c in r for v in c) for r in blocks], columns)
        ops.append(get)
        body = Block(arg_types=[IndexType()])
        j = body.args[0]
        j.name_hint = "block"
        inner: list[Operation] = []
        pix: dict[int, tuple[SSAValue, SSAValue]] = {}
        mine: set[int] = set()
        for i, k in enumerate(run):
            if plain and i > 0:
                pix[k] = pix[run[0]]
                continue
            ends = []
            for e, hint in ((0, "px_lo"), (1, "px_hi")):
                ld = memref.LoadOp.get(get.memref, [j, self.const(2 * i + e)])
                ld.res.name_hint = hint
                inner.append(ld)
                ends.append(ld.res)
                mine.add(id(ld.res))
            pix[k] = (ends[0], ends[1])
        diffs: dict[tuple[int, int], SSAValue] = {}

        def isub(x: SSAValue, y: SSAValue) -> SSAValue:
            """`sub` of values of the tile; in the block's body those of its columns."""
            if id(x) not in mine and id(y) not in mine:
                return sub(x, y)
            if (id(x), id(y)) not in diffs:
                op = arith.SubiOp(x, y)
                inner.append(op)
                mine.add(id(op.result))
                diffs[(id(x), id(y))] = op.result
            return diffs[(id(x), id(y))]

        for k in run:
            inner.append(self.tile_op(u, k, fast, col, isub, inner, pix))
        inner.append(scf.YieldOp())
        for op in inner:
            body.add_op(op)
        if per_tile is None:
            lo, hi = self.const(0), self.const(len(blocks))
        else:
            lo, hi = col("run", run[0], "blocks", 0), col("run", run[0], "blocks", 1)
        loop_op = scf.ForOp(lo, hi, self.const(1), [], Region(body))
        loop_op.attributes[loop.PIXEL_BLOCK_ATTR] = IntegerAttr(b, i64)
        return loop_op

    def tile_op(
        self,
        u: TiledUnit,
        k: int,
        fast: dict[str, SSAValue],
        col,
        sub,
        ops: list[Operation],
        pix: Mapping[int, tuple[SSAValue, SSAValue]] | None = None,
    ) -> Operation:
        """One op's band: operands as the executor reads them (`operand_source`).
        With `pix` (a pixel run's block: per op of the run its first and end
        column) the op computes its columns: its outputs and the inputs it
        reads at its own columns are cut along the width too, and an input
        held in blocks (computed by an earlier op of the run) is read as that
        op's block (a blocked scratch buffer from its column 0, any other
        buffer where the columns lie)."""
        graph = self.graph
        node = graph.nodes[k]
        first = u.tiles[0]
        ins: list[SSAValue] = []
        bounds: list[SSAValue] = []
        cuts: list[list[int]] = []
        cols_read = {t: c for t, _, _, c in self.tables.node_bands[k].ins} if pix else {}
        made_by = {o: q for q in (pix or {}) for o in graph.nodes[q].outputs}

        def width_cut(
            name: str,
            band: dict[int, tuple[SSAValue, SSAValue]],
            ends: dict[int, tuple[SSAValue, SSAValue]],
            read: bool = False,
            there: bool = False,
        ) -> None:
            """Cut the width to the op's columns of the block (an output, or
            an input the op reads at its own columns) or, for an input held
            in blocks, to its producer's: a blocked buffer holds the block
            from its column 0, a buffer of whole rows or of a column band (or
            a resident tensor, `there`) at the block's columns."""
            if pix is None or graph.tensors[name].rank != 4:
                return
            buf = u.buffers.get(name)
            blocked = buf is not None and buf.key in u.blocked
            cmap = cols_read.get(name)
            if read and blocked and name in made_by:
                lo, hi = pix[made_by[name]]
            elif read and (cmap is None or not same_place(cmap)):
                return
            else:
                lo, hi = pix[k]
            if blocked:
                at = self.const(0)
            elif there or 2 not in first.held.get(name, {}):
                at = lo
            else:  # a column band's buffer: from the band's first column
                at = sub(lo, col("held", name, 2, 0))
            band[2] = (at, sub(hi, lo))
            ends[2] = (lo, hi)

        for name in node.inputs:
            if graph.tensors[name].is_const:
                ins.append(self.weight(name))
                cuts.append([])
                continue
            src = operand_source(self.tables, u, k, name, first.held[name])
            resident = name in u.resident_inputs  # read where it is resident, by its rows
            whole = self.slow[name] if resident else fast[name]
            if src is None:
                ins.append(whole)
                cuts.append([])
                continue
            band: dict[int, tuple[SSAValue, SSAValue]] = {}
            ends: dict[int, tuple[SSAValue, SSAValue]] = {}
            for a in sorted(src):
                kind, ax = src[a]
                if kind == "held":  # the rows the buffer holds: from its first row
                    lo, hi = col("held", name, a, 0), col("held", name, a, 1)
                    band[a] = (lo if resident else self.const(0), sub(hi, lo))
                else:
                    lo, hi = col("out", k, ax, 0), col("out", k, ax, 1)
                    band[a] = (lo if resident else sub(lo, col("held", name, a, 0)), sub(hi, lo))
                ends[a] = (lo, hi)
            width_cut(name, band, ends, read=True, there=resident)
            axes = sorted(band)
            for a in axes:
                bounds += list(ends[a])
            ins.append(self.subview(whole, band, ops))
            cuts.append(axes)
        outs: list[SSAValue] = []
        for o in node.outputs:
            band = {}
            ends = {}
            direct = o in u.resident_outputs  # written where it is resident, by its rows
            for a in sorted(first.held[o]):
                lo, hi = col("out", k, a, 0), col("out", k, a, 1)
                band[a] = (lo if direct else sub(lo, col("held", o, a, 0)), sub(hi, lo))
                ends[a] = (lo, hi)
            width_cut(o, band, ends, there=direct)
            axes = sorted(band)
            for a in axes:
                bounds += list(ends[a])
            outs.append(self.subview(self.slow[o] if direct else fast[o], band, ops))
            cuts.append(axes)
        op = self.band_op(k, ins, outs, bounds, cuts)
        stage = u.recompute.get(k)
        if stage is not None:
            op.attributes[loop.RECOMPUTE_ATTR] = StringAttr(stage)
        return op


def _column_bands(u: TiledUnit) -> bool:
    """A line-buffered chain in column bands: its tiles hold bands of columns."""
    return bool(u.tiles) and any(2 in b for b in u.tiles[0].held.values())


UNTILED_SUFFIX = "_untiled"
"""The `nn` function a lowered one came from keeps this suffix (the oracle
`tigris-run --check` compares a plan with)."""


def lower_program(
    prog: Program,
    view: GraphView,
    module: ModuleOp,
    fn: func.FuncOp,
    tree: ScopePlan | None = None,
) -> None:
    """Put the loop-level form of `fn` in its place; `fn` stays beside it as
    the private `<name>_untiled`; weights and tables become globals. With
    control flow, `tree` holds the plans of the If and Loop bodies."""
    low = _Lowering(prog, view, fn, tree)
    new = low.lower()
    body = module.body.block
    anchor = body.first_op
    for g in low.globals:
        if anchor is None:
            body.add_op(g)
        else:
            body.insert_op_before(g, anchor)
    body.insert_op_before(new, fn)
    fn.sym_name = StringAttr(fn.sym_name.data + UNTILED_SUFFIX)
    fn.sym_visibility = StringAttr("private")


def untiled_func(module: ModuleOp) -> func.FuncOp | None:
    """The `nn` function a lowered module was made from, if it kept it."""
    main = main_func(module)
    want = main.sym_name.data + UNTILED_SUFFIX
    return next(
        (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == want), None
    )


@dataclass(frozen=True)
class LowerToLoopsPass(PlanOptions, ModulePass):
    """Lower the plan to loop IR: scf.for over tiles, fast/slow memrefs, loop.band.

    The plan is the function's under the budget (the option, else the module's
    `tile.budget`, else 256K); stages, chains and band records of the tiling
    passes, if present, are the same plan. Every tile's exact row ranges are
    a `memref.global` table indexed by the tile loop's induction variable.
    """

    name = "lower-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fn = main_func(op)
        if any(isinstance(o, loop.BandComputeOp) for o in fn.walk()):
            return  # already lowered
        tree = self.tree(op)
        assert tree.plan is not None
        try:
            prog = schedule(tree.view, tree.plan)
        except PlanRunError as e:
            raise PassFailedException(f"lower-to-loops: {e}") from None
        if loop.Loop.name not in ctx.registered_dialect_names:
            ctx.load_dialect(loop.Loop)
        lower_program(prog, tree.view, op, fn, tree)
