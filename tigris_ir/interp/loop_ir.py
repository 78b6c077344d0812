"""The loop-level IR (`lower-to-loops`, `plan-arena`) run on numpy: every
memref a view of the fast arena at its planned offset, or of slow memory;
measured peaks and traffic are compared with the IR's own figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects import memref as mr
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.ir import Attribute, Operation, SSAValue

from tigris_ir.dialects import loop, nn
from tigris_ir.dialects.loop import ARENA_ATTR, SLOW_ARENA_ATTR
from tigris_ir.interp import band_exec
from tigris_ir.interp.program import FastArena, RunResult, RunStats
from tigris_ir.loops.arena import Lifetime, arg_names, int_attr, lifetimes, numpy_dtype, offset_of
from tigris_ir.loops.schedule import Buffer, PlanRunError
from tigris_ir.plan.band import Band, BandError
from tigris_ir.plan.ir import main_func


class LoopIRError(PlanRunError):
    """The loop IR does something the plan forbids (a dry run names it)."""


@dataclass
class MemRef:
    """A memref at run time: a numpy view, which of its elements hold data
    (loaded, computed or written), its memory space and buffer name."""

    data: np.ndarray
    valid: np.ndarray | None
    space: str
    name: str


class LoopRunner:
    """Runs a lowered function (`lower-to-loops`, `plan-arena`) on numpy.

    Fast buffers are views of one byte arena of `loop.arena` bytes at their
    static offsets; slow ones of a second arena. Every copy between the
    spaces is counted, and the arenas check every allocation (inside, no
    overlap with a live buffer). With `compute=False` (a dry run, what
    `plan-arena` verifies) no band is computed, but every element's state is
    tracked: each band reads only rows that were loaded or computed and lie
    in the band it holds. A verified plan then runs without that tracking."""

    def __init__(self, module: ModuleOp, weights: Mapping[str, np.ndarray], compute: bool = True):
        self.module = module
        self.fn = main_func(module)
        self.weights = weights
        self.compute = compute
        fast = int_attr(self.fn, ARENA_ATTR)
        slow = int_attr(self.fn, SLOW_ARENA_ATTR)
        if fast is None or slow is None:
            raise LoopIRError("the loop IR has no arena: run plan-arena first")
        self.fast = FastArena(fast)
        self.slow = FastArena(slow)
        self.reads = 0
        self.writes = 0
        self.tiles = 0
        self.stream_rows = 0
        self.stream_bytes = 0
        self.out_rows = 0
        self.slots: dict[SSAValue, int] = {}
        self.vals: list[object] = []
        self.globals = {op.sym_name.data: op for op in module.ops if isinstance(op, mr.GlobalOp)}
        self.lives = {id(lv.owner): lv for lv in lifetimes(self.fn)}
        self.ends: dict[int, list[Lifetime]] = {}
        for lv in self.lives.values():
            if not isinstance(lv.owner, Operation):
                self.ends.setdefault(lv.last, []).append(lv)
        self.where = ""

    # ---- memory ---------------------------------------------------------

    def _alloc(self, lv: Lifetime, t: Attribute) -> MemRef:
        assert isinstance(t, MemRefType)
        off = offset_of(lv, self.fn)
        if off is None:
            raise LoopIRError(f"{lv.space} buffer '{lv.tensor}' has no offset: run plan-arena")
        buf = Buffer(lv.key, tuple(t.get_shape()), numpy_dtype(t.element_type), off)
        arena = self.fast if lv.space == "fast" else self.slow
        data = arena.alloc(buf, f"{lv.space} memory")
        valid = np.zeros(data.shape, dtype=bool) if not self.compute else None
        return MemRef(data, valid, lv.space, lv.tensor)

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        block = self.fn.body.block
        if len(inputs) != len(block.args):
            raise PlanRunError(f"the model takes {len(block.args)} input(s), got {len(inputs)}")
        names = arg_names(self.fn)
        for i, (a, x) in enumerate(zip(block.args, inputs)):
            t = a.type
            lv = self.lives.get(id(a))
            assert isinstance(t, MemRefType)
            shape, dt = tuple(t.get_shape()), numpy_dtype(t.element_type)
            if tuple(x.shape) != shape or x.dtype != dt:
                raise PlanRunError(
                    f"input '{names[i]}' must be {dt} of shape {'x'.join(map(str, shape))}, got "
                    f"{x.dtype} of shape {'x'.join(map(str, x.shape))}"
                )
            if lv is None:  # a streamed input is only read by band loads
                space = loop.space_of(t)
                stream = "stream" if space == loop.STREAM.data else ""
                self.vals[self._slot(a)] = MemRef(np.array(x), None, stream, names[i])
                continue
            m = self._alloc(lv, t)
            m.data[...] = x
            if m.valid is not None:
                m.valid[...] = True
            self.vals[self._slot(a)] = m
        for pos, op in enumerate(block.ops):
            if isinstance(op, func.ReturnOp):
                return [self._mem(v).data.copy() for v in op.arguments]
            self._compile(op)()
            for lv in self.ends.get(pos, []):
                (self.fast if lv.space == "fast" else self.slow).free(lv.key)
        raise LoopIRError("the function has no func.return")

    def _slot(self, v: SSAValue) -> int:
        """The index of an SSA value's run-time value in `vals` (no hashing of
        SSA values in the tile loop)."""
        i = self.slots.get(v)
        if i is None:
            i = self.slots[v] = len(self.vals)
            self.vals.append(None)
        return i

    def _mem(self, v: SSAValue) -> MemRef:
        m = self.vals[self._slot(v)]
        assert isinstance(m, MemRef)
        return m

    def _int(self, v: SSAValue) -> int:
        x = self.vals[self._slot(v)]
        assert isinstance(x, int)
        return x

    # ---- ops ----------------------------------------------------------------

    def _compile(self, op: Operation) -> Callable[[], None]:
        """A thunk running `op` on `self.vals`, its static operands resolved
        once (the tile loop runs it many times)."""
        vals, slot = self.vals, self._slot
        if isinstance(op, arith.ConstantOp):
            v = op.value
            if isinstance(v, IntegerAttr):
                val: object = int(v.value.data)
            elif isinstance(v, FloatAttr):
                val = float(v.value.data)
            else:
                raise LoopIRError(f"arith.constant {v} is not a scalar")
            res = slot(op.result)
            return lambda: vals.__setitem__(res, val)
        if isinstance(op, arith.SubiOp | arith.AddiOp | arith.MuliOp):
            a, b, res = slot(op.lhs), slot(op.rhs), slot(op.result)
            if isinstance(op, arith.SubiOp):
                return lambda: vals.__setitem__(res, vals[a] - vals[b])  # type: ignore[operator]
            if isinstance(op, arith.AddiOp):
                return lambda: vals.__setitem__(res, vals[a] + vals[b])  # type: ignore[operator]
            return lambda: vals.__setitem__(res, vals[a] * vals[b])  # type: ignore[operator]
        if isinstance(op, mr.LoadOp):
            src, idx, res = slot(op.memref), tuple(slot(i) for i in op.indices), slot(op.res)
            if len(idx) == 2:  # a tile table: [tile, column]
                i0, i1 = idx

                def load2() -> None:
                    vals[res] = int(vals[src].data[vals[i0], vals[i1]])  # type: ignore[union-attr]

                return load2

            def load() -> None:
                m = vals[src]
                assert isinstance(m, MemRef)
                vals[res] = int(m.data[tuple(vals[i] for i in idx)])  # type: ignore[index]

            return load
        if isinstance(op, mr.GetGlobalOp):
            sym, res = op.name_.root_reference.data, slot(op.memref)
            return lambda: vals.__setitem__(res, self._global(sym))
        if isinstance(op, mr.AllocOp):
            t, res = op.memref.type, slot(op.memref)
            if loop.space_of(t) == loop.STREAM.data:  # a streamed output: what the consumer got
                assert isinstance(t, MemRefType)
                shape, dt = tuple(t.get_shape()), numpy_dtype(t.element_type)
                tensor = op.attributes.get("loop.tensor")
                name = tensor.data if isinstance(tensor, StringAttr) else "output"
                return lambda: vals.__setitem__(
                    res, MemRef(np.zeros(shape, dt), None, "stream", name)
                )
            lv = self.lives[id(op)]
            return lambda: vals.__setitem__(res, self._alloc(lv, t))
        if isinstance(op, mr.DeallocOp):
            lv = self.lives[id(op.memref.owner)]
            return lambda: (self.fast if lv.space == "fast" else self.slow).free(lv.key)
        if isinstance(op, mr.SubviewOp):
            return self._subview(op)
        if isinstance(op, mr.CopyOp):
            src, dst = slot(op.source), slot(op.destination)
            return lambda: self._copy(vals[src], vals[dst])  # type: ignore[arg-type]
        if isinstance(op, FillOp):
            vin, vout = slot(op.inputs[0]), slot(op.outputs[0])

            def fill() -> None:
                m = vals[vout]
                assert isinstance(m, MemRef)
                m.data[...] = vals[vin]
                if m.valid is not None:
                    m.valid[...] = True

            return fill
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, loop.BandComputeOp):
            return self._band(op)
        raise LoopIRError(f"the loop interpreter cannot run '{op.name}'")

    def _for(self, op: scf.ForOp) -> Callable[[], None]:
        vals = self.vals
        lb, ub, step = op.lb, op.ub, op.step
        unit = op.attributes.get("loop.unit")
        name = unit.data if isinstance(unit, StringAttr) else "loop"
        tiles = "loop.kind" in op.attributes  # a tile loop (not a loop of channel groups)
        body = op.body.block
        iv = self._slot(body.args[0])
        thunks = [self._compile(inner) for inner in body.ops if not isinstance(inner, scf.YieldOp)]

        def run() -> None:
            for i in range(self._int(lb), self._int(ub), self._int(step)):
                self.tiles += tiles
                self.where = f"{name} {'tile' if tiles else 'group'} {i}"
                vals[iv] = i
                for t in thunks:
                    t()
            self.where = ""

        return run

    def _global(self, sym: str) -> MemRef:
        g = self.globals.get(sym)
        if g is None:
            raise LoopIRError(f"no memref.global @{sym}")
        t = g.type
        assert isinstance(t, MemRefType)
        init = g.initial_value
        if isinstance(init, DenseIntOrFPElementsAttr):
            arr = np.array(init.get_values(), dtype=numpy_dtype(t.element_type))
            return MemRef(arr.reshape(tuple(t.get_shape())), None, "", sym)
        ref = g.attributes.get("loop.ref")
        key = ref.data if isinstance(ref, StringAttr) else sym
        if key not in self.weights:
            raise LoopIRError(f"weight '{key}' (@{sym}) is not in the weight table")
        w = self.weights[key]
        shape, dt = tuple(t.get_shape()), numpy_dtype(t.element_type)
        if tuple(w.shape) != shape or w.dtype != dt:
            raise LoopIRError(
                f"weight '{key}' is {w.dtype}{list(w.shape)}, the IR says {dt}{list(shape)}"
            )
        return MemRef(w, None, "", key)

    def _subview(self, op: mr.SubviewOp) -> Callable[[], None]:
        """Static offsets and sizes as ints, dynamic ones as (slot,) tuples."""
        vals = self.vals
        src_v, res = self._slot(op.source), self._slot(op.result)
        offs: list[int | tuple[int]] = []
        dyn = iter(op.offsets)
        for v in op.static_offsets.get_values():
            offs.append((self._slot(next(dyn)),) if v == DYNAMIC_INDEX else int(v))
        sizes: list[int | tuple[int]] = []
        dyn = iter(op.sizes)
        for v in op.static_sizes.get_values():
            sizes.append((self._slot(next(dyn)),) if v == DYNAMIC_INDEX else int(v))

        static = [
            slice(o, o + n) if isinstance(o, int) and isinstance(n, int) else None
            for o, n in zip(offs, sizes)
        ]
        src_t = op.source.type
        assert isinstance(src_t, MemRefType)
        for ax, (sl, dim) in enumerate(zip(static, src_t.get_shape())):
            if sl is not None and dim != DYNAMIC_INDEX and (sl.start < 0 or sl.stop > dim):
                raise LoopIRError(
                    f"a subview takes [{sl.start}, {sl.stop}) along axis {ax} of {dim}"
                )
        dynamic = [(ax, o, n) for ax, (o, n) in enumerate(zip(offs, sizes)) if static[ax] is None]

        def subview() -> None:
            src = vals[src_v]
            assert isinstance(src, MemRef)
            index = list(static)
            shape = src.data.shape
            for ax, o, n in dynamic:
                o = o if isinstance(o, int) else vals[o[0]]
                n = n if isinstance(n, int) else vals[n[0]]
                assert isinstance(o, int) and isinstance(n, int)
                if o < 0 or n < 0 or o + n > shape[ax]:
                    raise LoopIRError(
                        f"{self.where}: a subview of '{src.name}' takes [{o}, {o + n}) along "
                        f"axis {ax} of {shape[ax]}"
                    )
                index[ax] = slice(o, o + n)
            idx = tuple(index)
            valid = src.valid[idx] if src.valid is not None else None
            vals[res] = MemRef(src.data[idx], valid, src.space, src.name)

        return subview

    def _copy(self, src: MemRef, dst: MemRef) -> None:
        if src.data.shape != dst.data.shape:
            raise LoopIRError(
                f"{self.where}: memref.copy of {src.data.shape} into {dst.data.shape}"
            )
        if src.valid is not None and not src.valid.all():
            raise LoopIRError(
                f"{self.where}: copying '{src.name}' into '{dst.name}' reads elements never written"
            )
        if src.space == "stream":  # the callback delivers whole rows (axis 1)
            self.stream_rows += src.data.shape[1] if src.data.ndim >= 2 else 1
            self.stream_bytes += src.data.nbytes
        elif dst.space == "stream":  # rows sent to the consumer
            self.out_rows += dst.data.shape[1] if dst.data.ndim >= 2 else 1
        elif src.space == "slow" and dst.space == "fast":
            self.reads += src.data.nbytes
        elif src.space == "fast" and dst.space == "slow":
            self.writes += src.data.nbytes
        dst.data[...] = src.data
        if dst.valid is not None:
            dst.valid[...] = True

    def _band(self, op: loop.BandComputeOp) -> Callable[[], None]:
        vals = self.vals
        nn_op = op.nn_op
        assert isinstance(nn_op, nn.NNOp)
        cuts = op.cut_axes()
        bounds = [self._slot(b) for b in op.bounds]
        in_vs = [self._slot(v) for v in op.inputs]
        out_vs = [self._slot(v) for v in op.outputs]
        n_in = len(in_vs)
        finish = isinstance(op, loop.FinishOp)
        accumulate = isinstance(op, loop.AccumulateOp)
        compute = self.compute

        def bands() -> list[dict[int, tuple[int, int]]]:
            values = [vals[b] for b in bounds]
            out: list[dict[int, tuple[int, int]]] = []
            i = 0
            for axes in cuts:
                band: dict[int, tuple[int, int]] = {}
                for ax in axes:
                    band[ax] = (values[i], values[i + 1])  # type: ignore[assignment]
                    i += 2
                out.append(band)
            return out

        def run() -> None:
            bs = bands()
            held, out = bs[:n_in], bs[n_in]
            if any(hi <= lo for lo, hi in out.values()):
                return  # nothing to compute in this tile
            ins: list[MemRef] = [vals[v] for v in in_vs]  # type: ignore[misc]
            outs: list[MemRef] = [vals[v] for v in out_vs]  # type: ignore[misc]
            what = f"{self.where}: {op.name} of {nn_op.name}"
            if finish:
                self._need(what, ins[0], {}, {})
                if compute:
                    assert isinstance(nn_op, nn.GlobalAveragePoolOp)
                    outs[0].data[...] = band_exec.finish(nn_op, ins[0].data)
                self._mark(outs[0])
                return
            if accumulate:
                self._need(what, ins[0], held[0], held[0])
                if compute:
                    assert isinstance(nn_op, nn.GlobalAveragePoolOp)
                    band_exec.accumulate(nn_op, ins[0].data, outs[0].data)
                return
            for i, (m, h) in enumerate(zip(ins, held)):
                if m.valid is None:
                    continue  # a verified plan runs unchecked (plan-arena's dry run checked it)
                try:
                    need = band_exec.required(nn_op, i, h, out)
                except BandError as e:
                    raise LoopIRError(f"{what}: {e}") from None
                self._need(f"{what} operand #{i}", m, h, need)
            if compute:
                try:
                    res = band_exec.compute(nn_op, [m.data for m in ins], held, out)
                except BandError as e:
                    raise LoopIRError(f"{what}: {e}") from None
                for m, r in zip(outs, res):
                    m.data[...] = r
            for m in outs:
                self._mark(m)

        return run

    def _need(self, what: str, m: MemRef, held: Band, need: Band) -> None:
        """The rows `need` lie in the band `held` and were loaded or computed."""
        if m.valid is None:
            return
        idx = [slice(None)] * m.data.ndim
        for ax, (lo, hi) in need.items():
            if hi <= lo:
                idx[ax] = slice(0, 0)
                continue
            h0, h1 = held.get(ax, (0, m.data.shape[ax]))
            if lo < h0 or hi > h1:
                raise LoopIRError(
                    f"{what} reads rows [{lo}, {hi}) of '{m.name}' along axis "
                    f"{ax}, outside the band it holds, [{h0}, {h1})"
                )
            idx[ax] = slice(lo - h0, hi - h0)
        part = m.valid[tuple(idx)]
        if not part.all():
            bad = np.argwhere(~part)[0]
            raise LoopIRError(
                f"{what} reads '{m.name}' at {tuple(int(b) for b in bad)} of its band "
                f"{dict(need)}, which was never loaded or computed"
            )

    @staticmethod
    def _mark(m: MemRef) -> None:
        if m.valid is not None:
            m.valid[...] = True


def run_loop_module(
    module: ModuleOp,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
    compute: bool = True,
) -> RunResult:
    """Run a lowered, arena-planned module on internal-layout inputs."""
    r = LoopRunner(module, weights, compute)
    outs = r.run(inputs)
    stats = RunStats(
        r.fast.peak,
        r.fast.high,
        r.fast.size,
        r.slow.peak,
        r.reads,
        r.writes,
        r.tiles,
        r.stream_rows,
        r.stream_bytes,
        r.out_rows,
    )
    return RunResult(outs, stats)


def dry_run(module: ModuleOp) -> None:
    """Run the loop IR without computing: LoopIRError if a band reads rows
    never loaded or outside its band, or a buffer leaves its arena."""
    fn = main_func(module)
    weights: dict[str, np.ndarray] = {}
    for g in module.ops:
        ref = g.attributes.get("loop.ref")
        if isinstance(g, mr.GlobalOp) and isinstance(ref, StringAttr):
            t = g.type
            assert isinstance(t, MemRefType)
            weights[ref.data] = np.zeros(tuple(t.get_shape()), numpy_dtype(t.element_type))
    inputs = []
    for a in fn.body.block.args:
        t = a.type
        assert isinstance(t, MemRefType)
        inputs.append(np.zeros(tuple(t.get_shape()), numpy_dtype(t.element_type)))
    LoopRunner(module, weights, compute=False).run(inputs)

