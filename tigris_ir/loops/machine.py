"""The loop machine: loop-level IR run by xDSL's interpreter framework.

One `InterpreterFunctions` class per dialect (`arith`, `scf`, `memref`,
`linalg`, `loop`; `func` is xDSL's own), sharing one state, `Machine`: the
fast and slow arenas of the plan (`loop.arena`, `loop.slow_arena`), every
buffer a numpy view of its arena at its `loop.offset`, and the traffic
counters (bytes copied slow -> fast and fast -> slow, tiles run). Values are
Python ints for `index` and `Ref` for memrefs.

Run without compute (`tracked=True`) the machine is the plan verifier of
`plan-arena` (`verify_plan`). It computes nothing; every element of every
buffer carries a tag instead, the tensor it holds and its position there
(written by band ops and inputs, moved by copies), and the machine proves:

- reads: a band reads only rows that lie in the band it holds, and they
  hold the elements its `nn` op needs there (not stale rows of an earlier
  tile, not nothing); a copy reads only written elements;
- cover: a copy into a slow buffer of tensor T carries T's elements, and the
  function's results hold their tensors' elements, each at its place; a band
  op computes an element of its output at most once where the plan claims no
  recomputation (`unit_of`: outside tile loops, in a line-buffered chain, in
  a tile loop of one band op), and `loop.accumulate` adds each input element
  once; a slow element is written once. Rows that nothing reads or spills
  (a strided consumer's skipped rows) need not be computed;
- bounds: every buffer lies in its arena without overlapping a live one,
  every subview and index inside its memref.

A failure is a `LoopIRError` (a `PlanRunError`) naming the band op (`loop.node`,
the graph node it computes), its unit and tile, and the rows, for instance
"loop.band of 'relu_1' (chain 0) has not computed rows [7, 8) of its output (...)".
`tigris_ir.interp` adds the compute (the band ops' kernels) to the same
functions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    VectorType,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.func import FuncFunctions
from xdsl.ir import Block, Operation, Region

from tigris_ir.dialects import loop, nn
from tigris_ir.loops.arena import (
    BodyScope,
    FastArena,
    Lifetime,
    arg_names,
    body_scopes,
    int_attr,
    lifetimes,
    numpy_dtype,
    offset_of,
)
from tigris_ir.loops.need import OpFacts, op_facts, required
from tigris_ir.loops.schedule import Buffer, PlanRunError
from tigris_ir.plan.band import Band, BandError
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.tiling_class import TilingClass


class LoopIRError(PlanRunError):
    """The loop IR does something the plan forbids (the message names it)."""


POSITION_BITS = 40
"""A tag is `producer << POSITION_BITS | position`: which tensor an element
holds (a band op's result, an input, an accumulator) and its flat position
in that tensor; -1 for an element that holds nothing."""
_POSITION = (1 << POSITION_BITS) - 1


@dataclass
class Ref:
    """A memref at run time: a numpy view; in tracked runs the tag of every
    element (what it holds) and, for slow buffers, how often each element was
    written; its memory space and the tensor it was allocated for."""

    data: np.ndarray
    tags: np.ndarray | None
    writes: np.ndarray | None
    space: str
    name: str

    def view(self, idx: tuple[slice, ...]) -> Ref:
        return Ref(
            self.data[idx],
            None if self.tags is None else self.tags[idx],
            None if self.writes is None else self.writes[idx],
            self.space,
            self.name,
        )


def positions(shape: Sequence[int], band: Band) -> np.ndarray:
    """The flat positions in a tensor of `shape` of the elements of `band`
    (its ranges along the axes it cuts, whole along the others): a read-only
    view of the tensor's table of positions."""
    if any(lo < 0 or hi > shape[ax] for ax, (lo, hi) in band.items()):
        out = np.zeros((1,) * len(shape), dtype=np.int64)  # past the tensor's bounds
        stride = 1
        for ax in reversed(range(len(shape))):
            lo, hi = band.get(ax, (0, shape[ax]))
            r = np.arange(lo, hi, dtype=np.int64) * stride
            out = out + r.reshape([-1 if a == ax else 1 for a in range(len(shape))])
            stride *= shape[ax]
        return out
    table = _position_table(tuple(shape))
    return table[tuple(slice(*band[ax]) if ax in band else slice(None) for ax in range(len(shape)))]


@functools.lru_cache(maxsize=32)
def _position_table(shape: tuple[int, ...]) -> np.ndarray:
    """Every flat position of a tensor of `shape`, in its shape (made once per
    shape: a band's positions are a slice of it)."""
    table = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    table.flags.writeable = False
    return table


_AXES = {4: ("image", "rows", "columns", "channels"), 3: ("image", "positions", "channels")}


def axis_name(rank: int, ax: int) -> str:
    """An axis of a channels-last tensor in words (`rows` for axis 1 of NHWC)."""
    names = _AXES.get(rank)
    return names[ax] if names and ax < len(names) else f"axis {ax}"


def node_of(op: loop.BandComputeOp) -> str:
    """The band op in a diagnostic: its kind and the graph node it computes."""
    a = op.attributes.get(loop.NODE_ATTR)
    who = a.data if isinstance(a, StringAttr) else op.nn_op.name
    return f"{op.name} of '{who}'"


def unit_of(op: Operation, bands_of: dict[int, list[Operation]] | None = None) -> tuple[str, bool]:
    """The tile loop around `op` (its `loop.unit`, "" outside) and whether the
    plan claims each element of the op's output is computed once: outside a
    tile loop, in a tile loop of one band op (nothing in it reads a halo), in
    a line-buffered chain (its line buffers exist for that) unless the op is
    of a member stage holding a channel Concat (`recomputes`). Elsewhere the
    intermediate ops of a unit recompute their halo rows. `bands_of` keeps
    each tile loop's band ops between calls."""
    cache: dict[int, list[Operation]] = {} if bands_of is None else bands_of
    p = op.parent_op()
    while p is not None and not isinstance(p, func.FuncOp):
        kind = p.attributes.get(loop.KIND_ATTR)
        if isinstance(p, scf.ForOp) and isinstance(kind, StringAttr):
            unit = p.attributes.get(loop.UNIT_ATTR)
            name = unit.data if isinstance(unit, StringAttr) else "a tile loop"
            bands = cache.get(id(p))
            if bands is None:
                bands = cache[id(p)] = [o for o in p.walk() if isinstance(o, loop.BandOp)]
            if len(bands) == 1:
                return name, True
            if kind.data.endswith(loop.LINE_BUFFERED):
                return name, not recomputes(op, bands)
            return name, False
        p = p.parent_op()
    return "", True


def is_channel_concat(op: Operation) -> bool:
    """A band op computing a Concat along the channel axis (one that tiles
    with the band, `TilingClass.POINTWISE`)."""
    if not isinstance(op, loop.BandOp):
        return False
    nn_op = op.nn_op
    return isinstance(nn_op, nn.ConcatOp) and nn_op.tiling() is TilingClass.POINTWISE


def recomputes(op: Operation, bands: Sequence[Operation]) -> bool:
    """Whether band op `op` of a line-buffered chain (whose band ops are
    `bands`, in order) may compute its whole range every tile: it names its
    member stage (`loop.recompute`), the ops naming that stage are consecutive
    and one of them is a channel Concat (`spec/tiling.md`: a stage that holds
    a Concat recomputes); or it is a window feeder (`loop.FEEDER`), the first
    band op of a pixel run's block loop. Any other claim is not the plan's,
    and the op must compute each row once."""
    stage = op.attributes.get(loop.RECOMPUTE_ATTR)
    if not isinstance(stage, StringAttr):
        return False
    if stage.data == loop.FEEDER:  # a window feeder: the first op of a pixel run's block
        p = op.parent_op()
        if not isinstance(p, scf.ForOp) or loop.PIXEL_BLOCK_ATTR not in p.attributes:
            return False
        return op is next((o for o in p.body.block.ops if isinstance(o, loop.BandOp)), None)
    at = [i for i, b in enumerate(bands) if b.attributes.get(loop.RECOMPUTE_ATTR) == stage]
    if not at or at != list(range(at[0], at[-1] + 1)):
        return False
    return any(is_channel_concat(bands[i]) for i in at)


@dataclass
class Cover:
    """How often a band op computed each element of one operand's band axes."""

    op: loop.BandComputeOp
    operand: int
    axes: tuple[int, ...]
    rank: int
    counts: np.ndarray
    once: bool
    unit: str
    pid: int

    def add(self, band: Band, where: str) -> None:
        idx = tuple(slice(*band.get(ax, (0, n))) for ax, n in zip(self.axes, self.counts.shape))
        self.counts[idx] += 1
        twice = np.asarray(self.counts[idx] > 1)
        if self.once and twice.any():
            at = f"{where}: " if where else ""
            raise LoopIRError(f"{at}{node_of(self.op)} {self._what(twice, idx)} twice")

    def _what(self, bad: np.ndarray, idx: tuple[slice, ...], verbs: str = "computes adds") -> str:
        words = []
        for k, (ax, sl) in enumerate(zip(self.axes, idx)):
            other = tuple(i for i in range(bad.ndim) if i != k)
            line = np.asarray(bad.any(axis=other) if other else bad)
            start = sl.start or 0
            lo = int(np.flatnonzero(line)[0])
            hi = lo
            while hi < line.size and line[hi]:
                hi += 1
            words.append(f"{axis_name(self.rank, ax)} [{start + lo}, {start + hi})")
        what = "its input" if isinstance(self.op, loop.AccumulateOp) else "its output"
        compute, add = verbs.split(" ", 1) if " " in verbs else (verbs, verbs)
        verb = add if isinstance(self.op, loop.AccumulateOp) else compute
        return f"{verb} {' x '.join(words) or 'all'} of {what}"

    def gap(self, final: bool) -> str:
        """The elements not computed so far, in words ("" if none): "never" once
        the run is over, "has not" before."""
        missing = np.asarray(self.counts == 0)
        if not missing.any():
            return ""
        where = f" ({self.unit})" if self.unit else ""
        full = tuple(slice(0, n) for n in self.counts.shape)
        verbs = "never|computes never|adds" if final else "has|not|computed has|not|added"
        what = self._what(missing, full, verbs).replace("|", " ")
        return f"{node_of(self.op)}{where} {what}"


class Machine:
    """The state the functions share: arenas, counters, covers, where the run is.

    `plan=False` for a module of kernels (what `lower-gebp` emits): no arenas,
    every buffer plain scratch."""

    def __init__(
        self,
        module: ModuleOp,
        weights: Mapping[str, np.ndarray],
        tracked: bool,
        plan: bool = True,
    ):
        self.module = module
        self.weights = weights
        self.tracked = tracked
        self.reads = 0
        self.writes = 0
        self.tiles = 0
        self.stream_rows = 0
        self.stream_bytes = 0
        self.out_rows = 0
        self.rows_of: dict[tuple[str, str], int] = {}
        """Rows moved per streamed tensor: ("in", input) or ("out", tensor)."""
        self.stream_rows_by: tuple[int, ...] = ()
        self.out_rows_by: tuple[int, ...] = ()
        self.where = ""
        self.globals = {op.sym_name.data: op for op in module.ops if isinstance(op, mr.GlobalOp)}
        self.lives: dict[int, Lifetime] = {}
        self.ends: dict[int, list[Lifetime]] = {}
        self.covers: dict[tuple[str, object], list[Cover]] = {}
        self.loop_bands: dict[int, list[Operation]] = {}
        self.global_refs: dict[str, Ref] = {}
        self.pids: dict[str, int] = {}
        self.names: list[str] = []
        self.fast = self.slow = FastArena(0)
        self.bodies: dict[int, list[BodyScope]] = {}
        """Per scf.if / scf.while of an If / Loop: its bodies' scopes."""
        self.body_peaks: dict[str, int] = {}
        """The measured fast peak of each body that ran (by path)."""
        self.body_runs: dict[str, int] = {}
        self.scratch_peaks: dict[str, int] = {}
        """The measured peak of each chain tile's scratch buffers (by path)."""
        if not plan:
            return
        self.fn = main_func(module)
        fast = int_attr(self.fn, loop.ARENA_ATTR)
        slow = int_attr(self.fn, loop.SLOW_ARENA_ATTR)
        if fast is None or slow is None:
            raise LoopIRError("the loop IR has no arena: run plan-arena first")
        self.fast = FastArena(fast)
        self.slow = FastArena(slow)
        top_lives = lifetimes(self.fn)
        self.lives = {id(lv.owner): lv for lv in top_lives}
        for sc in body_scopes(self.fn.body.block, top_lives):
            self.bodies.setdefault(id(sc.op), []).append(sc)
            self.lives.update((id(lv.owner), lv) for lv in sc.lives)
        top = list(self.fn.body.block.ops)
        for lv in self.lives.values():
            if not isinstance(lv.owner, Operation) and lv.last < len(top):
                self.ends.setdefault(id(top[lv.last]), []).append(lv)

    # ---- memory ---------------------------------------------------------

    def arena(self, space: str) -> FastArena:
        return self.fast if space == "fast" else self.slow

    def alloc(self, lv: Lifetime, t: MemRefType) -> Ref:
        off = offset_of(lv, self.fn)
        if off is None:
            raise LoopIRError(f"{lv.space} buffer '{lv.tensor}' has no offset: run plan-arena")
        buf = Buffer(lv.key, tuple(t.get_shape()), numpy_dtype(t.element_type), off)
        data = self.arena(lv.space).alloc(buf, f"{lv.space} memory")
        tags = np.full(data.shape, -1, dtype=np.int64) if self.tracked else None
        slow = self.tracked and lv.space == "slow"
        writes = np.zeros(data.shape, dtype=np.uint8) if slow else None
        return Ref(data, tags, writes, lv.space, lv.tensor)

    def stream_out(self, op: mr.AllocOp, t: MemRefType) -> Ref:
        """A streamed output: no storage in either arena, the rows the consumer
        received; each element is sent once (tracked like a slow buffer)."""
        tensor = op.attributes.get(loop.TENSOR_ATTR)
        name = tensor.data if isinstance(tensor, StringAttr) else "output"
        data = np.zeros(tuple(t.get_shape()), numpy_dtype(t.element_type))
        tags = np.full(data.shape, -1, dtype=np.int64) if self.tracked else None
        writes = np.zeros(data.shape, dtype=np.uint8) if self.tracked else None
        return Ref(data, tags, writes, loop.STREAM.data, name)

    def producer(self, name: str) -> int:
        """The producer number of a tensor's tags."""
        pid = self.pids.get(name)
        if pid is None:
            pid = self.pids[name] = len(self.names)
            self.names.append(name)
        return pid

    def wrote(self, dst: Ref, what: str, tags: np.ndarray | int) -> None:
        """`dst` now holds `tags`; a slow element written a second time is an error."""
        if dst.tags is None:
            return
        try:
            dst.tags[...] = tags
        except ValueError:
            raise LoopIRError(
                f"{self.where}: {what} writes {dst.data.shape} elements into '{dst.name}' "
                f"for a band of {np.shape(tags)}"
            ) from None
        if dst.writes is not None:
            if (dst.writes > 0).any():
                bad = np.argwhere(dst.writes > 0)[0]
                raise LoopIRError(
                    f"{self.where}: {what} writes slow '{dst.name}' at "
                    f"{tuple(int(b) for b in bad)} of the written region a second time"
                )
            dst.writes += 1

    def global_ref(self, sym: str) -> Ref:
        """The memref of a `memref.global`: its table (read once, read-only) or
        its weight from the weight table."""
        ref = self.global_refs.get(sym)
        if ref is None:
            ref = self.global_refs[sym] = self._global_ref(sym)
        return ref

    def _global_ref(self, sym: str) -> Ref:
        g = self.globals.get(sym)
        if g is None:
            raise LoopIRError(f"no memref.global @{sym}")
        t = g.type
        assert isinstance(t, MemRefType)
        shape, dt = tuple(t.get_shape()), numpy_dtype(t.element_type)
        init = g.initial_value
        if isinstance(init, DenseIntOrFPElementsAttr):
            arr = np.array(init.get_values(), dtype=dt).reshape(shape)
            arr.flags.writeable = False
            return Ref(arr, None, None, "", sym)
        ref = g.attributes.get(loop.REF_ATTR)
        key = ref.data if isinstance(ref, StringAttr) else sym
        if self.tracked:  # nothing is computed: the weight's values do not matter
            zeros = np.zeros(shape, dt)
            zeros.flags.writeable = False
            return Ref(zeros, None, None, "", key)
        if key not in self.weights:
            raise LoopIRError(f"weight '{key}' (@{sym}) is not in the weight table")
        w = self.weights[key]
        if w.shape == () and shape == (1,):  # a scalar is stored as one element
            w = w.reshape(1)
        if tuple(w.shape) != shape or w.dtype != dt:
            raise LoopIRError(
                f"weight '{key}' is {w.dtype}{list(w.shape)}, the IR says {dt}{list(shape)}"
            )
        return Ref(w, None, None, "", key)

    def need(
        self, what: str, m: Ref, held: Band, need: Band, shape: Sequence[int] | None
    ) -> None:
        """The rows `need` lie in the band `held` and hold what they should:
        the elements at those positions of a tensor of `shape` (None: only
        that they were loaded or computed)."""
        if m.tags is None:
            return
        idx = [slice(None)] * m.data.ndim
        for ax, (lo, hi) in need.items():
            if hi <= lo:
                idx[ax] = slice(0, 0)
                continue
            h0, h1 = held.get(ax, (0, m.data.shape[ax]))
            if lo < h0 or hi > h1:
                raise LoopIRError(
                    f"{what} reads {axis_name(m.data.ndim, ax)} [{lo}, {hi}) of '{m.name}', "
                    f"outside the band it holds, [{h0}, {h1})"
                )
            idx[ax] = slice(lo - h0, hi - h0)
        part = m.tags[tuple(idx)]
        if shape is None:
            self.holds(part, None, f"{what} reads '{m.name}' at {{at}} of its band {dict(need)}")
            return
        want = positions(shape, {ax: need.get(ax, rng) for ax, rng in held.items()})
        self.holds(part, want, f"{what} reads '{m.name}' at {{at}} of its band {dict(need)}")

    def holds(
        self, tags: np.ndarray, want: np.ndarray | None, what: str, final: bool = False
    ) -> None:
        """The elements' tags are written and (`want`) at the wanted positions;
        otherwise an error naming, where it can, the band op that has not
        computed what is missing (`final`: the run is over, it never does)."""
        written = tags >= 0
        ok = written if want is None else written & ((tags & _POSITION) == want)
        if ok.all():
            return
        bad = tuple(int(b) for b in np.argwhere(~ok)[0])
        why = what.replace("{at}", str(bad))
        tag = int(tags[bad])
        if tag < 0:
            why += ", which was never loaded or computed"
        else:
            pid, pos = tag >> POSITION_BITS, tag & _POSITION
            assert want is not None
            why += (
                f", which holds element {pos} of '{self.names[pid]}' instead of element "
                f"{int(want[bad])}"
            )
        pid = None if tag < 0 else tag >> POSITION_BITS
        gap = self.gap(pid, final) if pid is not None or final else ""
        raise LoopIRError(f"{gap} ({why})" if gap else why)

    def expect(self, tags: np.ndarray, tensor: str, what: str, final: bool = False) -> None:
        """Elements written into a buffer of `tensor` hold `tensor` (when a band
        op or an input of that name has produced anything): otherwise an error
        naming the band op that never computed what is missing."""
        pid = self.pids.get(tensor)
        if pid is None:
            return
        wrong = (tags >> POSITION_BITS) != pid
        if not wrong.any():
            return
        bad = tuple(int(b) for b in np.argwhere(wrong)[0])
        tag = int(tags[bad])
        why = (
            f"{what} puts element {tag & _POSITION} of '{self.names[tag >> POSITION_BITS]}' "
            f"at {bad} of '{tensor}'"
        )
        gap = self.gap(pid, final)
        raise LoopIRError(f"{gap} ({why})" if gap else why)

    def gap(self, pid: int | None, final: bool) -> str:
        """The first band op (of producer `pid`, or any) that has not computed
        part of its output so far, in words; "" if none."""
        for covers in self.covers.values():
            for c in covers:
                if pid is not None and c.pid != pid:
                    continue
                words = c.gap(final)
                if words:
                    return words
        return ""

    def cover(self, op: loop.BandComputeOp, operand: int, band: Band) -> Cover:
        """Count one computation of `band` of `op`'s operand (tracked runs):
        per kind of band op and graph node, so that two band ops computing one
        node count together."""
        node = op.attributes.get(loop.NODE_ATTR)
        key = (op.name, node.data) if isinstance(node, StringAttr) else (op.name, id(op))
        covers = self.covers.get(key)
        if covers is None:
            covers = self.covers[key] = []
        for c in covers:
            if c.operand == operand:
                c.add(band, self.where)
                return c
        axes = op.cut_axes()[operand]
        types = [a.type for a in op.body.block.args] + op.tensor_results()
        shape = nn.shape_of(types[operand])
        unit, once = unit_of(op, self.loop_bands)
        if isinstance(op, loop.AccumulateOp | loop.FinishOp):
            once = True
        name = node.data if isinstance(node, StringAttr) else f"{op.name} {id(op)}"
        k = operand - len(op.inputs)
        pid = self.producer(name if k <= 0 else f"{name}#{k}")
        counts = np.zeros([shape[a] for a in axes], np.int32)
        c = Cover(op, operand, axes, len(shape), counts, once, unit, pid)
        covers.append(c)
        c.add(band, self.where)
        return c

    def run_body(self, it: Interpreter, op: Operation, j: int, args: PythonValues) -> PythonValues:
        """Run body `j` of an If / Loop (or one tile of a chain whose scratch
        buffers lie in its workspace): its buffers lie in the node's
        workspace, so the workspace leaves the live set while it runs; the
        body's own peak is measured from what is live without it."""
        scopes = self.bodies.get(id(op), [])
        sc = scopes[j] if j < len(scopes) else None
        region = op.regions[j] if not isinstance(op, scf.WhileOp) else op.after_region
        ws = sc.workspace if sc is not None else None
        span = self.fast.suspend(ws.key) if ws is not None and ws.key in self.fast.live else None
        saved, base = self.fast.peak, self.fast.now
        self.fast.peak = base
        where = self.where
        try:
            return it.run_ssacfg_region(region, args, sc.path if sc is not None else "body")
        finally:
            self.where = where
            if sc is not None and isinstance(op, scf.ForOp):  # a tile with scratch
                got = self.fast.peak - base
                self.scratch_peaks[sc.path] = max(self.scratch_peaks.get(sc.path, 0), got)
            elif sc is not None:
                got = self.fast.peak - base
                self.body_peaks[sc.path] = max(self.body_peaks.get(sc.path, 0), got)
                self.body_runs[sc.path] = self.body_runs.get(sc.path, 0) + 1
            self.fast.peak = max(saved, self.fast.peak)
            if ws is not None and span is not None:
                self.fast.resume(ws.key, span)

    # ---- running --------------------------------------------------------

    def interpreter(self) -> Interpreter:
        """An interpreter with the machine's functions."""
        it = MachineInterpreter(self.module, machine=self)
        for f in self.functions():
            it.register_implementations(f)
        return it

    def functions(self) -> list[InterpreterFunctions]:
        return [
            FuncFunctions(),
            ArithFunctions(),
            ScfFunctions(self),
            MemrefFunctions(self),
            LinalgFunctions(self),
            LoopFunctions(self),
        ]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        block = self.fn.body.block
        if len(inputs) != len(block.args):
            raise PlanRunError(f"the model takes {len(block.args)} input(s), got {len(inputs)}")
        names = arg_names(self.fn)
        args: list[Ref] = []
        for i, (a, x) in enumerate(zip(block.args, inputs)):
            t = a.type
            assert isinstance(t, MemRefType)
            shape, dt = tuple(t.get_shape()), numpy_dtype(t.element_type)
            if tuple(x.shape) != shape or x.dtype != dt:
                raise PlanRunError(
                    f"input '{names[i]}' must be {dt} of shape {'x'.join(map(str, shape))}, got "
                    f"{x.dtype} of shape {'x'.join(map(str, x.shape))}"
                )
            lv = self.lives.get(id(a))
            if lv is None:  # a constant, or a streamed input (only band loads read it)
                stream = loop.STREAM.data if loop.space_of(t) == loop.STREAM.data else ""
                tags = None
                if self.tracked:
                    tags = (self.producer(names[i]) << POSITION_BITS) | positions(shape, {})
                args.append(Ref(np.array(x), tags, None, stream, names[i]))
                continue
            m = self.alloc(lv, t)
            m.data[...] = x
            if m.tags is not None:
                pid = self.producer(names[i])
                m.tags[...] = (pid << POSITION_BITS) | positions(shape, {})
            args.append(m)
        outs = self.interpreter().run_ssacfg_region(self.fn.body, tuple(args), "main")
        self._rows_by(args, outs)
        results: list[np.ndarray] = []
        for r in outs:
            assert isinstance(r, Ref)
            if r.tags is not None:
                want = positions(r.data.shape, {})
                self.holds(r.tags, want, f"the function's result '{r.name}' at {{at}}", True)
                self.expect(r.tags, r.name, "the function's result", True)
            results.append(r.data.copy())
        return results

    def _rows_by(self, args: Sequence[Ref], outs: Sequence[object]) -> None:
        """The rows moved per model input and output, in the model's order, as
        the C's callbacks see them (indexed by port; () when none streams)."""
        stream = loop.STREAM.data
        if any(a.space == stream for a in args):
            self.stream_rows_by = tuple(
                self.rows_of.get(("in", a.name), 0) if a.space == stream else 0 for a in args
            )
        refs = [r for r in outs if isinstance(r, Ref)]
        if any(r.space == stream for r in refs):
            self.out_rows_by = tuple(
                self.rows_of.get(("out", r.name), 0) if r.space == stream else 0 for r in refs
            )

    # ---- compute: one hook per band op, nothing here (the verifier) -----
    # `tigris_ir.interp.loop_ir` computes: `loop.band`'s `nn` op on its band,
    # `loop.accumulate`'s partial sums and `loop.finish`'s result.

    def band(
        self, nn_op: nn.NNOp, ins: list[Ref], outs: list[Ref], held: list[Band], out: Band
    ) -> None:
        """`loop.band`: the results of `nn_op` over the band `out`, from
        operands holding the bands `held`."""

    def accumulate(self, nn_op: nn.NNOp, band: Ref, acc: Ref) -> None:
        """`loop.accumulate`: add a band's sums to the accumulator."""

    def finish(self, nn_op: nn.NNOp, acc: Ref, out: Ref) -> None:
        """`loop.finish`: the result from the accumulated sums."""


@dataclass
class MachineInterpreter(Interpreter):
    """xDSL's interpreter with the machine's dispatch: each block is resolved
    once into its ops' `@impl`s and operand slots, values live in one flat
    environment (SSA values are defined once), an error of the loop IR is
    raised as the functions raise it (xDSL's dispatch would attach the whole
    module, printed, at every level of nesting), an op without an `@impl` is
    named, and the function's arguments are freed after their last
    top-level use."""

    machine: Machine | None = None
    env: dict[int, Any] = field(default_factory=dict[int, Any])
    blocks: dict[int, _Steps] = field(default_factory=dict[int, "_Steps"])

    def _resolve(self, block: Block) -> _Steps:
        impls = self._impls._impl_dict  # noqa: SLF001
        ends = self.machine.ends if self.machine is not None else {}
        steps: list[_Step] = []
        for op in block.ops:
            entry = impls.get(type(op))
            if entry is None:
                raise LoopIRError(f"the loop interpreter cannot run '{op.name}'")
            ft, fn = entry
            steps.append(
                (
                    op,
                    ft,
                    fn,
                    tuple(id(v) for v in op.operands),
                    tuple(id(r) for r in op.results),
                    tuple(ends.get(id(op), ())),
                )
            )
        return tuple(id(a) for a in block.args), steps

    def run_ssacfg_region(
        self, region: Region, args: PythonValues, name: str = "unknown"
    ) -> PythonValues:
        block = region.blocks.first
        if block is None:
            return ()
        if block.next_block is not None:
            raise LoopIRError(f"{name}: a region of several blocks is not run")
        plan = self.blocks.get(id(block))
        if plan is None:
            plan = self.blocks[id(block)] = self._resolve(block)
        arg_ids, steps = plan
        env = self.env
        for k, a in zip(arg_ids, args):
            env[k] = a
        get = env.__getitem__
        for op, ft, fn, ins, outs, ends in steps:
            result = fn(ft, self, op, tuple(map(get, ins)))
            term = result.terminator_value
            if term is not None:
                if isinstance(term, ReturnedValues):
                    return term.values
                raise LoopIRError(f"{name}: '{op.name}' branches, which is not run")
            for k, v in zip(outs, result.values):
                env[k] = v
            if ends:
                m = self.machine
                assert m is not None
                for lv in ends:
                    m.arena(lv.space).free(lv.key)
        return ()


_Step = tuple[Operation, InterpreterFunctions, Any, tuple[int, ...], tuple[int, ...],
              tuple[Lifetime, ...]]
_Steps = tuple[tuple[int, ...], list[_Step]]


# ---------------------------------------------------------------------------
# the functions, one class per dialect


@register_impls
class ArithFunctions(InterpreterFunctions):
    """Index arithmetic, scalar and splat constants, float products."""

    @impl(arith.ConstantOp)
    def run_constant(self, it: Interpreter, op: arith.ConstantOp, args: PythonValues):
        v = op.value
        if isinstance(v, IntegerAttr):
            return (int(v.value.data),)
        if isinstance(v, FloatAttr):
            return (np.float32(v.value.data) if _is_f32(op.result.type) else float(v.value.data),)
        if isinstance(v, DenseIntOrFPElementsAttr):
            ty = op.result.type
            dt = numpy_dtype(ty.get_element_type()) if isinstance(ty, VectorType) else None
            values = np.asarray(v.get_values(), dtype=dt)
            shape = tuple(ty.get_shape()) if isinstance(ty, VectorType) else ()
            return (np.broadcast_to(values, shape).copy(),)
        raise LoopIRError(f"arith.constant {v} is not run")

    @impl(arith.AddiOp)
    def run_addi(self, it: Interpreter, op: arith.AddiOp, args: PythonValues):
        return (args[0] + args[1],)

    @impl(arith.SubiOp)
    def run_subi(self, it: Interpreter, op: arith.SubiOp, args: PythonValues):
        return (args[0] - args[1],)

    @impl(arith.MuliOp)
    def run_muli(self, it: Interpreter, op: arith.MuliOp, args: PythonValues):
        return (args[0] * args[1],)

    @impl(arith.CmpiOp)
    def run_cmpi(self, it: Interpreter, op: arith.CmpiOp, args: PythonValues):
        a, b = int(args[0]), int(args[1])
        pred = int(op.predicate.value.data)
        # eq ne slt sle sgt sge (ult ule ugt uge on the non-negative loop values)
        ok = [a == b, a != b, a < b, a <= b, a > b, a >= b, a < b, a <= b, a > b, a >= b][pred]
        return (ok,)

    @impl(arith.AndIOp)
    def run_andi(self, it: Interpreter, op: arith.AndIOp, args: PythonValues):
        a, b = args
        if isinstance(a, bool | np.bool_) or isinstance(b, bool | np.bool_):
            return (bool(a) and bool(b),)
        return (int(a) & int(b),)

    @impl(arith.IndexCastOp)
    def run_index_cast(self, it: Interpreter, op: arith.IndexCastOp, args: PythonValues):
        return (int(args[0]),)

    @impl(arith.MulfOp)
    def run_mulf(self, it: Interpreter, op: arith.MulfOp, args: PythonValues):
        return ((np.asarray(args[0]) * np.asarray(args[1])).astype(np.float32),)


def _is_f32(t: Any) -> bool:
    return numpy_dtype(t) == np.float32 if not isinstance(t, VectorType) else False


@register_impls
class ScfFunctions(InterpreterFunctions):
    """`scf.for`: a tile loop (`loop.kind`) counts its tiles and names them."""

    def __init__(self, m: Machine):
        self.m = m

    @impl(scf.ForOp)
    def run_for(self, it: Interpreter, op: scf.ForOp, args: PythonValues):
        lb, ub, step, *carried = args
        m = self.m
        tiles = loop.KIND_ATTR in op.attributes
        unit = op.attributes.get(loop.UNIT_ATTR)
        name = unit.data if isinstance(unit, StringAttr) else "loop"
        values = tuple(carried)
        scoped = id(op) in m.bodies  # a chain's tile whose scratch lies in a workspace
        for i in range(lb, ub, step):
            if unit is not None:
                m.tiles += tiles
                m.where = f"{name} {'tile' if tiles else 'group'} {i}"
            if scoped:
                values = tuple(m.run_body(it, op, 0, (i, *values)))
            else:
                values = it.run_ssacfg_region(op.body, (i, *values), "for")
        if unit is not None:
            m.where = ""
        return values

    @impl(scf.IfOp)
    def run_if(self, it: Interpreter, op: scf.IfOp, args: PythonValues):
        """An If: the branch its condition picks (a verifying run, which
        computes nothing, checks both)."""
        if self.m.tracked:
            self.m.run_body(it, op, 0, ())
            if op.false_region.blocks:
                self.m.run_body(it, op, 1, ())
            return ()
        if bool(args[0]):
            self.m.run_body(it, op, 0, ())
        elif op.false_region.blocks:
            self.m.run_body(it, op, 1, ())
        return ()

    @impl(scf.WhileOp)
    def run_while(self, it: Interpreter, op: scf.WhileOp, args: PythonValues):
        """A Loop: the condition region, then a trip, while it holds (a
        verifying run checks one trip, whatever the condition)."""
        values = tuple(args)
        trips = 0
        while True:
            cond, *fwd = it.run_ssacfg_region(op.before_region, values, "while")
            if self.m.tracked:
                if trips:
                    return tuple(fwd)
            elif not cond:
                return tuple(fwd)
            values = tuple(self.m.run_body(it, op, 0, tuple(fwd)))
            trips += 1

    @impl_terminator(scf.ConditionOp)
    def run_condition(
        self, it: Interpreter, op: scf.ConditionOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl_terminator(scf.YieldOp)
    def run_yield(
        self, it: Interpreter, op: scf.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()


def view_spec(op: mr.SubviewOp) -> tuple[tuple[int, int], ...]:
    """Per axis of a subview its offset and size: the static value, or minus
    the operand index of the dynamic one (the source is operand 0, then the
    dynamic offsets, then the dynamic sizes)."""
    at = 1
    spec: list[list[int]] = []
    for ax, o in enumerate(op.static_offsets.get_values()):
        spec.append([int(o), 0])
        if o < 0 and o != DYNAMIC_INDEX:
            raise LoopIRError(f"a subview takes the negative static offset {o} along axis {ax}")
        if o == DYNAMIC_INDEX:
            spec[ax][0], at = -at, at + 1
    for ax, n in enumerate(op.static_sizes.get_values()):
        spec[ax][1] = int(n)
        if n < 0 and n != DYNAMIC_INDEX:
            raise LoopIRError(f"a subview takes the negative static size {n} along axis {ax}")
        if n == DYNAMIC_INDEX:
            spec[ax][1], at = -at, at + 1
    return tuple((o, n) for o, n in spec)


@register_impls
class MemrefFunctions(InterpreterFunctions):
    """Buffers in the arenas (or plain scratch), views, copies, element access."""

    def __init__(self, m: Machine):
        self.m = m
        self.views: dict[int, tuple[tuple[int, int], ...]] = {}

    @impl(mr.AllocOp)
    def run_alloc(self, it: Interpreter, op: mr.AllocOp, args: PythonValues):
        t = op.memref.type
        assert isinstance(t, MemRefType)
        lv = self.m.lives.get(id(op))
        if lv is not None:
            return (self.m.alloc(lv, t),)
        if loop.space_of(t) == loop.STREAM.data:  # a streamed output: what the consumer got
            return (self.m.stream_out(op, t),)
        # scratch outside the arenas (a kernel's packing buffer): NaN or a
        # pattern rather than zeros, so that a kernel that skips an element shows
        dt = numpy_dtype(t.get_element_type())
        fill = np.nan if dt.kind == "f" else 0x5A
        return (Ref(np.full(tuple(t.get_shape()), fill, dtype=dt), None, None, "", "scratch"),)

    @impl(mr.DeallocOp)
    def run_dealloc(self, it: Interpreter, op: mr.DeallocOp, args: PythonValues):
        lv = self.m.lives.get(id(op.memref.owner))
        if lv is not None:
            self.m.arena(lv.space).free(lv.key)
        return ()

    @impl(mr.GetGlobalOp)
    def run_get_global(self, it: Interpreter, op: mr.GetGlobalOp, args: PythonValues):
        return (self.m.global_ref(op.name_.root_reference.data),)

    @impl(mr.SubviewOp)
    def run_subview(self, it: Interpreter, op: mr.SubviewOp, args: PythonValues):
        src = args[0]
        assert isinstance(src, Ref)
        spec = self.views.get(id(op))
        if spec is None:
            spec = self.views[id(op)] = view_spec(op)
        index: list[slice] = []
        shape = src.data.shape
        for ax, (o, n) in enumerate(spec):
            o = args[-o] if o < 0 else o
            n = args[-n] if n < 0 else n
            if o < 0 or n < 0 or o + n > shape[ax]:
                where = f"{self.m.where}: " if self.m.where else ""
                raise LoopIRError(
                    f"{where}a subview of '{src.name}' takes [{o}, {o + n}) along axis {ax} of "
                    f"{shape[ax]}"
                )
            index.append(slice(o, o + n))
        return (src.view(tuple(index)),)

    @impl(mr.CopyOp)
    def run_copy(self, it: Interpreter, op: mr.CopyOp, args: PythonValues):
        src, dst = args
        assert isinstance(src, Ref) and isinstance(dst, Ref)
        m = self.m
        if src.data.shape != dst.data.shape:
            raise LoopIRError(f"{m.where}: memref.copy of {src.data.shape} into {dst.data.shape}")
        if src.tags is not None and not (src.tags >= 0).all():
            raise LoopIRError(
                f"{m.where}: copying '{src.name}' into '{dst.name}' reads elements never written"
            )
        if src.space == loop.STREAM.data:  # the callback delivers whole rows (axis 1)
            rows = src.data.shape[1] if src.data.ndim >= 2 else 1
            m.stream_rows += rows
            m.stream_bytes += src.data.nbytes
            m.rows_of["in", src.name] = m.rows_of.get(("in", src.name), 0) + rows
        elif dst.space == loop.STREAM.data:  # rows sent to the consumer
            rows = dst.data.shape[1] if dst.data.ndim >= 2 else 1
            m.out_rows += rows
            m.rows_of["out", dst.name] = m.rows_of.get(("out", dst.name), 0) + rows
        elif src.space == "slow" and dst.space == "fast":
            m.reads += src.data.nbytes
        elif src.space == "fast" and dst.space == "slow":
            m.writes += src.data.nbytes
        dst.data[...] = src.data
        if src.tags is not None:
            if dst.space in ("slow", loop.STREAM.data):
                where = f"{m.where}: " if m.where else ""
                m.expect(src.tags, dst.name, f"{where}the copy of '{src.name}'")
            m.wrote(dst, f"copying '{src.name}'", src.tags)
        return ()

    @impl(mr.LoadOp)
    def run_load(self, it: Interpreter, op: mr.LoadOp, args: PythonValues):
        ref, *idx = args
        assert isinstance(ref, Ref)
        data = ref.data
        if len(idx) != data.ndim:
            raise LoopIRError(f"memref.load: {len(idx)} indices into a rank-{data.ndim} memref")
        try:
            if idx and min(idx) < 0:
                raise IndexError
            return (data.item(*idx) if data.dtype.kind in "iu" else data[tuple(idx)],)
        except IndexError:
            raise LoopIRError(
                f"memref.load: index {tuple(idx)} out of bounds of {data.shape}"
            ) from None

    @impl(mr.StoreOp)
    def run_store(self, it: Interpreter, op: mr.StoreOp, args: PythonValues):
        value, ref, *idx = args
        assert isinstance(ref, Ref)
        data = ref.data
        if len(idx) != data.ndim or any(not 0 <= i < e for i, e in zip(idx, data.shape)):
            raise LoopIRError(f"memref.store: index {tuple(idx)} out of bounds of {data.shape}")
        data[tuple(idx)] = value
        if ref.tags is not None:  # a Loop's trip number or condition for its body
            flat = int(np.ravel_multi_index(tuple(idx), data.shape))
            ref.tags[tuple(idx)] = (self.m.producer(ref.name) << POSITION_BITS) | flat
        return ()


@register_impls
class LinalgFunctions(InterpreterFunctions):
    """`linalg.fill`: an accumulator's zeros."""

    def __init__(self, m: Machine):
        self.m = m

    @impl(FillOp)
    def run_fill(self, it: Interpreter, op: FillOp, args: PythonValues):
        value, dst = args
        assert isinstance(dst, Ref)
        dst.data[...] = value
        if dst.tags is not None:
            pid = self.m.producer(f"zeros of '{dst.name}'")
            tags = (pid << POSITION_BITS) | positions(dst.data.shape, {})
            self.m.wrote(dst, "linalg.fill", tags)
        return ()


@dataclass(frozen=True)
class _BandStatic:
    """What a band op's runs share: its `nn` op, the shapes of its body's
    operands and results, its name in diagnostics and what `required` reads."""

    nn_op: nn.NNOp
    arg_shapes: tuple[tuple[int, ...], ...]
    result_shapes: tuple[tuple[int, ...], ...]
    node: str
    facts: OpFacts


@register_impls
class LoopFunctions(InterpreterFunctions):
    """`loop.band`, `loop.accumulate`, `loop.finish`: reads checked and covers
    counted (tracked runs), the band computed by the machine."""

    def __init__(self, m: Machine):
        self.m = m
        self.shapes: dict[int, tuple[int, int, list[tuple[int, ...]]]] = {}
        self.statics: dict[int, _BandStatic] = {}
        self.groups: dict[int, int] = {}

    def _shape(self, op: loop.BandComputeOp) -> tuple[int, int, list[tuple[int, ...]]]:
        """The op's input count, operand count and cut axes (read once per op)."""
        s = self.shapes.get(id(op))
        if s is None:
            n_in = len(op.inputs)
            s = self.shapes[id(op)] = (n_in, n_in + len(op.outputs), op.cut_axes())
        return s

    def _static(self, op: loop.BandComputeOp) -> _BandStatic:
        """The op's `nn` op, operand and result shapes and name (read once per op)."""
        s = self.statics.get(id(op))
        if s is None:
            nn_op = op.nn_op
            assert isinstance(nn_op, nn.NNOp)
            s = self.statics[id(op)] = _BandStatic(
                nn_op,
                tuple(nn.shape_of(a.type) for a in op.body.block.args),
                tuple(nn.shape_of(t) for t in op.tensor_results()),
                node_of(op),
                op_facts(nn_op),
            )
        return s

    def _bands(self, op: loop.BandComputeOp, args: PythonValues) -> list[Band]:
        """Per operand the global band its memref holds, from `bounds`."""
        _, n, cuts = self._shape(op)
        out: list[Band] = []
        i = n
        for axes in cuts:
            band: dict[int, tuple[int, int]] = {}
            for ax in axes:
                band[ax] = (args[i], args[i + 1])
                i += 2
            out.append(band)
        return out

    def _split(self, op: loop.BandComputeOp, args: PythonValues) -> tuple[list[Ref], list[Ref]]:
        n_in, n, _ = self._shape(op)
        refs = list(args[:n])
        return refs[:n_in], refs[n_in:n]

    @impl(loop.BandOp)
    def run_band(self, it: Interpreter, op: loop.BandOp, args: PythonValues):
        m = self.m
        bands = self._bands(op, args)
        n_in = self._shape(op)[0]
        held, out = bands[:n_in], bands[n_in]
        if any(hi <= lo for lo, hi in out.values()):
            return ()  # nothing to compute in this tile
        ins, outs = self._split(op, args)
        st = self._static(op)
        if m.tracked:
            what = self._what(op)
            self._check_group(op, out, st, what)
            covers = [m.cover(op, n_in + k, bands[n_in + k]) for k in range(len(outs))]
            for i, (r, h, shape) in enumerate(zip(ins, held, st.arg_shapes)):
                try:
                    need = required(st.nn_op, i, h, out, st.facts)
                except BandError as e:
                    raise LoopIRError(f"{what}: {e}") from None
                m.need(f"{what} operand #{i}", r, h, need, shape)
        try:
            m.band(st.nn_op, ins, outs, held, out)
        except BandError as e:
            raise LoopIRError(f"{self._what(op)}: {e}") from None
        if m.tracked:
            for k, (r, shape, c) in enumerate(zip(outs, st.result_shapes, covers)):
                tags = (c.pid << POSITION_BITS) | positions(shape, bands[n_in + k])
                m.wrote(r, st.node, tags)
        return ()

    def _check_group(self, op: loop.BandOp, out: Band, st: _BandStatic, what: str) -> None:
        """In a tile loop cut into channel groups (`loop.channel_group` g), a
        band computes at most g channels of its result, along the channel axis
        its cuts name."""
        g = self.groups.get(id(op))
        if g is None:
            g = 0
            p = op.parent_op()
            while p is not None and not isinstance(p, func.FuncOp):
                attr = p.attributes.get(loop.CHANNEL_GROUP_ATTR)
                if isinstance(p, scf.ForOp) and isinstance(attr, IntegerAttr):
                    g = int(attr.value.data)
                    break
                p = p.parent_op()
            self.groups[id(op)] = g
        if not g or not st.result_shapes:
            return
        last = len(st.result_shapes[0]) - 1
        lo, hi = out.get(last, (0, st.result_shapes[0][-1]))
        if hi - lo > g:
            raise LoopIRError(
                f"{what}: the tile loop runs groups of {g} channels but the band computes "
                f"channels [{lo}, {hi}) of its result"
            )

    def _what(self, op: loop.BandComputeOp) -> str:
        node = self._static(op).node
        return f"{self.m.where}: {node}" if self.m.where else node

    @impl(loop.AccumulateOp)
    def run_accumulate(self, it: Interpreter, op: loop.AccumulateOp, args: PythonValues):
        m = self.m
        bands = self._bands(op, args)
        if any(hi <= lo for lo, hi in bands[1].values()):
            return ()
        ins, outs = self._split(op, args)
        if m.tracked:
            shape = nn.shape_of(op.body.block.args[0].type)
            m.need(self._what(op), ins[0], bands[0], bands[0], shape)
            m.cover(op, 0, bands[0])
        m.accumulate(self._static(op).nn_op, ins[0], outs[0])
        return ()

    @impl(loop.FinishOp)
    def run_finish(self, it: Interpreter, op: loop.FinishOp, args: PythonValues):
        m = self.m
        bands = self._bands(op, args)
        ins, outs = self._split(op, args)
        if m.tracked:
            m.need(self._what(op), ins[0], {}, {}, None)
        m.finish(self._static(op).nn_op, ins[0], outs[0])
        if m.tracked:
            c = m.cover(op, 1, bands[1])
            shape = nn.shape_of(op.tensor_results()[0])
            m.wrote(outs[0], node_of(op), (c.pid << POSITION_BITS) | positions(shape, bands[1]))
        return ()


def zero_inputs(module: ModuleOp) -> list[np.ndarray]:
    """Inputs of the right shapes and dtypes for a compute-free run."""
    out = []
    for a in main_func(module).body.block.args:
        t = a.type
        assert isinstance(t, MemRefType)
        out.append(np.zeros(tuple(t.get_shape()), numpy_dtype(t.element_type)))
    return out


def verify_plan(module: ModuleOp) -> None:
    """Run the loop IR without computing: `LoopIRError` (a `PlanRunError`)
    naming the band op, unit, tile and rows if a band reads rows never loaded
    or outside its band, a band op leaves an element of its output uncomputed
    or computes it twice where the plan claims once, a slow element is
    written twice or a result never, or a buffer leaves its arena."""
    Machine(module, {}, tracked=True).run(zero_inputs(module))
