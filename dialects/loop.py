"""The `loop` dialect: band-level compute, the one thing `scf`/`memref` lack.

The loop level of a plan is ordinary xDSL: `scf.for` over tiles, `memref`
buffers in a "fast" and a "slow" memory space, `memref.subview` and
`memref.copy` for band loads, spills and line-buffer shifts, `arith` for
row arithmetic, per-tile row tables as `memref.global` constants. What no
upstream dialect has is an `nn` operator evaluated on a band of its output:

  loop.band ins(%x, %w, %b : ...) outs(%y : ...) bounds(%x0, %x1, %y0, %y1)
            cuts [array<i64: 1>, array<i64>, array<i64>, array<i64: 1>] {
  ^bb0(%tx: tensor<...>, %tw: tensor<...>, %tb: tensor<...>):
    %r = nn.conv %tx, %tw, %tb {...} : (...) -> tensor<...>
    loop.yield %r : tensor<...>
  }

The body holds the `nn` op on whole-tensor types: its properties and
quantization are the band op's semantics. After `lower-gebp`, a register-tiled
matrix product is followed by its `rtile.kernel` (how the C computes the op's
result: row blocks, packing, K blocks, panel sweeps, micro-tiles). `cuts`
lists, per operand (inputs, then outputs), the axes its memref is a band of;
`bounds` gives, for each of those axes in order, the global range [lo, hi) the
memref holds (an output: the range to compute). Operands with no cut are whole
tensors (weights, whole reads). Near the image border the op's own padding
stands for rows outside the image (`tigris_ir.interp.band_exec`).
`loop.accumulate` adds a band's sums to a GlobalAveragePool accumulator and
`loop.finish` turns the sums into the pool's result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from tigris_ir.dialects import nn

# Attribute names of the loop level: a buffer's static offset in its arena
# (`plan-arena`), and the function's fast and slow arena sizes in bytes.
OFFSET_ATTR = "loop.offset"
ARENA_ATTR = "loop.arena"
SLOW_ARENA_ATTR = "loop.slow_arena"
# the tensor a buffer is allocated for; the plan's figures on the function
TENSOR_ATTR = "loop.tensor"
PLAN_ATTR = "loop.plan"
# a weight global's entry in the weight table; a tile table's column names
REF_ATTR = "loop.ref"
COLUMNS_ATTR = "loop.columns"
# a tile loop's unit and kind (`strips`, `chain, line-buffered`, ...); the
# graph node a band op computes
# an scf.if / scf.while of an If or Loop: the tensor of its bodies' workspace
# in the enclosing arena (their buffers lie within it) and, per body, its path
# and planned peak
WORKSPACE_ATTR = "loop.workspace"
BODIES_ATTR = "loop.bodies"
UNIT_ATTR = "loop.unit"
KIND_ATTR = "loop.kind"
NODE_ATTR = "loop.node"
LINE_BUFFERED = "line-buffered"
"""The suffix of a tile loop's kind whose line buffers compute each row once."""
COLUMN_BANDS = "column bands"
"""The suffix of a line-buffered chain's kind run in column bands: each band
runs the line buffers over every row and recomputes its halo columns."""
CHANNEL_GROUP_ATTR = "loop.channel_group"
"""On a tile loop whose band is cut into channel groups: the channels of a
group (an integer); every buffer of the unit holds at most that many channels
and each tile's bands cut the channel axis (`cuts` name it)."""
PIXEL_BLOCK_ATTR = "loop.pixel_block"
"""On an `scf.for` inside a tile: a pixel run of a line-buffered chain, run
in blocks of this many output columns (an integer; the loop's trip is one
block, its bounds read from a table); the run's ops cut the width axis, and
a scratch buffer read only in the run holds one block's columns."""
RECOMPUTE_ATTR = "loop.recompute"
"""On a band op of a line-buffered chain: the member stage it belongs to, one
that holds a channel Concat, whose ops compute their whole range every tile
(`spec/tiling.md`: "A stage that holds a Concat recomputes them"); or
`FEEDER`: the op feeds the window op of its pixel run, recomputing every
tile the rows that window reads and every block its columns."""
FEEDER = "window feeder"
"""`loop.recompute` of a window feeder (`plan.scratch.window_feeders`)."""

FAST = StringAttr("fast")
SLOW = StringAttr("slow")
"""The two memory spaces of a memref at the loop level."""
STREAM = StringAttr("stream")
"""A model input that arrives in bands of rows through a callback: it has no
storage, only band loads (`memref.copy` of a subview) read it."""


def space_of(t: Attribute) -> str:
    """ "fast", "slow", or "" for a memref in the default space."""
    if isinstance(t, MemRefType) and isinstance(t.memory_space, StringAttr):
        return t.memory_space.data
    return ""


def cuts_attr(cuts: Sequence[Sequence[int]]) -> ArrayAttr[DenseArrayBase]:
    return ArrayAttr(DenseArrayBase.from_list(i64, list(c)) for c in cuts)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """The value a band body computes."""

    name = "loop.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


class BandComputeOp(IRDLOperation):
    """An `nn` op (the body) on bands of memrefs; see the module doc."""

    inputs = var_operand_def(MemRefType)
    outputs = var_operand_def(MemRefType)
    bounds = var_operand_def(IndexType)
    cuts = prop_def(ArrayAttr[DenseArrayBase])
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "`ins` `(` $inputs `:` type($inputs) `)` `outs` `(` $outputs `:` type($outputs) `)` "
        "`bounds` `(` $bounds `)` `cuts` $cuts attr-dict-with-keyword $body"
    )

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue],
        bounds: Sequence[SSAValue],
        cuts: Sequence[Sequence[int]],
        body: Region,
    ):
        super().__init__(
            operands=[list(inputs), list(outputs), list(bounds)],
            properties={"cuts": cuts_attr(cuts)},
            regions=[body],
        )

    @property
    def nn_op(self) -> Operation:
        """The body's `nn` op (the verifier ensures there is exactly one)."""
        ops = [op for op in self.body.block.ops if not isinstance(op, YieldOp)]
        return ops[0]

    def cut_axes(self) -> list[tuple[int, ...]]:
        return [
            tuple(int(v) for v in cast(DenseArrayBase[IntegerType], c).get_values())
            for c in self.cuts.data
        ]

    def band_of(self, values: Sequence[int]) -> list[dict[int, tuple[int, int]]]:
        """Per operand (inputs, then outputs) the global band its memref holds,
        given the values of `bounds`."""
        out: list[dict[int, tuple[int, int]]] = []
        i = 0
        for axes in self.cut_axes():
            band: dict[int, tuple[int, int]] = {}
            for ax in axes:
                band[ax] = (values[i], values[i + 1])
                i += 2
            out.append(band)
        return out

    def expected_outputs(self) -> int:
        return len(self.nn_op.results)

    def verify_(self) -> None:
        block = self.body.block
        ops = list(block.ops)
        kernel = len(ops) == 3 and ops[1].name == "rtile.kernel"
        if len(ops) != 2 + kernel or not isinstance(ops[-1], YieldOp):
            raise VerifyException(
                f"{self.name}: the body holds one nn op, its rtile.kernel if lowered, "
                "and loop.yield"
            )
        inner = ops[0]
        if not inner.name.startswith("nn."):
            raise VerifyException(f"{self.name}: the body op must be an nn op, got {inner.name}")
        if list(inner.operands) != list(block.args) or len(block.args) != len(self.inputs):
            raise VerifyException(
                f"{self.name}: the body op must read the block arguments, one per input"
            )
        if list(ops[-1].operands) != list(inner.results):
            raise VerifyException(f"{self.name}: loop.yield must yield the nn op's results")
        if len(self.outputs) != self.expected_outputs():
            raise VerifyException(
                f"{self.name}: {len(self.outputs)} outputs for {self.expected_outputs()} results"
            )
        cuts = self.cut_axes()
        if len(cuts) != len(self.inputs) + len(self.outputs):
            raise VerifyException(
                f"{self.name}: cuts names {len(cuts)} operands, expected "
                f"{len(self.inputs) + len(self.outputs)}"
            )
        if len(self.bounds) != 2 * sum(len(c) for c in cuts):
            raise VerifyException(
                f"{self.name}: {len(self.bounds)} bounds for {sum(len(c) for c in cuts)} cut axes"
            )
        tensors = [a.type for a in block.args] + self.tensor_results()
        for v, t, axes in zip((*self.inputs, *self.outputs), tensors, cuts):
            _check_band_type(self.name, v, t, axes)

    def tensor_results(self) -> list[Attribute]:
        return [r.type for r in self.nn_op.results]


def _check_band_type(name: str, v: SSAValue, t: Attribute, axes: Sequence[int]) -> None:
    mt = v.type
    assert isinstance(mt, MemRefType)
    if not isinstance(t, TensorType):
        raise VerifyException(f"{name}: the body's types must be tensors, got {t}")
    shape = t.get_shape()
    mshape = mt.get_shape()
    if not shape and tuple(mshape) == (1,):
        shape = (1,)  # a scalar is held as one element
    if len(shape) != len(mshape) or any(a < 0 or a >= len(shape) for a in axes):
        raise VerifyException(f"{name}: memref {mt} does not match {t} cut along {list(axes)}")
    for a, (d, m) in enumerate(zip(shape, mshape)):
        if a not in axes and d != m:
            raise VerifyException(f"{name}: memref {mt} must hold the whole of axis {a} of {t}")

    want = element_dtype(t.element_type)
    got = element_dtype(mt.element_type) if not isinstance(mt.element_type, IndexType) else None
    if got != want:
        raise VerifyException(f"{name}: memref {mt} holds {got}, the body's tensor {want}")


def element_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype of an element type: the `nn` ones and the float64 of
    accumulators."""
    return np.dtype(np.float64) if isinstance(t, Float64Type) else nn.element_dtype(t)


@irdl_op_definition
class BandOp(BandComputeOp):
    """Compute the body's `nn` op over the band of its outputs."""

    name = "loop.band"


@irdl_op_definition
class AccumulateOp(BandComputeOp):
    """Add the sums of a band of the body's GlobalAveragePool input to the
    float64 accumulator `outs` (the pool's result shape, or a channel group):
    float64 keeps the sums of int8 bands exact, so the tiled mean equals the
    untiled one (`band_exec.accumulate`)."""

    name = "loop.accumulate"

    def expected_outputs(self) -> int:
        return 1

    def tensor_results(self) -> list[Attribute]:
        op = self.nn_op
        r = op.results[0].type
        if nn.quant_of(op.operands[0]) is not None and nn.requant_fixed(op):
            return [TensorType(i64, nn.shape_of(r))]  # integer-only sums of (q - zp)
        return [TensorType(Float64Type(), nn.shape_of(r))]


@irdl_op_definition
class FinishOp(BandComputeOp):
    """The body's GlobalAveragePool result from the accumulated sums `ins`."""

    name = "loop.finish"

    def verify_(self) -> None:
        block = self.body.block
        ops = list(block.ops)
        if len(ops) != 2 or len(self.inputs) != 1 or len(self.outputs) != 1:
            raise VerifyException(f"{self.name}: one accumulator in, one result out, one nn op")
        if ops[0].name != "nn.global_average_pool":
            raise VerifyException(f"{self.name}: the body must be nn.global_average_pool")


def band_body(op: Operation) -> Region:
    """A body for a band op: `op` cloned onto block arguments of its operand
    types, then `loop.yield` of its results."""
    block = Block(arg_types=[v.type for v in op.operands])
    inner = op.clone(value_mapper={v: a for v, a in zip(op.operands, block.args)})
    for key in list(inner.attributes):  # the register tile (rtile.*) stays
        if key.startswith("tile."):
            del inner.attributes[key]
    block.add_op(inner)
    block.add_op(YieldOp(*inner.results))
    return Region(block)


Loop = Dialect("loop", [BandOp, AccumulateOp, FinishOp, YieldOp], [])
