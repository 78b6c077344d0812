"""A `Program` (the tile schedule) executed on numpy: one fast arena of exactly
the planned bytes, a slow memory, every load and spill counted.

It measures the fast peak (the largest sum of live aligned buffers, the
planner's definition), the slow peak and the slow reads and writes, which
the tests hold equal to the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func

from tigris_ir.dialects import nn
from tigris_ir.interp import band_exec
from tigris_ir.loops.arena import FastArena
from tigris_ir.loops.schedule import (
    NormalUnit,
    OpStep,
    PlanRunError,
    Program,
    Tile,
    TiledUnit,
    operand_source,
    schedule,
    tensor_consts,
)
from tigris_ir.plan.band import Band, BandError, band_slices
from tigris_ir.plan.memory import align
from tigris_ir.plan.nn_graph import GraphView, build_view
from tigris_ir.plan.planner import Plan, plan
from tigris_ir.plan.tiling import (
    GraphTables,
)
from tigris_ir.reference.executor import run_function

# ---------------------------------------------------------------------------
# Memories


@dataclass
class SlowMemory:
    """Named arrays with byte counters: reads as loaded, writes as spilled."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict[str, np.ndarray])
    sizes: dict[str, int] = field(default_factory=dict[str, int])
    reads: int = 0
    writes: int = 0
    now: int = 0
    peak: int = 0

    def alloc(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.arrays[name] = np.zeros(shape, dtype=dtype)
        size = align(math.prod(shape) * dtype.itemsize)
        self.sizes[name] = size
        self.now += size
        self.peak = max(self.peak, self.now)

    def free(self, name: str) -> None:
        self.arrays.pop(name)
        self.now -= self.sizes.pop(name)

    def load(self, name: str, band: Band) -> np.ndarray:
        a = self.arrays[name]
        part = a[band_slices(band, a.ndim)]
        self.reads += part.nbytes
        return part

    def store(self, name: str, band: Band, value: np.ndarray) -> None:
        a = self.arrays[name]
        a[band_slices(band, a.ndim)] = value
        self.writes += value.nbytes


@dataclass(frozen=True)
class RunStats:
    """What a run measured, in bytes."""

    fast_peak: int
    fast_high: int
    arena_bytes: int
    slow_peak: int
    slow_reads: int
    slow_writes: int
    tiles: int
    stream_rows: int = 0
    """Rows asked of the input stream (a streamed input), and their bytes."""
    stream_bytes: int = 0
    out_rows: int = 0
    """Rows sent to the output stream (a streamed output)."""

    def lines(self) -> list[str]:
        out = [
            f"fast peak: {self.fast_peak}",
            f"slow peak: {self.slow_peak}",
            f"slow reads: {self.slow_reads}",
            f"slow writes: {self.slow_writes}",
        ]
        if self.stream_rows:
            out.append(f"input rows streamed: {self.stream_rows} ({self.stream_bytes} bytes)")
        if self.out_rows:
            out.append(f"output rows streamed: {self.out_rows}")
        return out


@dataclass(frozen=True)
class RunResult:
    outputs: list[np.ndarray]
    stats: RunStats


# ---------------------------------------------------------------------------
# Execution


class _Runner:
    def __init__(self, prog: Program, view: GraphView, consts: Mapping[str, np.ndarray]):
        self.prog = prog
        self.view = view
        self.graph = prog.graph
        self.consts = consts
        self.arena = FastArena(prog.arena_bytes)
        self.slow = SlowMemory()
        self.tiles = 0
        self.ops: dict[int, nn.NNOp] = {}
        for k, node in enumerate(self.graph.nodes):
            op = view.ops[node.name]
            assert isinstance(op, nn.NNOp)
            self.ops[k] = op
        self.tables = GraphTables(self.graph)

    def _slow_alloc(self, name: str) -> None:
        info = self.graph.tensors[name]
        self.slow.alloc(name, info.shape, self.prog.dtypes[name])

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        graph, prog = self.graph, self.prog
        if prog.plan.in_place:
            unit = prog.units[0]
            assert isinstance(unit, NormalUnit)
            return self._normal(unit, dict(zip(graph.inputs, inputs)))
        for name, x in zip(graph.inputs, inputs):
            if name in prog.slow_birth:
                self._slow_alloc(name)
                self.slow.arrays[name][...] = x
        for u in prog.units:
            for name, b in prog.slow_birth.items():
                if b == u.index and graph.producer(name) is not None:
                    self._slow_alloc(name)
            if isinstance(u, NormalUnit):
                self._normal(u, {})
            else:
                self._tiled(u)
            self.arena.reset()
            for name, d in prog.slow_death.items():
                if d == u.index and name not in graph.outputs and name in self.slow.arrays:
                    self.slow.free(name)
        return [self.slow.arrays[o].copy() for o in graph.outputs]

    def _args(self, k: int, views: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        return [
            self.consts[n] if self.graph.tensors[n].is_const else views[n]
            for n in self.graph.nodes[k].inputs
        ]

    def _normal(self, u: NormalUnit, given: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        views: dict[str, np.ndarray] = {}
        graph = self.graph
        for ev, what in u.events:
            if ev == "load":
                assert isinstance(what, str)
                views[what] = self.arena.alloc(u.buffers[what], u.name)
                if u.in_place:
                    views[what][...] = given[what]
                else:
                    views[what][...] = self.slow.load(what, {})
            elif ev == "alloc":
                assert isinstance(what, str)
                views[what] = self.arena.alloc(u.buffers[what], u.name)
            elif ev == "op":
                assert isinstance(what, int)
                res = self.ops[what].reference(self._args(what, views))
                for o, r in zip(graph.nodes[what].outputs, res):
                    views[o][...] = r
            elif ev == "free":
                assert isinstance(what, str)
                self.arena.free(what)
            else:
                assert isinstance(what, str)
                if not u.in_place:
                    self.slow.store(what, {}, views[what])
        if u.in_place:
            return [views[o].copy() for o in graph.outputs]
        return []

    def _tiled(self, u: TiledUnit) -> None:
        graph = self.graph
        views: dict[str, np.ndarray] = {}
        for key, buf in u.buffers.items():
            if buf.key == key and key not in u.scratch:
                views[key] = self.arena.alloc(buf, u.name)
        for key, buf in u.buffers.items():
            if buf.key != key and buf.key not in u.scratch:
                views[key] = views[buf.key]  # held in the buffer an in-place activation writes
        for t in u.once:
            views[t][...] = self.slow.load(t, {})
        base: dict[str, Band] = {}
        if u.gap is None:
            for tile in u.tiles:
                self.tiles += 1
                self._tile(u, tile, views, base)
            return
        gap_op = self.ops[u.gap]
        assert isinstance(gap_op, nn.GlobalAveragePoolOp)
        x = graph.nodes[u.gap].inputs[0]
        out = graph.nodes[u.gap].outputs[0]
        acc, res = views[out + ".acc"], views[out]
        per = len(u.tiles) // len(u.acc_groups)
        last = graph.tensors[out].rank - 1
        for gi, (c0, c1) in enumerate(u.acc_groups):
            acc[...] = 0
            n = c1 - c0
            for tile in u.tiles[gi * per : (gi + 1) * per]:
                self.tiles += 1
                self._tile(u, tile, views, base)
                band = tile.accumulate
                assert band is not None
                src = self._read(u, x, views, base, band, band)
                band_exec.accumulate(gap_op, src, acc[..., :n])
            res[..., :n] = band_exec.finish(gap_op, acc[..., :n])
            cut = {last: (c0, c1)} if n != graph.tensors[out].shape[-1] else {}
            self.slow.store(out, cut, res[..., :n])

    def _tile(
        self, u: TiledUnit, tile: Tile, views: dict[str, np.ndarray], base: dict[str, Band]
    ) -> None:
        # a line buffer keeps its history rows: move them to the buffer's start
        for t, (lo, hi) in tile.keep.items():
            old = base.get(t)
            ax = u.axes[t]
            if old is None or ax not in old or old[ax][0] > lo or old[ax][1] < hi:
                raise PlanRunError(
                    f"{u.name} tile {tile.index}: '{t}' must keep rows [{lo}, {hi}) but "
                    f"holds {dict(old) if old else 'nothing'}"
                )
            src = lo - old[ax][0]
            v = views[t]
            idx_dst = [slice(None)] * v.ndim
            idx_src = [slice(None)] * v.ndim
            idx_dst[ax] = slice(0, hi - lo)
            idx_src[ax] = slice(src, src + hi - lo)
            if src:
                v[tuple(idx_dst)] = v[tuple(idx_src)]
        for t, band in tile.held.items():
            base[t] = band
        for t, band in tile.loads:
            self._write(u, t, views, base, band, self.slow.load(t, band))
        steps = {step.node: step for step in tile.ops}
        live: set[str] = set()
        gone: set[str] = set()
        for k in u.nodes:  # scratch buffers live over their node steps in every tile
            for owner, (first, _) in u.scratch.items():
                if first <= k and owner not in live and owner not in gone:
                    self._scratch_alloc(u, owner, views)
                    live.add(owner)
            step = steps.get(k)
            if step is not None:
                self._op(u, step, views, base)
            for owner, (_, last) in u.scratch.items():
                if last <= k and owner in live:
                    self.arena.free(owner)
                    live.discard(owner)
                    gone.add(owner)
        for t, band in tile.spills:
            self.slow.store(t, band, self._read(u, t, views, base, band, band))
        for owner in sorted(live):
            self.arena.free(owner)

    def _scratch_alloc(self, u: TiledUnit, owner: str, views: dict[str, np.ndarray]) -> None:
        """Allocate a scratch buffer (in the unit's workspace) for this tile."""
        buf = u.buffers[owner]
        views[owner] = self.arena.alloc(buf, u.name)
        for key, b in u.buffers.items():
            if b.key == owner and key != owner:
                views[key] = views[owner]

    def _index(
        self, u: TiledUnit, t: str, base: Mapping[str, Band], band: Band, ndim: int
    ) -> tuple[slice, ...]:
        held = base[t]
        idx = [slice(None)] * ndim
        for ax, (lo, hi) in band.items():
            if ax not in held:
                if held:
                    raise BandError(f"{u.name}: '{t}' is not cut along axis {ax}")
                idx[ax] = slice(lo, hi)
                continue
            h0, h1 = held[ax]
            if lo < h0 or hi > h1:
                raise BandError(
                    f"{u.name}: '{t}' rows [{lo}, {hi}) along axis {ax} are not in the "
                    f"band it holds, [{h0}, {h1})"
                )
            idx[ax] = slice(lo - h0, hi - h0)
        return tuple(idx)

    def _write(
        self,
        u: TiledUnit,
        t: str,
        views: dict[str, np.ndarray],
        base: Mapping[str, Band],
        band: Band,
        value: np.ndarray,
    ) -> None:
        v = views[t]
        v[self._index(u, t, base, band, v.ndim)] = value

    def _read(
        self,
        u: TiledUnit,
        t: str,
        views: dict[str, np.ndarray],
        base: Mapping[str, Band],
        band: Band,
        _: Band,
    ) -> np.ndarray:
        v = views[t]
        return v[self._index(u, t, base, band, v.ndim)]

    def _op(
        self, u: TiledUnit, step: OpStep, views: dict[str, np.ndarray], base: Mapping[str, Band]
    ) -> None:
        graph = self.graph
        k = step.node
        node = graph.nodes[k]
        args: list[np.ndarray] = []
        held: list[Band] = []
        for name in node.inputs:
            if graph.tensors[name].is_const:
                args.append(self.consts[name])
                held.append({})
                continue
            v = views[name]
            src = operand_source(self.tables, u, k, name, base[name])
            if src is None:
                shape = graph.tensors[name].shape
                if v.shape != shape:
                    raise BandError(
                        f"{u.name}: '{name}' is read whole but its buffer "
                        f"holds {v.shape} of {shape}"
                    )
                args.append(v)
                held.append({})
                continue
            want = {
                a: (base[name][a] if kind == "held" else step.out[ax])
                for a, (kind, ax) in src.items()
            }
            args.append(v[self._index(u, name, base, want, v.ndim)])
            held.append(want)
        res = band_exec.compute(self.ops[k], args, held, step.out)
        for o, r in zip(node.outputs, res):
            if o in views:
                self._write(u, o, views, base, step.out, r)


def untiled_reference(
    fn: func.FuncOp, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """The untiled oracle on internal-layout inputs: every `nn` op once, on
    whole tensors, in order (through stages and chains if the function has
    them; If and Loop as the reference runs them)."""
    if any(isinstance(op, nn.ControlFlowOp) for op in fn.walk()):
        return run_function(fn, dict(weights), list(inputs))
    view = build_view(fn)
    graph = view.graph
    consts = tensor_consts(view, weights)
    env: dict[str, np.ndarray] = dict(zip(graph.inputs, inputs))
    for node in graph.nodes:
        op: nn.NNOp = view.ops[node.name]  # type: ignore[assignment]
        res = op.reference([consts[n] if n in consts else env[n] for n in node.inputs])
        env.update(zip(node.outputs, res))
    return [env[o] for o in graph.outputs]


def run_program(
    prog: Program, view: GraphView, weights: Mapping[str, np.ndarray], inputs: Sequence[np.ndarray]
) -> RunResult:
    """Run a program on internal-layout inputs; outputs and measured figures."""
    graph = view.graph
    if prog.plan.single_arena or prog.plan.stream_input or prog.plan.stream_output:
        raise PlanRunError(
            "a single-arena plan (no slow memory) or one with a streamed input runs at the "
            "loop level (lower-to-loops, plan-arena, run_loop_module), not in this "
            "interpreter of unit-local arenas"
        )
    if len(inputs) != len(graph.inputs):
        raise PlanRunError(f"the model takes {len(graph.inputs)} input(s), got {len(inputs)}")
    for name, x in zip(graph.inputs, inputs):
        info = graph.tensors[name]
        dt = prog.dtypes[name]
        if tuple(x.shape) != info.shape or x.dtype != dt:
            raise PlanRunError(
                f"input '{name}' must be {dt} of shape {'x'.join(map(str, info.shape))}, got "
                f"{x.dtype} of shape {'x'.join(map(str, x.shape))}"
            )
    runner = _Runner(prog, view, tensor_consts(view, weights))
    outs = runner.run(inputs)
    a, s = runner.arena, runner.slow
    stats = RunStats(a.peak, a.high, a.size, s.peak, s.reads, s.writes, runner.tiles)
    return RunResult(outs, stats)


def run_plan(
    fn: func.FuncOp,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
    budget: int,
    p: Plan | None = None,
) -> RunResult:
    """Plan `fn` under `budget` (or take `p`) and run it on internal-layout inputs."""
    view = build_view(fn)
    if p is None:
        p = plan(view.graph, budget)
    prog = schedule(view, p)
    return run_program(prog, view, weights, inputs)
