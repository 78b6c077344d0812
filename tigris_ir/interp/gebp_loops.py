"""A numpy interpreter for exactly the loop-level IR `lower-gebp` emits.

xDSL's own interpreter runs about 50,000 scalar loop iterations a second and
lacks several of these ops; this one executes one vector op as one numpy
operation, which is quick enough to check lowered kernels on small shapes
against numpy in tests. Memrefs are numpy arrays (written in place), vectors
are 1-D numpy arrays, index values are Python ints.

Ops: func.func / func.call / func.return, scf.for / scf.yield, arith.constant
(scalars and splat vectors), arith.addi / arith.muli, arith.mulf, memref.load /
memref.alloc / memref.dealloc, vector.load / store / maskedload / maskedstore /
broadcast / fma / create_mask, rtile.dot_acc. Anything else is an error naming
the op, so a lowering that grows a new op also grows a case here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, memref, scf, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tigris_ir.dialects.rtile import DotAccOp

Env = dict[SSAValue, Any]


class InterpretError(Exception):
    """The IR holds an op this interpreter does not know, or misuses one."""


def numpy_dtype(elt: Attribute) -> np.dtype:
    """The numpy dtype of an f32 or iN element type."""
    if isinstance(elt, Float32Type):
        return np.dtype(np.float32)
    if isinstance(elt, IntegerType):
        unsigned = elt.signedness.data == Signedness.UNSIGNED
        width = elt.width.data
        if width in (8, 16, 32, 64):
            return np.dtype(f"{'u' if unsigned else ''}int{width}")
        if width == 1:
            return np.dtype(np.bool_)
    raise InterpretError(f"no numpy dtype for element type {elt}")


class LoopInterpreter:
    """Runs the functions of one module on numpy arrays."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self.ops_run = 0

    def call(self, name: str, args: Sequence[Any]) -> list[Any]:
        """Run @name on args (memref arguments as numpy arrays, written in place)."""
        fn = self.functions.get(name)
        if fn is None:
            raise InterpretError(f"no function @{name} in the module")
        if fn.is_declaration:
            raise InterpretError(f"@{name} is a declaration, it has no body")
        block = fn.body.block
        if len(args) != len(block.args):
            raise InterpretError(f"@{name} takes {len(block.args)} arguments, got {len(args)}")
        env: Env = {}
        for arg, value in zip(block.args, args, strict=True):
            _check_argument(name, arg, value)
            env[arg] = value
        return self._block(block, env)

    def _block(self, block: Block, env: Env) -> list[Any]:
        for op in block.ops:
            if isinstance(op, func.ReturnOp | scf.YieldOp):
                return [env[v] for v in op.operands]
            self._op(op, env)
        return []

    def _op(self, op: Operation, env: Env) -> None:
        self.ops_run += 1
        impl = _IMPLS.get(type(op))
        if impl is None:
            raise InterpretError(
                f"the loop interpreter does not run '{op.name}' (it runs the ops lower-gebp emits)"
            )
        results = impl(self, op, env)
        for res, value in zip(op.results, results, strict=True):
            env[res] = value


def _check_argument(name: str, arg: SSAValue, value: Any) -> None:
    ty = arg.type
    if isinstance(ty, MemRefType):
        shape = tuple(ty.get_shape())
        dt = numpy_dtype(ty.get_element_type())
        if not isinstance(value, np.ndarray) or value.shape != shape or value.dtype != dt:
            got = (
                f"{value.dtype}{list(value.shape)}"
                if isinstance(value, np.ndarray)
                else type(value).__name__
            )
            raise InterpretError(f"@{name}: argument {ty} got {got}")


def _vector_dtype(ty: Attribute) -> np.dtype:
    assert isinstance(ty, VectorType)
    return numpy_dtype(ty.get_element_type())


def _lanes(ty: Attribute) -> int:
    assert isinstance(ty, VectorType)
    return int(np.prod(ty.get_shape()))


# -------------------------------------------------------------- op cases

Impl = Callable[[LoopInterpreter, Any, Env], list[Any]]


def _constant(it: LoopInterpreter, op: arith.ConstantOp, env: Env) -> list[Any]:
    value = op.value
    if isinstance(value, IntegerAttr):
        return [int(value.value.data)]
    if isinstance(value, FloatAttr):
        return [np.float32(value.value.data)]
    if isinstance(value, DenseIntOrFPElementsAttr):
        ty = op.result.type
        values = np.asarray(value.get_values(), dtype=_vector_dtype(ty))
        shape = ty.get_shape() if isinstance(ty, VectorType) else ()
        return [np.broadcast_to(values, tuple(shape)).copy()]
    raise InterpretError(f"arith.constant of {value} is not run")


def _addi(it: LoopInterpreter, op: arith.AddiOp, env: Env) -> list[Any]:
    return [env[op.lhs] + env[op.rhs]]


def _muli(it: LoopInterpreter, op: arith.MuliOp, env: Env) -> list[Any]:
    return [env[op.lhs] * env[op.rhs]]


def _mulf(it: LoopInterpreter, op: arith.MulfOp, env: Env) -> list[Any]:
    return [(np.asarray(env[op.lhs]) * np.asarray(env[op.rhs])).astype(np.float32)]


def _for(it: LoopInterpreter, op: scf.ForOp, env: Env) -> list[Any]:
    lb, ub, step = env[op.lb], env[op.ub], env[op.step]
    carried = [env[v] for v in op.iter_args]
    body = op.body.block
    for i in range(lb, ub, step):
        env[body.args[0]] = i
        for arg, value in zip(body.args[1:], carried, strict=True):
            env[arg] = value
        carried = it._block(body, env)  # noqa: SLF001
    return carried


def _call(it: LoopInterpreter, op: func.CallOp, env: Env) -> list[Any]:
    return it.call(op.callee.root_reference.data, [env[v] for v in op.arguments])


def _alloc(it: LoopInterpreter, op: memref.AllocOp, env: Env) -> list[Any]:
    ty = op.memref.type
    assert isinstance(ty, MemRefType)
    # NaN (or a pattern) rather than zeros: a kernel that skips an element shows
    fill = np.nan if isinstance(ty.get_element_type(), Float32Type) else 0x5A
    dt = numpy_dtype(ty.get_element_type())
    return [np.full(tuple(ty.get_shape()), fill, dtype=dt)]


def _dealloc(it: LoopInterpreter, op: memref.DeallocOp, env: Env) -> list[Any]:
    return []


def _index(env: Env, indices: Sequence[SSAValue]) -> tuple[int, ...]:
    return tuple(int(env[v]) for v in indices)


def _span(ref: np.ndarray, idx: tuple[int, ...], lanes: int, what: str) -> tuple[Any, ...]:
    """The flat slice of `lanes` elements at idx along the last axis, bounds-checked."""
    if len(idx) != ref.ndim:
        raise InterpretError(f"{what}: {len(idx)} indices into a rank-{ref.ndim} memref")
    for i, extent in zip(idx[:-1], ref.shape[:-1], strict=True):
        if not 0 <= i < extent:
            raise InterpretError(f"{what}: index {idx} out of bounds of {ref.shape}")
    last = idx[-1] if idx else 0
    if ref.ndim == 0 or not (0 <= last and last + lanes <= ref.shape[-1]):
        raise InterpretError(f"{what}: {lanes} lanes at {idx} run past the bounds of {ref.shape}")
    return (*idx[:-1], slice(last, last + lanes))


def _load(it: LoopInterpreter, op: memref.LoadOp, env: Env) -> list[Any]:
    ref: np.ndarray = env[op.memref]
    idx = _index(env, op.indices)
    if len(idx) != ref.ndim or any(not 0 <= i < e for i, e in zip(idx, ref.shape, strict=True)):
        raise InterpretError(f"memref.load: index {idx} out of bounds of {ref.shape}")
    return [ref[idx]]


def _vload(it: LoopInterpreter, op: vector.LoadOp, env: Env) -> list[Any]:
    ref: np.ndarray = env[op.base]
    lanes = _lanes(op.result.type)
    return [ref[_span(ref, _index(env, op.indices), lanes, "vector.load")].copy()]


def _vstore(it: LoopInterpreter, op: vector.StoreOp, env: Env) -> list[Any]:
    ref: np.ndarray = env[op.base]
    value = env[op.vector]
    ref[_span(ref, _index(env, op.indices), value.shape[0], "vector.store")] = value
    return []


def _valid(mask: np.ndarray, what: str) -> int:
    """The width of a prefix mask (what create_mask makes): the lanes touched."""
    width = int(mask.sum())
    if not mask[:width].all():
        raise InterpretError(f"{what}: only prefix masks are run, got {mask}")
    return width


def _vmaskedload(it: LoopInterpreter, op: vector.MaskedLoadOp, env: Env) -> list[Any]:
    ref: np.ndarray = env[op.base]
    mask = env[op.mask]
    width = _valid(mask, "vector.maskedload")
    out = np.array(env[op.pass_thru], copy=True)
    if width:
        idx = _index(env, op.indices)
        out[:width] = ref[_span(ref, idx, width, "vector.maskedload")]
    return [out]


def _vmaskedstore(it: LoopInterpreter, op: vector.MaskedStoreOp, env: Env) -> list[Any]:
    ref: np.ndarray = env[op.base]
    value = env[op.value_to_store]
    width = _valid(env[op.mask], "vector.maskedstore")
    if width:
        idx = _index(env, op.indices)
        ref[_span(ref, idx, width, "vector.maskedstore")] = value[:width]
    return []


def _create_mask(it: LoopInterpreter, op: vector.CreateMaskOp, env: Env) -> list[Any]:
    lanes = _lanes(op.mask_vector.type)
    width = int(env[op.mask_dim_sizes[0]])
    return [np.arange(lanes) < width]


def _broadcast(it: LoopInterpreter, op: vector.BroadcastOp, env: Env) -> list[Any]:
    ty = op.vector.type
    assert isinstance(ty, VectorType)
    dt = _vector_dtype(ty)
    return [np.full(tuple(ty.get_shape()), env[op.source], dtype=dt)]


def _fma(it: LoopInterpreter, op: vector.FMAOp, env: Env) -> list[Any]:
    # A fused multiply-add: the f32 product is exact in float64, one rounding
    # of the sum (to float64, then float32) stands for the fused one.
    lhs, rhs, acc = (np.asarray(env[v], dtype=np.float64) for v in (op.lhs, op.rhs, op.acc))
    return [(lhs * rhs + acc).astype(np.float32)]


def _dot_acc(it: LoopInterpreter, op: DotAccOp, env: Env) -> list[Any]:
    a = np.asarray(env[op.a], dtype=np.int64)
    b = np.stack([np.asarray(env[v], dtype=np.int64) for v in op.b])
    acc = np.asarray(env[op.acc], dtype=np.int64) + a @ b
    if np.any((acc < -(2**31)) | (acc >= 2**31)):
        raise InterpretError("rtile.dot_acc: the int32 accumulator overflows")
    return [acc.astype(np.int32)]


_IMPLS: dict[type[Operation], Impl] = {
    arith.ConstantOp: _constant,
    arith.AddiOp: _addi,
    arith.MuliOp: _muli,
    arith.MulfOp: _mulf,
    scf.ForOp: _for,
    func.CallOp: _call,
    memref.AllocOp: _alloc,
    memref.DeallocOp: _dealloc,
    memref.LoadOp: _load,
    vector.LoadOp: _vload,
    vector.StoreOp: _vstore,
    vector.MaskedLoadOp: _vmaskedload,
    vector.MaskedStoreOp: _vmaskedstore,
    vector.CreateMaskOp: _create_mask,
    vector.BroadcastOp: _broadcast,
    vector.FMAOp: _fma,
    DotAccOp: _dot_acc,
}


def run(module: ModuleOp, name: str, args: Sequence[Any]) -> list[Any]:
    """Run @name of a module on numpy arrays (memref arguments written in place)."""
    return LoopInterpreter(module).call(name, args)
