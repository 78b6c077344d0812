"""The interpreter of every level the pipeline produces below the tile IR:
the loop level (`lower-to-loops`, `plan-arena`) and the register-tiled
kernels `lower-gebp` emits, run by xDSL's interpreter framework on numpy.

It is the loop machine of `tigris_ir.loops.machine` (one functions class per
dialect, memrefs as numpy views of the fast and slow arenas, the traffic
counters as state) with the compute added: a band op evaluates its `nn` op on
the band with one vectorised numpy call (`band_exec`), and the `vector` and
`rtile` functions run one vector op as one numpy operation. The measured fast
peak, slow peak, reads and writes are the arenas' and the copies' own figures.
A plan runs after `plan-arena` verified it, so this run tracks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func, vector
from xdsl.dialects.builtin import MemRefType, ModuleOp, VectorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from tigris_ir.dialects import loop, nn
from tigris_ir.dialects.rtile import DotAccOp
from tigris_ir.interp import band_exec
from tigris_ir.interp.program import RunResult, RunStats
from tigris_ir.loops.arena import numpy_dtype
from tigris_ir.loops.machine import LoopIRError, Machine, Ref
from tigris_ir.plan.band import Band

__all__ = ["LoopIRError", "Interpreting", "run_kernel", "run_loop_module"]


class Interpreting(Machine):
    """The loop machine that computes."""

    def __init__(
        self, module: ModuleOp, weights: Mapping[str, np.ndarray], plan: bool = True
    ):
        super().__init__(module, weights, tracked=False, plan=plan)

    def functions(self) -> list[InterpreterFunctions]:
        return [*super().functions(), VectorFunctions(), RtileFunctions()]

    def compute(
        self,
        op: loop.BandComputeOp,
        nn_op: nn.NNOp,
        ins: list[Ref],
        outs: list[Ref],
        held: list[Band],
        out: Band,
    ) -> None:
        if isinstance(op, loop.FinishOp):
            assert isinstance(nn_op, nn.GlobalAveragePoolOp)
            outs[0].data[...] = band_exec.finish(nn_op, ins[0].data)
        elif isinstance(op, loop.AccumulateOp):
            assert isinstance(nn_op, nn.GlobalAveragePoolOp)
            band_exec.accumulate(nn_op, ins[0].data, outs[0].data)
        else:
            res = band_exec.compute(nn_op, [r.data for r in ins], held, out)
            for r, v in zip(outs, res):
                r.data[...] = v


# ---------------------------------------------------------------------------
# the kernels' dialects


def _lanes(ty: Any) -> int:
    assert isinstance(ty, VectorType)
    return int(np.prod(ty.get_shape()))


def _span(ref: np.ndarray, idx: Sequence[int], lanes: int, what: str) -> tuple[Any, ...]:
    """The flat slice of `lanes` elements at idx along the last axis, bounds-checked."""
    if len(idx) != ref.ndim:
        raise LoopIRError(f"{what}: {len(idx)} indices into a rank-{ref.ndim} memref")
    for i, extent in zip(idx[:-1], ref.shape[:-1], strict=True):
        if not 0 <= i < extent:
            raise LoopIRError(f"{what}: index {tuple(idx)} out of bounds of {ref.shape}")
    last = idx[-1] if idx else 0
    if ref.ndim == 0 or not (0 <= last and last + lanes <= ref.shape[-1]):
        raise LoopIRError(
            f"{what}: {lanes} lanes at {tuple(idx)} run past the bounds of {ref.shape}"
        )
    return (*idx[:-1], slice(last, last + lanes))


def _prefix(mask: np.ndarray, what: str) -> int:
    """The width of a prefix mask (what create_mask makes): the lanes touched."""
    width = int(mask.sum())
    if not mask[:width].all():
        raise LoopIRError(f"{what}: only prefix masks are run, got {mask}")
    return width


@register_impls
class VectorFunctions(InterpreterFunctions):
    """One vector op as one numpy operation on 1-D arrays."""

    @impl(vector.LoadOp)
    def run_load(self, it: Interpreter, op: vector.LoadOp, args: PythonValues):
        ref, *idx = args
        assert isinstance(ref, Ref)
        lanes = _lanes(op.result.type)
        return (ref.data[_span(ref.data, idx, lanes, "vector.load")].copy(),)

    @impl(vector.StoreOp)
    def run_store(self, it: Interpreter, op: vector.StoreOp, args: PythonValues):
        value, ref, *idx = args
        assert isinstance(ref, Ref)
        ref.data[_span(ref.data, idx, value.shape[0], "vector.store")] = value
        return ()

    @impl(vector.MaskedLoadOp)
    def run_maskedload(self, it: Interpreter, op: vector.MaskedLoadOp, args: PythonValues):
        ref, *rest = args
        assert isinstance(ref, Ref)
        idx, mask, pass_thru = rest[:-2], rest[-2], rest[-1]
        width = _prefix(mask, "vector.maskedload")
        out = np.array(pass_thru, copy=True)
        if width:
            out[:width] = ref.data[_span(ref.data, idx, width, "vector.maskedload")]
        return (out,)

    @impl(vector.MaskedStoreOp)
    def run_maskedstore(self, it: Interpreter, op: vector.MaskedStoreOp, args: PythonValues):
        ref, *rest = args
        assert isinstance(ref, Ref)
        idx, mask, value = rest[:-2], rest[-2], rest[-1]
        width = _prefix(mask, "vector.maskedstore")
        if width:
            ref.data[_span(ref.data, idx, width, "vector.maskedstore")] = value[:width]
        return ()

    @impl(vector.CreateMaskOp)
    def run_create_mask(self, it: Interpreter, op: vector.CreateMaskOp, args: PythonValues):
        return (np.arange(_lanes(op.mask_vector.type)) < int(args[0]),)

    @impl(vector.BroadcastOp)
    def run_broadcast(self, it: Interpreter, op: vector.BroadcastOp, args: PythonValues):
        ty = op.vector.type
        assert isinstance(ty, VectorType)
        return (np.full(tuple(ty.get_shape()), args[0], dtype=numpy_dtype(ty.element_type)),)

    @impl(vector.FMAOp)
    def run_fma(self, it: Interpreter, op: vector.FMAOp, args: PythonValues):
        # A fused multiply-add: the f32 product is exact in float64, one rounding
        # of the sum (to float64, then float32) stands for the fused one.
        lhs, rhs, acc = (np.asarray(v, dtype=np.float64) for v in args)
        return ((lhs * rhs + acc).astype(np.float32),)


@register_impls
class RtileFunctions(InterpreterFunctions):
    """`rtile.dot_acc`: int8 dot products into int32 lanes, overflow refused."""

    @impl(DotAccOp)
    def run_dot_acc(self, it: Interpreter, op: DotAccOp, args: PythonValues):
        acc, a, *b = args  # the operands in order: acc, a, b...
        total = np.asarray(acc, dtype=np.int64) + np.asarray(a, dtype=np.int64) @ np.stack(
            [np.asarray(v, dtype=np.int64) for v in b]
        )
        if np.any((total < -(2**31)) | (total >= 2**31)):
            raise LoopIRError("rtile.dot_acc: the int32 accumulator overflows")
        return (total.astype(np.int32),)


# ---------------------------------------------------------------------------
# entry points


def run_loop_module(
    module: ModuleOp,
    weights: Mapping[str, np.ndarray],
    inputs: Sequence[np.ndarray],
) -> RunResult:
    """Run a lowered, arena-planned module on internal-layout inputs."""
    m = Interpreting(module, weights)
    outs = m.run(inputs)
    stats = RunStats(
        m.fast.peak,
        m.fast.high,
        m.fast.size,
        m.slow.peak,
        m.reads,
        m.writes,
        m.tiles,
        m.stream_rows,
        m.stream_bytes,
        m.out_rows,
    )
    return RunResult(outs, stats)


def run_kernel(module: ModuleOp, name: str, args: Sequence[Any]) -> list[Any]:
    """Run the function @name of a module of kernels (what `lower-gebp` emits)
    on numpy arrays; memref arguments are written in place."""
    fn = next(
        (op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name),
        None,
    )
    if fn is None:
        raise LoopIRError(f"no function @{name} in the module")
    if fn.is_declaration:
        raise LoopIRError(f"@{name} is a declaration, it has no body")
    block = fn.body.block
    if len(args) != len(block.args):
        raise LoopIRError(f"@{name} takes {len(block.args)} arguments, got {len(args)}")
    values: list[Any] = []
    for a, v in zip(block.args, args):
        ty = a.type
        if isinstance(ty, MemRefType):
            shape, dt = tuple(ty.get_shape()), numpy_dtype(ty.get_element_type())
            if not isinstance(v, np.ndarray) or v.shape != shape or v.dtype != dt:
                got = f"{v.dtype}{list(v.shape)}" if isinstance(v, np.ndarray) else type(v).__name__
                raise LoopIRError(f"@{name}: argument {ty} got {got}")
            v = Ref(v, None, None, "", f"argument {len(values)}")
        values.append(v)
    m = Interpreting(module, {}, plan=False)
    outs = m.interpreter().call_op(fn, tuple(values))
    return [r.data if isinstance(r, Ref) else r for r in outs]
