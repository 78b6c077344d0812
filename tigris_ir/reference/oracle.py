"""Comparison of our reference with onnxruntime: the oracle of the graph level.

int8 QDQ models are compared in quantization steps (LSB) of the output's
DequantizeLinear, against onnxruntime at its basic optimisation level, which
executes the QDQ graph as the ONNX specification defines it. The fully
optimised session fuses Q/DQ into integer kernels of its own; the difference to
that is reported beside it, as information, not as a failure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from tigris_ir.dialects import nn
from tigris_ir.reference.executor import to_internal

FLOAT_RTOL = 1e-4
INT8_LSB = 1


@dataclass(frozen=True)
class OutputDiff:
    name: str
    quantized: bool
    worst: float
    """Relative error (float32) or quantization steps (int8)."""
    worst_fused: float
    where: tuple[int, ...]
    exact: bool = False
    """An integer or bool output (not dequantized): `worst` counts the
    elements that differ, and none may."""
    rtol: float = FLOAT_RTOL
    """A float output's limit, relative to its largest magnitude."""
    sessions_apart: float = 0.0
    """An int8 output: the largest distance, in quantization steps, between
    onnxruntime's own two sessions (unfused and fused kernels)."""

    @property
    def limit(self) -> float:
        return INT8_LSB if self.quantized else self.rtol

    @property
    def fused_limit(self) -> float:
        """How far an int8 output may be from onnxruntime's fused kernels when
        every op is held to 1 LSB by itself (`per_op_lsb`): 1 step, or as
        far as onnxruntime's two sessions are from each other on it."""
        return max(INT8_LSB, self.sessions_apart)

    @property
    def ok(self) -> bool:
        if self.exact:
            return self.worst == 0
        return self.worst <= self.limit

    def describe(self) -> str:
        if self.exact:
            status = "ok" if self.ok else "MISMATCH"
            return (
                f"output '{self.name}': {status}: {self.worst:.0f} elements differ (exact "
                f"integer output), first at index {list(self.where)}; against onnxruntime's "
                f"fused kernels {self.worst_fused:.0f}"
            )
        unit = "LSB" if self.quantized else "relative"
        limit = self.limit
        fmt = (lambda v: f"{v:.0f}") if self.quantized else (lambda v: f"{v:.2e}")
        status = "ok" if self.ok else "MISMATCH"
        return (
            f"output '{self.name}': {status}: worst {fmt(self.worst)} {unit} "
            f"(limit {fmt(limit)}) at index {list(self.where)}; against onnxruntime's "
            f"fused kernels {fmt(self.worst_fused)} {unit}"
            + (
                f" (its two sessions {fmt(self.sessions_apart)} {unit} apart)"
                if self.quantized
                else ""
            )
        )


@dataclass(frozen=True)
class Report:
    diffs: tuple[OutputDiff, ...]

    @property
    def ok(self) -> bool:
        return all(d.ok for d in self.diffs)

    @property
    def text(self) -> str:
        return "\n".join(d.describe() for d in self.diffs)


def _session(model_bytes: bytes, level: str):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.log_severity_level = 3
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def output_scales(model: onnx.ModelProto) -> dict[str, float]:
    """The quantization step of every graph output produced by DequantizeLinear."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    consts = {
        n.output[0]: numpy_helper.to_array(n.attribute[0].t)
        for n in model.graph.node
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"
    }
    inits.update(consts)
    outs = {o.name for o in model.graph.output}
    scales: dict[str, float] = {}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] in outs and n.input[1] in inits:
            s = inits[n.input[1]]
            if s.size == 1:
                scales[n.output[0]] = float(s.reshape(()))
    return scales


def abs_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in float64 where equal values (NaN and NaN, inf and inf) differ
    by 0 and a NaN against a number by inf."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    with np.errstate(invalid="ignore"):
        d = np.asarray(np.abs(a - b))  # an array also for 0-d operands (a scalar output)
    d[(a == b) | (np.isnan(a) & np.isnan(b))] = 0.0
    d[np.isnan(d)] = np.inf
    return d


def compare_with_onnxruntime(
    model_bytes: bytes,
    feeds: dict[str, np.ndarray],
    outputs: list[np.ndarray],
    names: list[str],
    rtol: float = FLOAT_RTOL,
) -> Report:
    """Our outputs against onnxruntime's (the unfused session; the fused one's
    difference is reported beside): int8 within `INT8_LSB` steps, integer
    outputs exact, float32 within `rtol` of the output's largest magnitude."""
    model = onnx.load_model_from_string(model_bytes)
    scales = output_scales(model)
    spec = _session(model_bytes, "ORT_ENABLE_BASIC").run(None, feeds)
    fused = _session(model_bytes, "ORT_ENABLE_ALL").run(None, feeds)
    diffs = []
    for name, ours, ref, ref_fused in zip(names, outputs, spec, fused, strict=True):
        if np.asarray(ref).dtype.kind in "biu" and name not in scales:
            ours, ref, ref_fused = (np.asarray(a) for a in (ours, ref, ref_fused))
            if ours.shape != ref.shape:
                raise ValueError(f"output '{name}' has shape {ours.shape}, onnxruntime {ref.shape}")
            bad = ours != ref
            where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else ()
            n_fused = float(np.count_nonzero(ours != ref_fused))
            diffs.append(OutputDiff(name, False, float(bad.sum()), n_fused, where, exact=True))
            continue
        ours = np.asarray(ours, np.float64)
        ref = np.asarray(ref, np.float64)
        ref_fused = np.asarray(ref_fused, np.float64)
        if ours.shape != ref.shape:
            raise ValueError(f"output '{name}' has shape {ours.shape}, onnxruntime {ref.shape}")
        apart = 0.0
        if name in scales:
            err = abs_diff(ours, ref) / scales[name]
            err_fused = abs_diff(ours, ref_fused) / scales[name]
            worst, worst_fused = (
                float(np.rint(err.max())),
                float(np.rint(err_fused.max())),
            )
            apart = float(np.rint((abs_diff(ref, ref_fused) / scales[name]).max()))
        else:
            finite = np.abs(ref[np.isfinite(ref)])
            denom = max(float(finite.max()) if finite.size else 0.0, 1e-30)
            err = abs_diff(ours, ref) / denom
            worst = float(err.max()) if err.size else 0.0
            worst_fused = float((abs_diff(ours, ref_fused) / denom).max()) if err.size else 0.0
        where = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
        diffs.append(
            OutputDiff(
                name, name in scales, worst, worst_fused, where, rtol=rtol, sessions_apart=apart
            )
        )
    return Report(tuple(diffs))


@dataclass(frozen=True)
class OpDiff:
    value: str
    op: str
    worst_lsb: int
    differing: int
    size: int


def per_op_lsb(model_bytes: bytes, imported, feeds: dict[str, np.ndarray]) -> list[OpDiff]:
    """Each quantized op fed onnxruntime's own inputs: its output's distance in LSB.

    An end-to-end difference of a few steps can grow from single rounding ties
    (an exact int32 accumulator against a float32 sum) that later layers
    amplify; this isolates every op, so that each is held to 1 LSB by itself.
    """
    model = onnx.load_model_from_string(model_bytes)
    q_outs = [n.output[0] for n in model.graph.node if n.op_type == "QuantizeLinear"]
    probe = onnx.load_model_from_string(model_bytes)
    known = {o.name for o in probe.graph.output}
    zps = {
        n.output[0]: n.input[2]
        for n in model.graph.node
        if n.op_type == "QuantizeLinear" and len(n.input) > 2
    }
    inits = {i.name: i.data_type for i in model.graph.initializer}
    for name in q_outs:
        if name not in known:
            elem = inits.get(zps.get(name, ""), onnx.TensorProto.UINT8)
            probe.graph.output.append(onnx.helper.make_tensor_value_info(name, elem, None))
    sess = _session(probe.SerializeToString(), "ORT_ENABLE_BASIC")
    ort_vals = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    by_ssa = {ssa: (name, layout) for name, (ssa, layout) in imported.values.items()}
    diffs: list[OpDiff] = []
    fn = next(iter(imported.module.ops))
    # run op by op, replacing every quantized value by onnxruntime's
    env: dict = {}
    for arg, name in zip(fn.body.block.args, feeds):
        env[arg] = to_internal(
            feeds[name],
            "nchw" if feeds[name].ndim == 4 else "ncw" if feeds[name].ndim == 3 else "plain",
        )
    for op in fn.body.block.ops:
        if isinstance(op, nn.WeightOp):
            env[op.result] = imported.weights[op.ref.data]
            continue
        if not isinstance(op, nn.NNOp):
            continue
        outs = op.reference([env[v] for v in op.operands])
        for r, o in zip(op.results, outs):
            env[r] = o
            if r in by_ssa and by_ssa[r][0] in ort_vals and nn.quant_of(r) is not None:
                name, layout = by_ssa[r]
                theirs = np.asarray(ort_vals[name])
                if layout == "cl":
                    theirs = np.ascontiguousarray(np.moveaxis(theirs, 1, -1))
                d = np.abs(o.astype(np.int64) - theirs.astype(np.int64))
                diffs.append(OpDiff(name, op.name, int(d.max()), int((d > 0).sum()), d.size))
                env[r] = theirs.astype(o.dtype)
    return diffs
