"""Run one band op's printed C on numpy arrays: the emitters' test bench.

`run_band` prints a band op through its registered emitter into a small
translation unit (the shared prelude, the emitter's helpers and constants,
one entry function), compiles it with the bounds checks on and runs it on the
arrays given. Tests compare the result with `band_exec`, the interpreter's
band semantics, on random bands: interior, first and last tiles, 2D tiles.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from xdsl.ir import Attribute, Block, Operation

from tigris_ir.backend.c import band as c_band
from tigris_ir.dialects import nn
from tigris_ir.passes.lower_gebp import (
    channelwise,
    site_kernel,
    state_depthwise,
    state_direct,
)
from tigris_ir.plan.band import Band
from tigris_ir.rtile import decide
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.direct import Operand
from tigris_ir.rtile.sites import gemm_site
from tigris_ir.rtile.targets import host_target

_DIR: Path | None = None
_LIBS: dict[str, ctypes.CDLL] = {}

FLAGS = ("-std=c99", "-O2", "-march=native", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror")



def default_kernel(
    op: Operation,
    ins: Sequence[c_band.CTensor] = (),
    outs: Sequence[c_band.CTensor] = (),
    winograd: bool = True,
) -> None:
    """gebp-tile (the model's default for the host) and lower-gebp on one op,
    whose band reads `ins` and writes `outs` (lower-gebp's decisions of a
    band's direct loops, of a Winograd kernel unless not `winograd`, and of a
    depthwise kernel; without operands the op's own dense tensors)."""
    mems = [Operand(t.shape, t.strides, t.cut, t.value is not None) for t in (*ins, *outs)]
    if not mems:
        whole = [nn.shape_of(v) for v in (*op.operands, op.results[0])]
        mems = [Operand(tuple(sh), _dense(sh), (), i in (1, 2)) for i, sh in enumerate(whole)]
    operands = (mems[:-1], mems[-1])
    site = gemm_site(op)
    if site is not None:
        target = host_target()
        g = rt.default(decide.file_of(target, site), site.m, site.n)
        decide.set_geometry(op, site, g, decide.target_label(target))
        site_kernel(op, site, winograd, operands if len(outs) <= 1 else None)
    if not isinstance(op, nn.ConvOp | nn.GemmOp | nn.MatMulOp) or len(outs) != 1:
        return
    state_direct(op, operands)
    if isinstance(op, nn.ConvOp) and channelwise(op):
        state_depthwise(op)

def _dense(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of a dense tensor of `shape`."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def _build_dir() -> Path:
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="tigris-band-"))
        import atexit

        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


class MiniUnit:
    """A `CUnit` collecting helpers and constants for one translation unit."""

    def __init__(self) -> None:
        self.helpers: dict[str, str] = {}
        self.consts: dict[bytes, str] = {}
        self.const_text: list[str] = []
        self.names: set[str] = set()
        self.scratch_bytes = 0

    def helper(self, key: str, code: str) -> None:
        if key not in self.helpers:
            self.helpers[key] = code

    def scratch(self, nbytes: int) -> None:
        self.scratch_bytes = max(self.scratch_bytes, nbytes)

    def fresh(self, hint: str) -> str:
        base = "".join(ch if ch.isalnum() else "_" for ch in hint) or "v"
        name, i = base, 0
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def const(self, hint: str, value: np.ndarray) -> str:
        arr = np.ascontiguousarray(value)
        key = arr.dtype.str.encode() + str(arr.shape).encode() + arr.tobytes()
        if key in self.consts:
            return self.consts[key]
        name = self.fresh(f"k_{hint}")
        self.consts[key] = name
        self.const_text.append(const_array(name, arr))
        return name


def const_array(name: str, arr: np.ndarray) -> str:
    """A 64-byte aligned static const C array definition."""
    ct = c_band.c_type(arr.dtype)
    flat = arr.reshape(-1)
    if arr.dtype == np.float32:
        items = [_float_literal(float(v)) for v in flat]
    else:
        items = [str(int(v)) for v in flat]
    if not items:
        items = ["0"]
    body = ",\n".join(", ".join(items[i : i + 12]) for i in range(0, len(items), 12))
    return (
        f"static const {ct} {name}[{max(flat.size, 1)}] "
        f"__attribute__((aligned(64))) = {{\n{body}\n}};"
    )


def _float_literal(v: float) -> str:
    if v != v:
        return "NAN"
    if v in (float("inf"), float("-inf")):
        return "INFINITY" if v > 0 else "-INFINITY"
    return f"{float(np.float32(v)).hex()}f" if v != 0 else "0.0f"


def _strides(a: np.ndarray) -> tuple[int, ...]:
    return tuple(s // a.itemsize for s in a.strides)


def _tensor(
    name: str, arr: np.ndarray, shape: Sequence[int], band: Band, const: bool, index: int
) -> tuple[c_band.CTensor, list[int]]:
    origin: list[str] = []
    extent: list[str] = []
    values: list[int] = []
    for ax, d in enumerate(shape):
        if ax in band:
            lo, hi = band[ax]
            origin.append(f"b{index}_{ax}_lo")
            extent.append(f"b{index}_{ax}_n")
            values += [lo, hi - lo]
        else:
            origin.append("0")
            extent.append(str(d))
    t = c_band.CTensor(
        name=name,
        ctype=c_band.c_type(arr.dtype),
        shape=tuple(shape),
        strides=_strides(arr),
        origin=tuple(origin),
        extent=tuple(extent),
        cut=tuple(sorted(band)),
        value=arr if const else None,
    )
    return t, values


def render(
    kind: c_band.Kind,
    op: nn.NNOp,
    args: Sequence[np.ndarray],
    held: Sequence[Band],
    out: Band,
    out_arrays: Sequence[np.ndarray],
    consts: Sequence[bool],
) -> str:
    """The translation unit: `void band(void **p, const int *b)`."""
    unit = MiniUnit()
    entry = _entry(unit, "band", kind, op, args, held, out, out_arrays, consts)
    return _translation_unit(unit, [entry])


def _entry(
    unit: MiniUnit,
    name: str,
    kind: c_band.Kind,
    op: nn.NNOp,
    args: Sequence[np.ndarray],
    held: Sequence[Band],
    out: Band,
    out_arrays: Sequence[np.ndarray],
    consts: Sequence[bool],
) -> str:
    """The entry function `void <name>(void **p, const int *b)` of one band op."""
    ins: list[c_band.CTensor] = []
    outs: list[c_band.CTensor] = []
    decls: list[str] = []
    bvals: list[str] = []
    k = 0
    shapes_in = [nn.shape_of(v) for v in op.operands]
    if kind == "finish":
        shapes_in = [tuple(a.shape) for a in args]
    for i, (a, h, c) in enumerate(zip(args, held, consts)):
        t, vals = _tensor(f"in{i}", a, shapes_in[i], h, c, i)
        ins.append(t)
        decls.append(f"  const {t.ctype} *in{i} = (const {t.ctype} *)p[{i}]; (void)in{i};")
        for ax in sorted(h):
            bvals += _bound_decls(f"b{i}_{ax}", k)
            k += 2
        del vals
    for j, a in enumerate(out_arrays):
        idx = len(args) + j
        shape = nn.shape_of(op.results[j]) if kind != "accumulate" else nn.shape_of(op.results[0])
        t, _ = _tensor(f"out{j}", a, shape, out, False, idx)
        outs.append(t)
        decls.append(f"  {t.ctype} *out{j} = ({t.ctype} *)p[{idx}]; (void)out{j};")
        for ax in sorted(out):
            bvals += _bound_decls(f"b{idx}_{ax}", k)
            k += 2
    default_kernel(op, ins, outs)  # the register tile and kernel the passes would give it
    body = c_band.emit(kind, op, ins, outs, unit)
    return "\n".join(
        [
            f"void {name}(void **p, const int *b) {{",
            *decls,
            *bvals,
            "  (void)p; (void)b;",
            body,
            "}",
        ]
    )


def _translation_unit(unit: MiniUnit, entries: Sequence[str]) -> str:
    lines = [
        c_band.PRELUDE,
        "#include <stdio.h>",
        "int tigris_bound_failures = 0;",
        "void tigris_bound_fail(const char *what, int line) {",
        '  if (!tigris_bound_failures) fprintf(stderr, "bound: %s (line %d)\\n", what, line);',
        "  tigris_bound_failures++;",
        "}",
        *unit.const_text,
        *unit.helpers.values(),
        *entries,
    ]
    return "\n".join(lines) + "\n"


def _bound_decls(stem: str, k: int) -> list[str]:
    return [
        f"  const int {stem}_lo = b[{k}];",
        f"  const int {stem}_n = b[{k + 1}];",
        f"  (void){stem}_lo; (void){stem}_n;",
    ]


def _load(source: str, extra: Sequence[str] = ()) -> ctypes.CDLL:
    flags = (*FLAGS, "-DTIGRIS_BOUNDS_CHECK", *extra)
    key = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:20]
    if key in _LIBS:
        return _LIBS[key]
    d = _build_dir()
    d.mkdir(parents=True, exist_ok=True)  # a cleanup elsewhere may have removed it
    src = d / f"band_{key}.c"
    so = d / f"band_{key}.so"
    src.write_text(source)
    cc = os.environ.get("CC", "gcc")
    cmd = [cc, *flags, "-shared", "-fPIC", str(src), "-o", str(so), "-lm"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{cc} failed on {src}:\n{res.stderr[-4000:]}")
    lib = ctypes.CDLL(str(so))
    _LIBS[key] = lib
    return lib


def run_band(
    op: nn.NNOp,
    args: Sequence[np.ndarray],
    held: Sequence[Band],
    out: Band,
    *,
    kind: c_band.Kind = "band",
    consts: Sequence[bool] | None = None,
    acc: np.ndarray | None = None,
    flags: Sequence[str] = (),
) -> list[np.ndarray]:
    """The printed C's result of the band op: like `band_exec.compute`
    (kind "band"), `accumulate` (adds into `acc`, returned) or `finish`.

    `consts` marks the operands the emitter sees as constants (by default
    every operand that is not cut and not the first); `flags` are extra
    compiler flags (`-DTIGRIS_PORTABLE` for the portable build)."""
    case = _prepare(op, args, held, out, kind, consts, acc)
    source = render(kind, op, case.arrays, held, out, case.outs, case.consts)
    return _call(_load(source, flags), "band", op, case)


@dataclass
class _Case:
    arrays: list[np.ndarray]
    outs: list[np.ndarray]
    consts: Sequence[bool]
    bounds: list[int]


def _prepare(
    op: nn.NNOp,
    args: Sequence[np.ndarray],
    held: Sequence[Band],
    out: Band,
    kind: c_band.Kind,
    consts: Sequence[bool] | None,
    acc: np.ndarray | None,
) -> _Case:
    arrays = [np.ascontiguousarray(a) for a in args]
    if consts is None:
        consts = [i > 0 and not h for i, h in enumerate(held)]
    if kind == "accumulate":
        assert acc is not None
        outs = [np.ascontiguousarray(acc)]
    elif kind == "finish":
        outs = [np.zeros(nn.shape_of(op.results[0]), dtype=nn.dtype_of(op.results[0]))]
    else:
        outs = []
        for r in op.results:
            shape = nn.shape_of(r)
            bshape = tuple(out[a][1] - out[a][0] if a in out else d for a, d in enumerate(shape))
            outs.append(np.zeros(bshape, dtype=nn.dtype_of(r)))
    bounds: list[int] = []
    for h in held:
        for ax in sorted(h):
            bounds += [h[ax][0], h[ax][1] - h[ax][0]]
    for _ in outs:
        for ax in sorted(out):
            bounds += [out[ax][0], out[ax][1] - out[ax][0]]
    return _Case(arrays, outs, consts, bounds)


def _call(lib: ctypes.CDLL, name: str, op: nn.NNOp, case: _Case) -> list[np.ndarray]:
    failures = ctypes.c_int.in_dll(lib, "tigris_bound_failures")
    failures.value = 0
    ptrs = (ctypes.c_void_p * (len(case.arrays) + len(case.outs)))(
        *[a.ctypes.data for a in case.arrays], *[o.ctypes.data for o in case.outs]
    )
    b = (ctypes.c_int * max(len(case.bounds), 1))(*case.bounds)
    getattr(lib, name)(ptrs, b)
    if failures.value:
        raise AssertionError(f"{op.name}: {failures.value} accesses outside the band")
    return case.outs


@dataclass
class BandCase:
    """The arguments of one `run_band` call, for `run_bands`."""

    op: nn.NNOp
    args: Sequence[np.ndarray]
    held: Sequence[Band]
    out: Band
    kind: c_band.Kind = "band"
    consts: Sequence[bool] | None = None
    acc: np.ndarray | None = None


def run_bands(cases: Sequence[BandCase], flags: Sequence[str] = ()) -> list[list[np.ndarray]]:
    """`run_band` of every case, printed into a few translation units (one
    compiler run per processor, in parallel: the test benches group their
    cases)."""
    jobs = max(1, min(len(cases), os.cpu_count() or 1))
    step = -(-len(cases) // jobs)
    groups = [list(range(i, min(i + step, len(cases)))) for i in range(0, len(cases), step)]
    prepared: list[_Case] = []
    sources: list[str] = []
    for group in groups:
        unit = MiniUnit()
        entries: list[str] = []
        for i in group:
            c = cases[i]
            case = _prepare(c.op, c.args, c.held, c.out, c.kind, c.consts, c.acc)
            prepared.append(case)
            entries.append(
                _entry(
                    unit,
                    f"band_{i}",
                    c.kind,
                    c.op,
                    case.arrays,
                    c.held,
                    c.out,
                    case.outs,
                    case.consts,
                )
            )
        sources.append(_translation_unit(unit, entries))
    _build_dir()
    with ThreadPoolExecutor(len(sources)) as pool:
        libs = list(pool.map(lambda src: _load(src, flags), sources))
    return [
        _call(libs[g], f"band_{i}", cases[i].op, prepared[i])
        for g, group in enumerate(groups)
        for i in group
    ]


def band_args(op: nn.NNOp, whole: Sequence[np.ndarray], held: Sequence[Band]) -> list[np.ndarray]:
    """Cut whole operand arrays down to the bands they hold."""
    from tigris_ir.plan.band import band_slices

    return [w[band_slices(h, w.ndim)] for w, h in zip(whole, held)]


def whole_bands(op: nn.NNOp) -> list[Mapping[int, tuple[int, int]]]:
    """WHOLE for every operand."""
    return [{} for _ in op.operands]


def make_op(
    cls: type[nn.NNOp],
    operands: Sequence[Attribute],
    results: Sequence[Attribute] | None = None,
    props: Mapping[str, Attribute] | None = None,
) -> nn.NNOp:
    """An op of `cls` on block arguments of the given types, verified; with no
    result types, float32 results of the inferred shapes (quantized results
    need their types given)."""
    block = Block(arg_types=list(operands))
    p = dict(props or {})
    if results is None:
        probe = cls.create(
            operands=list(block.args), result_types=[nn.tensor_type((1,), np.float32)], properties=p
        )
        results = [nn.tensor_type(s, np.float32) for s in probe.infer_shapes()]
    op = cls.create(operands=list(block.args), result_types=list(results), properties=p)
    block.add_op(op)
    op.verify()
    return op
