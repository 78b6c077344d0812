"""Coverage-guided fuzzing of the ONNX importer and the IR parser with atheris.

    python tests/fuzz/fuzz_tigris.py onnx --seconds 300 [--corpus DIR]
    python tests/fuzz/fuzz_tigris.py ir --seconds 300

`onnx` feeds bytes to the import entry point (parse, validate, import);
`ir` feeds bytes to the IR reader of tigris-run (UTF-8, parse, verify, sizes).
An input may be refused only by the diagnostic exception of that entry point;
any other exception is a finding, which atheris (libFuzzer) reports with the
input that raised it (`crash-*` in the working folder). The seed corpus is
the hostile corpus's valid models and IR (tests/hostile/corpus.py). Needs the
optional extra `fuzz` (`pip install -e .[fuzz]`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _seed(target: str, d: Path) -> None:
    from hostile.corpus import generate

    work = d / "gen"
    generate(work)
    d.mkdir(exist_ok=True)
    suffix = ".onnx" if target == "onnx" else ".mlir"
    for p in sorted(work.glob(f"*{suffix}")):
        (d / p.name).write_bytes(p.read_bytes())


def _onnx_one(data: bytes) -> None:
    from tigris_ir.frontend.onnx_import import ImportDiagnostic, import_model, load_model

    try:
        model = load_model(data, "fuzz.onnx")
        import_model(model, origin="fuzz.onnx")
    except ImportDiagnostic:
        pass


_CTX: list = []


def _context():
    """One context for every input, with every dialect registered (as tigris-run)."""
    if not _CTX:
        from xdsl.context import Context
        from xdsl.dialects.builtin import Builtin
        from xdsl.dialects.func import Func
        from xdsl.universe import Universe

        ctx = Context()
        ctx.load_dialect(Builtin)
        ctx.load_dialect(Func)
        for name, factory in Universe.get_multiverse().all_dialects.items():
            if name not in ctx.registered_dialect_names:
                ctx.register_dialect(name, factory)
        _CTX.append(ctx)
    return _CTX[0]


def _ir_one(data: bytes) -> None:
    from tigris_ir.tools.cli import Diagnostic, check_ir_sizes, parse_module

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return  # refused by read_text before parsing
    ctx = _context()
    try:
        module = parse_module(ctx, text, "fuzz.mlir")
        check_ir_sizes(module, "fuzz.mlir")
    except Diagnostic:
        pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("target", choices=("onnx", "ir"))
    p.add_argument("--seconds", type=int, default=60, help="how long to fuzz (default 60)")
    p.add_argument("--corpus", help="corpus folder (default: a fresh seed corpus)")
    p.add_argument("--runs", type=int, default=-1, help="stop after this many inputs")
    args = p.parse_args()
    try:
        import atheris
    except ImportError:
        print("fuzz_tigris: atheris is not installed (pip install -e .[fuzz])", file=sys.stderr)
        return 1
    # our code, and for the IR target xDSL's lexer and parser, guide the search
    with atheris.instrument_imports(include=["tigris_ir", "xdsl.parser", "xdsl.utils.mlir_lexer"]):
        import xdsl.parser  # noqa: F401
        import xdsl.utils.mlir_lexer  # noqa: F401

        import tigris_ir.frontend.onnx_import  # noqa: F401
        import tigris_ir.frontend.validate  # noqa: F401
        import tigris_ir.tools.cli  # noqa: F401
        import tigris_ir.tools.tigris_run  # noqa: F401
    one = _onnx_one if args.target == "onnx" else _ir_one
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(args.corpus) if args.corpus else Path(tmp) / "corpus"
        if not args.corpus:
            _seed(args.target, corpus)
        libfuzzer = [
            sys.argv[0],
            str(corpus),
            f"-max_total_time={args.seconds}",
            f"-runs={args.runs}",
            "-rss_limit_mb=4096",
            "-timeout=30",
            "-max_len=8192",
        ]
        atheris.Setup(libfuzzer, one)
        atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main())
