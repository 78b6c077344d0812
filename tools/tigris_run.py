"""`tigris-run`: run a model (`.onnx` or `.mlir`) on `.npy` inputs with numpy.

Inputs and outputs are in the model's own layout (NCHW for feature maps).
Without a plan, the untiled reference runs, and `--check` compares it with
onnxruntime when the model is an `.onnx` file (float32 to a relative 1e-4,
int8 models to 1 quantization step).

A plan runs at the loop level: `PLAN.mlir` as `tigris-opt ... --lower-to-loops
--plan-arena` prints it, or a model with `-m BUDGET` (the whole pipeline:
plan, lower, place the arena). The arena is verified first; nothing runs on a
plan that fails. `--stats` prints the measured fast peak, slow peak, slow
reads and slow writes in bytes; `--check` compares the outputs with the
untiled reference (int8 bit-exact, float32 to a relative 1e-5). A mismatch
exits 1, saying where it differs. `--rtol R` sets both float32 limits (relative
to the output's largest magnitude): a deep float32 network of large values can
differ by more between two valid summation orders. `--backend c` runs the plan
as compiled C instead (`tigris-opt -t c`; `--cc`, `--cflags`, `--c-weights`):
the same outputs, and with `--stats` the figures the C counts in a
`-DTIGRIS_STATS` build. `--mcpu NAME`
names the CPU the plan's kernels are chosen for (gebp-tile's target) and the C
is built for: `host` (the default), an x86 preset, or `cortex-m4`, `cortex-m7`,
`cortex-m55`, whose C is cross-compiled with arm-none-eabi-gcc and run under
qemu-system-arm on the CPU's board.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tigris_ir.tools.cli import (
    MCPU_HELP,
    Diagnostic,
    Once,
    UserError,
    check_ir_sizes,
    few_lines,
    mcpu_target,
    one_line_usage,
    parse_module,
    read_text,
    run_main,
)

PROG = "tigris-run"


class RunError(UserError):
    """A user-facing problem: printed as `tigris-run: error: ...`, exit 1."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("model", help="the model: .onnx, or .mlir as printed by tigris-opt")
    p.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="X.npy",
        help="an input array in the model's layout (repeat for several inputs, in order)",
    )
    p.add_argument(
        "--random-input",
        type=int,
        action=Once,
        metavar="SEED",
        help="run on seeded standard-normal inputs instead of --input files",
    )
    p.add_argument(
        "--output",
        "-o",
        action="append",
        default=[],
        metavar="Y.npy",
        help="where to write each output (repeat for several outputs)",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:DxDxD",
        help="shape of an ONNX input with symbolic dimensions",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="compare with onnxruntime (needs an .onnx model), or a plan with the untiled "
        "reference; exit 1 on mismatch",
    )
    p.add_argument(
        "--rtol",
        action=Once,
        type=_rtol,
        metavar="R",
        help="--check's limit for a float32 output, relative to its largest magnitude "
        "(default 1e-4 against onnxruntime, 1e-5 for a plan against the untiled reference; "
        "deep networks of large values may need more)",
    )
    p.add_argument(
        "--budget",
        "-m",
        action=Once,
        metavar="BUDGET",
        help="plan the model under this fast-memory budget (262144, 256K, 1M) and run the "
        "plan at the loop level",
    )
    p.add_argument(
        "--slow-budget",
        metavar="BYTES",
        help="with -m: the slow-memory budget (default unbounded; 0: no slow memory, every "
        "tensor in the one fast arena)",
    )
    p.add_argument(
        "--stream-input",
        action="store_true",
        help="with -m: the model inputs arrive in bands of rows through a callback "
        "(tigris_input_rows(input, ...) in the C); the run counts the rows the plan asks for",
    )
    p.add_argument(
        "--reread-input",
        action="store_true",
        help="with -m: the streamed inputs may be asked again, in windows of rows and columns "
        "(tigris_input_window(input, ...) in the C as well): a frame buffer or flash, not a "
        "sensor read once; implies --stream-input",
    )
    p.add_argument(
        "--stream-output",
        action="store_true",
        help="with -m: the model outputs nothing reads leave in bands of rows through a "
        "callback (tigris_output_rows(output, ...) in the C); the run counts the rows sent",
    )
    p.add_argument(
        "--stats",
        action="store_true",
        help="print the measured fast peak, slow peak, slow reads and slow writes (bytes)",
    )
    p.add_argument(
        "--backend",
        action=Once,
        choices=("interp", "c"),
        default="interp",
        help="run a plan with the loop-level interpreter (default) or as compiled C "
        "(tigris-opt -t c, built with --cc and --cflags)",
    )
    p.add_argument("--mcpu", action=Once, metavar="NAME", default=None, help=MCPU_HELP)
    p.add_argument(
        "--cc",
        action=Once,
        metavar="CC",
        help="the C compiler of --backend c (default: $CC, else gcc)",
    )
    p.add_argument(
        "--cflags",
        action=Once,
        metavar="FLAGS",
        help="optimisation and target flags of --backend c, as --cflags='-O2 -mcpu=...' "
        "(default: '-O3 -march=native'; -std=c99 -ffp-contract=off are always passed)",
    )
    p.add_argument(
        "--c-weights",
        action=Once,
        choices=("auto", "c", "blob"),
        default="auto",
        help="how the C of --backend c holds the weights: as C text (c), or in a binary "
        "blob beside the C that the assembler includes (blob); auto (the default) is the "
        "blob from 64 MiB of weights on",
    )
    p.add_argument(
        "--requant",
        action=Once,
        choices=("float", "fixed"),
        help="how int8 ops requantize (the requant pass): float32 multipliers (the default "
        "on the host) or fixed, integer-only Q31 multipliers and shifts, no floating point in "
        "the int8 body (the default with --mcpu cortex-m4/m7/m55)",
    )
    p.add_argument(
        "--boundary",
        action=Once,
        choices=("float", "int8"),
        help="what the plan takes and gives (the boundary pass): the model's float32 NCHW "
        "tensors (default) or int8, the quantized input and output as they are (int8 or "
        "uint8, NHWC), the model's leading QuantizeLinear and trailing DequantizeLinear absorbed",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    one_line_usage(p)
    return p


def load_module(path: Path, input_shapes: dict[str, tuple[int, ...]], need_weights: bool = True):
    """An (imported or parsed) module and its weight table."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.universe import Universe

    from tigris_ir.frontend.onnx_import import import_file
    from tigris_ir.reference.executor import load_weights

    if path.suffix == ".onnx":
        imported = import_file(path, input_shapes=input_shapes)
        return imported.module, imported.weights
    if path.suffix != ".mlir":
        raise RunError(f"'{path}': expected an .onnx or .mlir model")
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    for name, factory in Universe.get_multiverse().all_dialects.items():
        if name not in ctx.registered_dialect_names:
            ctx.register_dialect(name, factory)
    if "loop" not in ctx.registered_dialect_names:
        from tigris_ir.dialects.loop import Loop

        ctx.register_dialect("loop", lambda: Loop)
    from tigris_ir.plan.ir import main_func
    from tigris_ir.reference.executor import ReferenceError_

    module = parse_module(ctx, read_text(path), str(path))
    try:
        main_func(module)
    except Exception as e:  # PassFailedException: no function to run
        raise Diagnostic(str(path), str(e)) from None
    check_ir_sizes(module, str(path))
    try:
        weights = load_weights(module, path.parent) if need_weights else {}
    except (OSError, ValueError, ReferenceError_) as e:
        raise Diagnostic(str(path), f"cannot read the weights named by nn.weights: {e}") from None
    if need_weights:
        check_weights(module, weights, str(path))
    return module, weights


def host_memory_bytes() -> int:
    """The machine's physical memory (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 0


def check_host_memory(module, origin: str) -> None:
    """Refuse to run a module whose tensors, all held at once (an upper bound of
    what the numpy reference and the interpreter allocate), exceed the machine's
    memory; counted from the types, before anything is allocated. A type with
    a dynamic size (a band's view into an arena of a loop-level plan) holds
    nothing of its own: the arenas it views are counted."""
    from xdsl.dialects.builtin import MemRefType, TensorType

    from tigris_ir.dialects import nn
    from tigris_ir.frontend.diagnostic import format_size

    total = 0
    for op in module.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for v in values:
            t = v.type
            if isinstance(t, TensorType | MemRefType) and min(t.get_shape(), default=0) >= 0:
                try:
                    size = nn.element_dtype(t.element_type).itemsize
                except Exception:  # an element type the nn dialect does not size
                    size = 8
                total += math.prod(t.get_shape()) * size
    limit = host_memory_bytes()
    if limit and total > limit:
        raise Diagnostic(
            origin,
            f"running the model would hold up to {format_size(total)} of tensors; this "
            f"machine has {format_size(limit)} of memory",
        )


def check_weights(module, weights: dict[str, np.ndarray], origin: str) -> None:
    """Every nn.weight of the IR is in the weight table with the IR's shape and type."""
    from tigris_ir.dialects import nn

    for op in module.walk():
        if not isinstance(op, nn.WeightOp):
            continue
        name = op.ref.data
        where = f"{origin}: nn.weight '{name}'"
        if name not in weights:
            raise Diagnostic(where, "the weight file named by nn.weights has no such entry")
        w = weights[name]
        want_shape = tuple(nn.shape_of(op.result))
        want_dtype = np.dtype(nn.dtype_of(op.result))
        if tuple(w.shape) != want_shape or w.dtype != want_dtype:
            raise Diagnostic(
                where,
                f"the weight file holds {w.dtype}[{', '.join(map(str, w.shape))}] but the IR "
                f"says {want_dtype}[{', '.join(map(str, want_shape))}]",
            )


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from tigris_ir.frontend.onnx_import import module_io, parse_shape_specs
    from tigris_ir.reference.executor import run_reference

    path = Path(args.model)
    if not path.exists():
        raise RunError(f"cannot open '{path}': no such file")
    if args.random_input is not None and not 0 <= args.random_input < 2**63:
        raise RunError(
            f"--random-input {args.random_input}: the seed must be an integer from 0 to 2^63-1"
        )
    for dest in args.output:
        parent = Path(dest).parent
        if not parent.is_dir():
            raise RunError(f"--output '{dest}': the folder '{parent}' does not exist")
    try:
        shapes = parse_shape_specs(args.input_shape)
    except ValueError as e:
        raise RunError(str(e)) from None
    if args.mcpu is not None:
        mcpu_target(args.mcpu)
    t0 = time.perf_counter()
    module, weights = load_module(path, shapes)
    check_host_memory(module, str(path))
    _apply_boundary(args, module)
    _apply_requant(args, module)
    t_load = time.perf_counter() - t0
    if args.budget is not None or _is_plan(module):
        return _run_plan(args, module, weights, t_load)
    if args.stats:
        raise RunError("--stats measures a plan: give -m BUDGET or a lowered PLAN.mlir")
    planning = [
        flag
        for flag, given in (
            ("--slow-budget", args.slow_budget is not None),
            ("--stream-input", args.stream_input),
            ("--reread-input", args.reread_input),
            ("--stream-output", args.stream_output),
        )
        if given
    ]
    if planning:
        raise RunError(f"{planning[0]} shapes a plan: give -m BUDGET (the fast-memory budget)")
    if args.backend == "c":
        raise RunError("--backend c runs a plan: give -m BUDGET or a lowered PLAN.mlir")
    fn, in_names, in_layouts, out_names, _ = module_io(module)
    inputs = _inputs(args, fn, in_names, in_layouts)
    t0 = time.perf_counter()
    outputs = run_reference(module, weights, inputs)
    t_run = time.perf_counter() - t0
    if args.output and len(args.output) != len(outputs):
        raise RunError(
            f"the model has {len(outputs)} output(s) but {len(args.output)} --output given"
        )
    _save_outputs(args.output, outputs)
    from tigris_ir.passes.boundary import is_int8_boundary

    int8 = is_int8_boundary(module)
    if not args.quiet:
        for name, y in zip(out_names, outputs):
            print(f"output '{name}': {y.dtype} {_shape_text(y.shape)}")
        for line in boundary_lines(fn) if int8 else []:
            print(line)
        print(f"load: {t_load:.3f} s, run: {t_run:.3f} s")
    if args.check:
        from tigris_ir.passes.requant import module_requant

        fixed = module_requant(module) == "fixed"
        if int8:  # onnxruntime runs the original model on the dequantized input
            inputs, outputs = _float_view(fn, inputs, outputs)
        return _check(
            path, shapes, in_names, inputs, outputs, out_names, args.quiet, fixed, args.rtol
        )
    return 0


def _apply_boundary(args: argparse.Namespace, module) -> None:
    """Run the boundary pass when --boundary int8 is given (before planning)."""
    if args.boundary != "int8":
        return
    from xdsl.utils.exceptions import PassFailedException

    from tigris_ir.passes.boundary import is_int8_boundary, set_int8_boundary
    from tigris_ir.passes.plan_arena import is_lowered
    from tigris_ir.plan.ir import main_func

    if is_int8_boundary(module):
        return
    if is_lowered(main_func(module)):
        raise RunError(
            f"--boundary int8: the plan '{args.model}' was lowered with a float boundary; "
            "lower the model again with --boundary=kind=int8"
        )
    try:
        set_int8_boundary(module)
    except PassFailedException as e:
        raise Diagnostic(args.model, str(e)) from None


def boundary_lines(fn) -> list[str]:
    """The quantized inputs and outputs of an int8-boundary function: type,
    layout, scale and zero point (what a caller feeds and reads)."""
    from tigris_ir.dialects import nn
    from tigris_ir.reference.executor import module_layouts

    in_lay, out_lay = module_layouts(fn)
    args, outs = _io_types(fn)
    lines = []
    for what, key, types, lays in (
        ("input", "nn.input_names", args, in_lay),
        ("output", "nn.output_names", outs, out_lay),
    ):
        for name, t, lay in zip(_names(fn, key, len(types)), types, lays):
            dt = nn.element_dtype(t.element_type)
            q = nn.quant_of(t)
            shape = "x".join(str(d) for d in t.get_shape())
            tail = "" if q is None else f", scale {str(q.scale_value)}, zero point {q.zp_value}"
            lines.append(f"{what} '{name}': {dt} {shape} {lay}{tail}")
    return lines


def _io_types(fn) -> tuple[list, list]:
    """The tensor types (with their quantization) of a function's inputs and
    outputs; a lowered plan's are those of the untiled function it keeps."""
    from tigris_ir.passes.lower_to_loops import untiled_func

    src = fn
    if fn.parent is not None:
        module = fn.parent_op()
        ref = untiled_func(module) if module is not None else None
        src = ref if ref is not None else fn
    return [a.type for a in src.body.block.args], list(src.function_type.outputs.data)


def _float_view(fn, inputs: list[np.ndarray], outputs: list[np.ndarray]):
    """An int8-boundary run as the original model sees it: the inputs and
    outputs dequantized and in the model's layout (NCHW for feature maps)."""
    from tigris_ir.dialects import nn
    from tigris_ir.reference.executor import module_layouts

    in_lay, out_lay = module_layouts(fn)

    def real(x: np.ndarray, t, lay: str) -> np.ndarray:
        v = nn.dequantize_array(x, nn.quant_of(t)).astype(np.float32)
        return np.ascontiguousarray(np.moveaxis(v, -1, 1)) if lay in ("nhwc", "nwc") else v

    args, outs = _io_types(fn)
    return (
        [real(x, t, lay) for x, t, lay in zip(inputs, args, in_lay)],
        [real(y, t, lay) for y, t, lay in zip(outputs, outs, out_lay)],
    )


def _apply_requant(args: argparse.Namespace, module) -> None:
    """Run the requant pass when --requant is given, or with the default of
    --mcpu's target (fixed on the integer-only Cortex-M CPUs); a lowered plan
    keeps the mode its IR records (its band bodies are copies of the ops)."""
    from xdsl.utils.exceptions import PassFailedException

    from tigris_ir.dialects import nn
    from tigris_ir.passes.plan_arena import is_lowered
    from tigris_ir.passes.requant import default_requant, module_requant, set_requant
    from tigris_ir.plan.ir import main_func

    if args.requant is None and args.mcpu is not None:
        if is_lowered(main_func(module)):
            return
        args.requant = default_requant(args.mcpu)
        if args.requant == "fixed" and not any(
            isinstance(op, nn.NNOp) and op.is_quantized() for op in module.walk()
        ):
            return
    if args.requant is None:
        return

    if is_lowered(main_func(module)) and module_requant(module) != args.requant:
        raise RunError(
            f"--requant {args.requant}: the plan '{args.model}' was lowered with requant "
            f"{module_requant(module)}; lower the model again with --requant={args.requant}"
        )
    try:
        set_requant(module, args.requant)
    except PassFailedException as e:
        hint = " (or give --requant float)" if args.mcpu is not None else ""
        raise Diagnostic(args.model, f"{e}{hint}") from None


def _save_outputs(dests: list[str], outputs: list[np.ndarray]) -> None:
    """Each output to exactly the named file (np.save on a name would add .npy)."""
    for dest, y in zip(dests, outputs):
        try:
            with open(dest, "wb") as f:
                np.save(f, y)
        except OSError as e:
            raise RunError(f"cannot write --output '{dest}': {e.strerror}") from None


NPY_MAGIC = b"\x93NUMPY"
"""The first bytes of a .npy file (NumPy's format, written by numpy.save)."""


def _load_input(f: str) -> np.ndarray:
    try:
        with open(f, "rb") as fh:
            head = fh.read(len(NPY_MAGIC))
        if head != NPY_MAGIC:  # np.load would open an .npz or try a pickle
            what = "an .npz archive" if head.startswith(b"PK") else "not a .npy file"
            raise RunError(
                f"cannot read --input '{f}': {what}; --input takes one .npy file "
                "(numpy.save) per model input, in the model's order"
            )
        return np.load(f, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else first_reason(e)
        raise RunError(f"cannot read --input '{f}': {reason}") from None


def first_reason(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__


def _boundary_shape(s: tuple[int, ...], layout: str) -> tuple[int, ...]:
    """The shape an input has outside: NCHW / NCW for feature maps, rank 0 for a scalar."""
    if layout in ("nchw", "ncw"):
        return (s[0], s[-1], *s[1:-1])
    return () if layout == "scalar" else s


def _random_inputs(seed: int, specs) -> list[np.ndarray]:
    """--random-input SEED: per input (shape, dtype) in order, float32 from a
    standard normal, bool 0 or 1, integers over their whole range; the same
    seed gives the same inputs with a plan (-m) and without."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dt in specs:
        dt = np.dtype(dt)
        if dt == np.float32:
            out.append(rng.standard_normal(shape).astype(np.float32))
        elif dt == np.bool_:
            out.append(rng.integers(0, 2, shape).astype(dt))
        else:
            info = np.iinfo(dt)
            out.append(rng.integers(info.min, info.max + 1, shape).astype(dt))
    return out


def _inputs(args: argparse.Namespace, fn, names: list[str], layouts: list[str]) -> list[np.ndarray]:
    from tigris_ir.dialects import nn

    arg_vals = list(fn.body.block.args)
    if args.random_input is not None:
        if args.input:
            raise RunError("give either --input or --random-input, not both")
        specs = [
            (_boundary_shape(nn.shape_of(a), lay), np.dtype(nn.dtype_of(a)))
            for a, lay in zip(arg_vals, layouts)
        ]
        return _random_inputs(args.random_input, specs)
    if len(args.input) != len(arg_vals):
        raise RunError(
            f"the model takes {len(arg_vals)} input(s) ({', '.join(names)}); "
            f"{len(args.input)} --input given (or use --random-input SEED)"
        )
    out = []
    for f, name, a, lay in zip(args.input, names, arg_vals, layouts):
        x = _load_input(f)
        s = _boundary_shape(nn.shape_of(a), lay)
        dt = np.dtype(nn.dtype_of(a))
        if tuple(x.shape) != tuple(s) or x.dtype != dt:
            raise RunError(
                f"--input '{f}': input '{name}' must be {dt} of shape {'x'.join(map(str, s))} "
                f"(NCHW for feature maps), got {x.dtype} of shape {'x'.join(map(str, x.shape))}"
            )
        out.append(x)
    return out


def _shape_text(shape: tuple[int, ...]) -> str:
    """`1x1000`, or `scalar` for a 0-d array."""
    return "x".join(map(str, shape)) if shape else "scalar"


def _rtol(text: str) -> float:
    """A --rtol value: a positive finite number."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a positive number (a relative tolerance, e.g. 1e-4)"
        )
    return v


def _check(
    path: Path,
    shapes,
    in_names,
    inputs,
    outputs,
    out_names,
    quiet: bool,
    fixed: bool = False,
    rtol: float | None = None,
) -> int:
    if path.suffix != ".onnx":
        raise RunError("--check compares with onnxruntime and needs the .onnx model")
    from tigris_ir.reference.oracle import FLOAT_RTOL, compare_with_onnxruntime

    try:
        report = compare_with_onnxruntime(
            path.read_bytes(),
            dict(zip(in_names, inputs)),
            outputs,
            out_names,
            rtol=FLOAT_RTOL if rtol is None else rtol,
        )
    except Exception as e:  # onnxruntime's own errors (Fail, InvalidGraph, ...)
        raise RunError(
            f"--check: onnxruntime cannot run '{path}': {type(e).__name__}: "
            f"{first_reason(e)[:300]}"
        ) from None
    # an int8 output beyond 1 LSB of the unfused session but within 1 LSB of
    # onnxruntime's fused integer kernels (or as close as onnxruntime's two
    # sessions are to each other) is held op by op (`_check_ops`)
    by_op = fixed or (
        not report.ok
        and all(
            d.ok or (d.quantized and not d.exact and d.worst_fused <= d.fused_limit)
            for d in report.diffs
        )
    )
    if by_op:
        return _check_ops(path, shapes, in_names, inputs, report, quiet, fixed)
    if not quiet or not report.ok:
        print(report.text)
    return 0 if report.ok else 1


def _check_ops(
    path: Path, shapes, in_names, inputs, report, quiet: bool, fixed: bool
) -> int:
    """An int8 model held op by op: each quantized op, fed onnxruntime's own
    inputs, must be within 1 LSB of onnxruntime's output; the whole output's
    distance is reported. Under requant fixed the two roundings of each
    requantization add up over layers; under requant float an exact int32
    sum against onnxruntime's float32 one (its unfused session) differs on
    rounding ties, and later layers can widen such a step: the whole output
    is then within 1 LSB of onnxruntime's fused integer kernels instead, or
    within the distance of onnxruntime's two sessions from each other where
    that is larger (its own roundings differ as much)."""
    from tigris_ir.frontend.onnx_import import import_file
    from tigris_ir.passes.requant import set_requant
    from tigris_ir.reference.oracle import INT8_LSB, per_op_lsb

    imported = import_file(path, input_shapes=shapes)
    mode = "fixed" if fixed else "float"
    set_requant(imported.module, mode)
    diffs = per_op_lsb(path.read_bytes(), imported, dict(zip(in_names, inputs)))
    worst = max(diffs, key=lambda d: d.worst_lsb, default=None)
    ok = worst is None or worst.worst_lsb <= INT8_LSB
    why = "fixed-point roundings" if fixed else "rounding ties of the int32 sums"
    if not quiet or not ok:
        for d in report.diffs:
            limit = "no limit" if fixed else f"limit {d.fused_limit:g} from the fused kernels"
            if not fixed and d.fused_limit > INT8_LSB:
                limit += ", as far as onnxruntime's own two sessions are apart"
            print(
                f"output '{d.name}': {d.worst:g} {'LSB' if d.quantized else 'relative'} from "
                f"onnxruntime at index {list(d.where)}, {d.worst_fused:g} from its fused "
                f"kernels (whole model, {why} add up over layers; {limit})"
            )
        if worst is None:
            print(f"requant {mode}: no quantized op to compare")
        else:
            status = "ok" if ok else "MISMATCH"
            print(
                f"requant {mode}: {status}: each of {len(diffs)} quantized ops fed onnxruntime's "
                f"inputs within {worst.worst_lsb} LSB (limit {INT8_LSB}; worst: {worst.op} "
                f"'{worst.value}')"
            )
    return 0 if ok else 1


def _is_plan(module) -> bool:
    """A module at the loop level, or with tiling passes' stages."""
    from tigris_ir.passes.plan_arena import is_lowered
    from tigris_ir.plan.ir import main_func

    fn = main_func(module)
    return is_lowered(fn) or any(op.name in ("tile.stage", "tile.chain") for op in fn.walk())


def _run_plan(args: argparse.Namespace, module, weights, t_load: float) -> int:
    """Lower (if needed), verify and run a plan at the loop level."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import IntegerAttr
    from xdsl.utils.exceptions import PassFailedException

    from tigris_ir.interp.loop_ir import run_loop_module
    from tigris_ir.interp.untiled import untiled_reference
    from tigris_ir.passes.lower_gebp import tile_and_lower
    from tigris_ir.passes.lower_to_loops import LowerToLoopsPass, untiled_func
    from tigris_ir.passes.plan_arena import PlanArenaPass, is_lowered, verify_arena
    from tigris_ir.plan.ir import BUDGET_ATTR, main_func
    from tigris_ir.plan.memory import parse_budget
    from tigris_ir.reference.executor import module_layouts, to_boundary, to_internal
    from tigris_ir.tools.cli import check_budget

    budget: int | None = None
    if args.budget is not None:
        try:
            budget = check_budget(parse_budget(args.budget), args.budget)
        except ValueError as e:
            raise RunError(f"{e} (option -m)") from None
    slow: int | None = None
    if args.slow_budget is not None:
        try:
            slow = check_budget(parse_budget(args.slow_budget, zero_ok=True), args.slow_budget)
        except ValueError as e:
            raise RunError(f"--slow-budget: {e}") from None
    t0 = time.perf_counter()
    if not is_lowered(main_func(module)):
        attr = module.attributes.get(BUDGET_ATTR)
        if budget is None and isinstance(attr, IntegerAttr):
            try:
                budget = check_budget(parse_budget(int(attr.value.data)), BUDGET_ATTR)
            except ValueError as e:
                raise Diagnostic(args.model, f"the module attribute {BUDGET_ATTR}: {e}") from None
        if budget is None:
            raise RunError("give the fast-memory budget of the plan with -m BUDGET")
        ctx = Context()
        try:
            LowerToLoopsPass(
                budget=budget,
                slow_budget="" if slow is None else slow,
                stream_input=args.stream_input or args.reread_input,
                stream_output=args.stream_output,
                reread_input=args.reread_input,
            ).apply(ctx, module)
            # --gebp-tile --lower-gebp: the kernels the C prints
            tile_and_lower(module, target=args.mcpu or "host")
            PlanArenaPass(budget=budget).apply(ctx, module)
        except PassFailedException as e:  # the model does not fit: name the model too
            raise Diagnostic(args.model, few_lines(str(e))) from None
    else:
        problems = verify_arena(module, budget)
        if problems:
            more = [f"... ({len(problems) - 4} more)"] if len(problems) > 4 else []
            shown = problems[:4] + more
            raise RunError(
                f"the plan does not verify, nothing runs: '{args.model}'\n  " + "\n  ".join(shown)
            )
        args.mcpu = _plan_target(module, args.mcpu, args.model)
    t_plan = time.perf_counter() - t0
    fn = main_func(module)
    in_layouts, out_layouts = module_layouts(fn)
    names = _names(fn, "nn.input_names", len(fn.function_type.inputs.data))
    out_names = _names(fn, "nn.output_names", len(fn.function_type.outputs.data))
    inputs = _plan_inputs(args, fn, names, in_layouts)
    internal = [to_internal(x, lay) for x, lay in zip(inputs, in_layouts)]
    if args.backend == "c":
        outputs, stats, t_run, t_build = _run_c(args, module, weights, inputs)
        tiles = stats.tiles if stats is not None else None
    else:
        t0 = time.perf_counter()
        res = run_loop_module(module, weights, internal)
        t_run = time.perf_counter() - t0
        t_build = None
        outputs = [to_boundary(y, lay) for y, lay in zip(res.outputs, out_layouts)]
        stats, tiles = res.stats, res.stats.tiles
    if args.output and len(args.output) != len(outputs):
        raise RunError(
            f"the model has {len(outputs)} output(s) but {len(args.output)} --output given"
        )
    _save_outputs(args.output, outputs)
    if not args.quiet:
        for name, y in zip(out_names, outputs):
            print(f"output '{name}': {y.dtype} {_shape_text(y.shape)}")
        build = f"build: {t_build:.3f} s, " if t_build is not None else ""
        print(
            f"load: {t_load:.3f} s, plan: {t_plan:.3f} s, {build}run: {t_run:.3f} s"
            + (f", {tiles} tiles" if tiles is not None else "")
        )
    from tigris_ir.passes.boundary import is_int8_boundary

    int8 = is_int8_boundary(module)
    if int8 and not args.quiet:
        for line in boundary_lines(fn):
            print(line)
    if args.stats:
        assert stats is not None
        for line in [*stats.lines(), *getattr(args, "target_lines", [])]:
            print(line)
    ort_status = 0
    if args.check and int8 and Path(args.model).suffix == ".onnx":
        from tigris_ir.passes.requant import module_requant

        feeds, real_out = _float_view(fn, inputs, outputs)
        shapes = parse_shape_specs_or_empty(args)
        ort_status = _check(
            Path(args.model),
            shapes,
            names,
            feeds,
            real_out,
            out_names,
            args.quiet,
            module_requant(module) == "fixed",
            args.rtol,
        )
    if args.check:
        ref_fn = untiled_func(module)
        if ref_fn is None:
            raise RunError(
                "--check needs the untiled function the plan was lowered from "
                "(lower-to-loops keeps it as @<name>_untiled)"
            )
        ref = [
            to_boundary(y, lay)
            for y, lay in zip(untiled_reference(ref_fn, weights, internal), out_layouts)
        ]
        rtol = PLAN_RTOL if args.rtol is None else args.rtol
        return max(_check_plan(out_names, outputs, ref, args.quiet, rtol), ort_status)
    return 0


def parse_shape_specs_or_empty(args: argparse.Namespace) -> dict[str, tuple[int, ...]]:
    from tigris_ir.frontend.onnx_import import parse_shape_specs

    try:
        return parse_shape_specs(args.input_shape)
    except ValueError as e:
        raise RunError(str(e)) from None


def _plan_target(module, mcpu: str | None, origin: str) -> str | None:
    """The CPU a lowered plan runs for: --mcpu, which must be the target its
    kernels were chosen for (their `rtile.target`), else that target."""
    from xdsl.dialects.builtin import StringAttr

    from tigris_ir.dialects.rtile import TARGET
    from tigris_ir.rtile import targets as tg

    labels = {
        a.data for op in module.walk() if isinstance(a := op.attributes.get(TARGET), StringAttr)
    }
    if mcpu is None:
        return next(iter(labels)) if len(labels) == 1 else None
    want = tg.label(tg.get_target(mcpu))
    other = sorted(lab for lab in labels if lab != want)
    if other:
        raise Diagnostic(
            origin,
            f"the plan's kernels are for target '{other[0]}' (rtile.target), not --mcpu "
            f"'{mcpu}': run --gebp-tile and --lower-gebp again with --mcpu {mcpu}",
        )
    return mcpu


def c_flags(args: argparse.Namespace) -> str | None:
    """--cflags, else the target's: None (the host default, -O3 -march=native)
    for `host`, -O3 and the preset's ISA flags for another CPU this machine runs;
    a CPU it cannot run is refused."""
    from tigris_ir.rtile import targets as tg

    if args.cflags is not None or args.mcpu in (None, "host"):
        return args.cflags
    target = tg.get_target(args.mcpu)
    reason = tg.can_run(target)
    if reason is not None and target.mcu is None:
        raise RunError(f"--backend c --mcpu {args.mcpu}: {reason}")
    return " ".join(("-O3", *target.cflags()))


def _run_c(args: argparse.Namespace, module, weights, inputs: list[np.ndarray]):
    """Print, build and run the plan as C: outputs (boundary layout), the
    figures of a stats build (with --stats), run and build seconds."""
    from tigris_ir.backend.c.build import CBuildError, CRunError, build, execute, stats_of
    from tigris_ir.backend.c.network import print_network

    t0 = time.perf_counter()
    # the plan was verified above (plan-arena or verify_arena)
    source = print_network(module, weights=weights, verify=False, weights_form=args.c_weights)
    target = mcpu_target(args.mcpu or "host")
    if target.mcu is not None:
        return _run_on_target(args, source, target, inputs, t0)
    flags = c_flags(args)
    try:
        exe = build(source, flags=flags, cc=args.cc)
        stats_exe = build(source, flags=flags, cc=args.cc, variant="stats") if args.stats else None
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        outputs, _ = execute(source, exe, inputs)
        t_run = time.perf_counter() - t0
        stats = None
        if stats_exe is not None:
            stats_out, figures = execute(source, stats_exe, inputs)
            for a, b in zip(outputs, stats_out):
                if a.tobytes() != b.tobytes():
                    raise RunError("the stats build of the C computes other outputs than the build")
            stats = stats_of(source, figures)
    except (CBuildError, CRunError) as e:
        raise RunError(f"--backend c: {e}") from None
    except OSError as e:
        raise RunError(f"--backend c: cannot run the compiled network: {e}") from None
    return outputs, stats, t_run, t_build


def _run_on_target(args: argparse.Namespace, source, target, inputs, t0: float):
    """The plan's C cross-compiled for a Cortex-M and run under QEMU on its board."""
    import shlex

    from tigris_ir.backend.c import cortex
    from tigris_ir.backend.c.build import CBuildError, CRunError

    opt = shlex.split(args.cflags) if args.cflags is not None else list(cortex.OPT_FLAGS)
    try:
        done = cortex.run_on_target(
            source, target, inputs, stats=args.stats, cc=args.cc or cortex.CC, opt=opt
        )
    except (CBuildError, CRunError) as e:
        raise RunError(f"--backend c --mcpu {target.name}: {e}") from None
    args.target_lines = done.lines(source, target) if args.stats else []
    t_print = time.perf_counter() - t0 - done.build_seconds - done.run_seconds
    return done.outputs, done.stats, done.run_seconds, t_print + done.build_seconds


def _names(fn, key: str, n: int) -> list[str]:
    from xdsl.dialects.builtin import ArrayAttr, StringAttr

    a = fn.attributes.get(key)
    if isinstance(a, ArrayAttr) and len(a.data) == n:
        return [x.data if isinstance(x, StringAttr) else f"arg{i}" for i, x in enumerate(a.data)]
    return [f"arg{i}" for i in range(n)]


def _plan_inputs(
    args: argparse.Namespace, fn, names: list[str], layouts: list[str]
) -> list[np.ndarray]:
    """The inputs in the model's layout, checked against the plan's arguments."""
    from xdsl.dialects.builtin import MemRefType

    from tigris_ir.dialects import nn

    want: list[tuple[tuple[int, ...], np.dtype]] = []
    for a, lay in zip(fn.body.block.args, layouts):
        t = a.type
        assert isinstance(t, MemRefType)
        want.append((_boundary_shape(tuple(t.get_shape()), lay), nn.element_dtype(t.element_type)))
    if args.random_input is not None:
        if args.input:
            raise RunError("give either --input or --random-input, not both")
        return _random_inputs(args.random_input, want)
    if len(args.input) != len(want):
        raise RunError(
            f"the model takes {len(want)} input(s) ({', '.join(names)}); "
            f"{len(args.input)} --input given (or use --random-input SEED)"
        )
    out = []
    for f, name, (s, dt) in zip(args.input, names, want):
        x = _load_input(f)
        if tuple(x.shape) != s or x.dtype != dt:
            raise RunError(
                f"input '{name}' must be {dt} of shape {'x'.join(map(str, s))}, got "
                f"{x.dtype} of shape {'x'.join(map(str, x.shape))} (from '{f}')"
            )
        out.append(x)
    return out


PLAN_RTOL = 1e-5
"""--check's default limit for a float32 output of a plan against the untiled
reference, relative to the output's largest magnitude."""


def _check_plan(
    names: list[str],
    outputs: list[np.ndarray],
    ref: list[np.ndarray],
    quiet: bool,
    rtol: float = PLAN_RTOL,
) -> int:
    """The plan's outputs against the untiled reference: int8 bit-exact,
    float32 to `rtol` of the output's largest magnitude."""
    ok = True
    for name, y, r in zip(names, outputs, ref):
        if r.dtype == np.float32:
            from tigris_ir.reference.oracle import abs_diff

            finite = np.abs(r[np.isfinite(r)])
            scale = max(float(finite.max()), 1e-30) if finite.size else 1.0
            err = abs_diff(y, r) / scale
            bad = bool(err.max() > rtol) if err.size else False
            worst = f"{float(err.max()) if err.size else 0.0:.2e} relative"
            limit = f"limit {rtol:.2e}"
        else:
            err = np.abs(y.astype(np.int64) - r.astype(np.int64))
            bad = bool(err.max() > 0) if err.size else False
            worst = f"{int(err.max()) if err.size else 0} LSB"
            limit = ""  # int8: bit-exact, as the 0 LSB says
        where = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
        if bad:
            ok = False
            print(
                f"output '{name}': MISMATCH with the untiled reference: {worst}"
                f"{f' ({limit})' if limit else ''} at {where} "
                f"(plan {y[where]}, reference {r[where]})"
            )
        elif not quiet:
            print(
                f"output '{name}': equals the untiled reference "
                f"({worst} at most{f', {limit}' if limit else ''})"
            )
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
