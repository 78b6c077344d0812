"""`tigris-run`: run a model (`.onnx` or `.mlir`) on `.npy` inputs with numpy.

Inputs and outputs are in the model's own layout (NCHW for feature maps).
`--check` compares the result with onnxruntime when the model is an `.onnx`
file (float32 to a relative 1e-4, int8 models to 1 quantization step), and
exits 1 on a mismatch, saying where it differs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

PROG = "tigris-run"


class RunError(Exception):
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
        help="compare with onnxruntime (needs an .onnx model); exit 1 on mismatch",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    return p


def load_module(path: Path, input_shapes: dict[str, tuple[int, ...]], need_weights: bool = True):
    """An (imported or parsed) module and its weight table."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.parser import Parser

    from tigris_ir.onnx_import import import_file
    from tigris_ir.reference import load_weights
    from tigris_ir.universe import DIALECTS

    if path.suffix == ".onnx":
        imported = import_file(path, input_shapes=input_shapes)
        return imported.module, imported.weights
    if path.suffix != ".mlir":
        raise RunError(f"'{path}': expected an .onnx or .mlir model")
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Func)
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, path.read_text(), str(path)).parse_module()
    module.verify()
    return module, (load_weights(module, path.parent) if need_weights else {})


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from tigris_ir.onnx_import import module_io, parse_shape_spec
    from tigris_ir.reference import run_reference

    path = Path(args.model)
    if not path.exists():
        raise RunError(f"cannot open '{path}': no such file")
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in args.input_shape:
        try:
            name, dims = parse_shape_spec(spec)
        except ValueError as e:
            raise RunError(str(e)) from None
        shapes[name] = dims
    t0 = time.perf_counter()
    module, weights = load_module(path, shapes)
    t_load = time.perf_counter() - t0
    fn, in_names, in_layouts, out_names, _ = module_io(module)
    inputs = _inputs(args, fn, in_names, in_layouts)
    t0 = time.perf_counter()
    outputs = run_reference(module, weights, inputs)
    t_run = time.perf_counter() - t0
    if args.output and len(args.output) != len(outputs):
        raise RunError(
            f"the model has {len(outputs)} output(s) but {len(args.output)} --output given"
        )
    for dest, y in zip(args.output, outputs):
        np.save(dest, y)
    if not args.quiet:
        for name, y in zip(out_names, outputs):
            print(f"output '{name}': {y.dtype} {'x'.join(map(str, y.shape))}")
        print(f"load: {t_load:.3f} s, run: {t_run:.3f} s")
    if args.check:
        return _check(path, shapes, in_names, inputs, outputs, out_names, args.quiet)
    return 0


def _inputs(args: argparse.Namespace, fn, names: list[str], layouts: list[str]) -> list[np.ndarray]:
    from tigris_ir.dialects import nn

    arg_vals = list(fn.body.block.args)
    if args.random_input is not None:
        if args.input:
            raise RunError("give either --input or --random-input, not both")
        rng = np.random.default_rng(args.random_input)
        out = []
        for a, lay in zip(arg_vals, layouts):
            s = nn.shape_of(a)
            if lay in ("nchw", "ncw"):
                s = (s[0], s[-1], *s[1:-1])
            dt = nn.dtype_of(a)
            x = rng.standard_normal(s).astype(np.float32)
            out.append(x if dt == np.float32 else rng.integers(-128, 128, s).astype(dt))
        return out
    if len(args.input) != len(arg_vals):
        raise RunError(
            f"the model takes {len(arg_vals)} input(s) ({', '.join(names)}); "
            f"{len(args.input)} --input given (or use --random-input SEED)"
        )
    out = []
    for f in args.input:
        try:
            out.append(np.load(f, allow_pickle=False))
        except (OSError, ValueError) as e:
            raise RunError(f"cannot read input '{f}': {e}") from None
    return out


def _check(path: Path, shapes, in_names, inputs, outputs, out_names, quiet: bool) -> int:
    if path.suffix != ".onnx":
        raise RunError("--check compares with onnxruntime and needs the .onnx model")
    from tigris_ir.oracle import compare_with_onnxruntime

    report = compare_with_onnxruntime(
        path.read_bytes(), dict(zip(in_names, inputs)), outputs, out_names
    )
    if not quiet or not report.ok:
        print(report.text)
    return 0 if report.ok else 1


def main() -> int:
    try:
        return run()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
        return 0 if code == 0 else 1
    except RunError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        from xdsl.utils.exceptions import DiagnosticException, ParseError

        from tigris_ir.onnx_import import ImportDiagnostic
        from tigris_ir.reference import ReferenceError_

        if isinstance(e, ImportDiagnostic | ParseError | DiagnosticException):
            print(str(e).rstrip(), file=sys.stderr)
            return 1
        if isinstance(e, ReferenceError_):
            print(f"{PROG}: error: {e}", file=sys.stderr)
            return 1
        if os.environ.get("TIGRIS_TRACEBACK"):
            raise
        print(
            f"{PROG}: internal error: {type(e).__name__}: {e} "
            "(set TIGRIS_TRACEBACK=1 for a traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
