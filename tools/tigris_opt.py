"""`tigris-opt`: xDSL's optimizer driver with TiGrIS's dialects, passes and importer.

Differences from `xdsl-opt`, each for the command lines our users type:

* an `.onnx` input is imported (`--input-shape NAME:1x3x224x224` fixes symbolic
  dimensions; `--weights-out F.npz` writes the weight table beside the IR);
* every pass is also a flag, applied in command-line order after `-p`:
  `--tile-stages --fuse-chains`, with options as `--tile-stages=budget=256K`;
* budgets accept `262144`, `256K`, `1M` wherever an option is named `budget`
  (or `slow-budget`, which also takes 0);
* `--mcpu NAME` names the CPU of every target-dependent pass (a pass with a
  `target` option, such as gebp-tile, takes it unless its own `target=` is
  given): `host`, the x86 / NEON presets, `cortex-m4`, `cortex-m7`, `cortex-m55`
  (`-t`/`--target` stays xdsl-opt's output format);
* every user error is one diagnostic on stderr and exit status 1, never a
  traceback (set TIGRIS_TRACEBACK=1 to see one for an internal error).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException
from xdsl.xdsl_opt_main import xDSLOptMain

from tigris_ir.plan.memory import parse_budget
from tigris_ir.tools.cli import (
    MCPU_HELP,
    Diagnostic,
    UserError,
    check_budget,
    check_ir_sizes,
    few_lines,
    mcpu_target,
    one_line_usage,
    parse_module,
    refuse_repeated,
    run_main,
    target_options,
)
from tigris_ir.universe import TIGRIS

PROG = "tigris-opt"

PRINTABLE_TARGETS = ("mlir",)
"""xdsl-opt's targets that print any IR; TiGrIS's own (c) are added to these."""


def _pass_summary(factory: Callable[[], type[ModulePass]]) -> str:
    doc = (factory().__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


class _PassFlag(argparse.Action):
    """A pass's flag (`store_true` into its dest). Its help, the first line of
    the pass's docstring, is read only when help is printed: a command that
    does not run a pass does not import its module (the C backend, the
    autotuner and the interpreter behind some take half a second)."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        factory: Callable[[], type[ModulePass]],
        **kwargs: Any,
    ) -> None:
        self._factory = factory
        super().__init__(option_strings, dest, nargs=0, default=False, **kwargs)

    @property
    def help(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        return _pass_summary(self._factory)

    @help.setter
    def help(self, _value: object) -> None:
        pass

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, True)


_OPTION_SPLIT = re.compile(r",(?=\s*[A-Za-z_][\w-]*\s*=)")
_BUDGET_OPT = re.compile(r"(?<![\w-])((?:slow[-_])?budget)=([^\s}]+)")


def flag_to_spec(name: str, options: str | None) -> str:
    """`--tile-stages=budget=256K,verbose=true` as the pipeline `tile-stages{...}`."""
    if not options:
        return name
    opts = " ".join(p.strip() for p in _OPTION_SPLIT.split(options))
    return f"{name}{{{opts}}}"


_PASS_OPTIONS = re.compile(r"([\w-]+)\{([^}]*)\}")
_OPTION_KEY = re.compile(r"(?:^|\s)([A-Za-z_][\w-]*)\s*=")


def normalise_budgets(spec: str) -> str:
    """Rewrite `budget=256K` to bytes so that integer pass options accept it;
    a pass given one option twice, or a budget beyond any target, is refused."""
    for m in _PASS_OPTIONS.finditer(spec):
        keys = _OPTION_KEY.findall(m.group(2))
        twice = sorted({k for k in keys if keys.count(k) > 1})
        if twice:
            raise UsageError(
                f"pass '{m.group(1)}' is given option '{twice[0]}' more than once "
                f"('{m.group(0)}'); give each option once"
            )

    def repl(m: re.Match[str]) -> str:
        try:
            if m.group(1) != "budget":  # the slow budget: 0 is no slow memory
                return f"slow_budget={parse_budget(m.group(2), zero_ok=True)}"
            return f"{m.group(1)}={check_budget(parse_budget(m.group(2)), m.group(2))}"
        except ValueError as e:
            raise UsageError(f"{e} (pass option {m.group(0)})") from None

    return _BUDGET_OPT.sub(repl, spec)


class UsageError(UserError):
    """A bad command line: printed as `tigris-opt: error: ...`, exit 1."""


class TigrisOptMain(xDSLOptMain):
    """The driver; `flag_passes` are the pass flags taken out of argv, in order."""

    def __init__(self, args: Sequence[str], flag_passes: list[str]):
        self.flag_passes = flag_passes
        super().__init__(description=__doc__.splitlines()[0] if __doc__ else "", args=args)

    # -- registration --------------------------------------------------------
    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in TIGRIS.all_dialects.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in TIGRIS.all_passes.items():
            self.available_passes.setdefault(name, factory)

    def register_all_targets(self) -> None:
        """Only the targets that print this compiler's IR: MLIR text and C
        (xdsl-opt's assembly, LLVM and shader targets cannot print nn IR)."""
        super().register_all_targets()
        self.available_targets = {
            name: f for name, f in self.available_targets.items() if name in PRINTABLE_TARGETS
        }
        for name, factory in TIGRIS.all_targets.items():
            self.available_targets.setdefault(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["onnx"] = self.import_onnx
        self.available_frontends["mlir"] = self.parse_mlir

    def parse_mlir(self, io: IO[bytes]) -> ModuleOp:
        origin = self.get_input_name()
        data = io.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Diagnostic(
                origin,
                f"not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start}; "
                "IR files are UTF-8 MLIR",
            ) from None
        if self.args.parsing_diagnostics or self.args.verify_diagnostics:
            from xdsl.parser import Parser  # xdsl-opt prints the raw diagnostics

            return Parser(self.ctx, text, origin).parse_module()
        # the passes plan from the ops' verified attributes: with a pipeline the
        # IR is verified even under --disable-verify (which then only lets an
        # invalid module through to the printer)
        verify = not self.args.disable_verify or bool(self.args.passes)
        module = parse_module(self.ctx, text, origin, verify=verify)
        check_ir_sizes(module, origin, allow_empty=True)
        return module

    def apply_passes(self, prog: ModuleOp) -> None:
        """The pipeline; a verifier or pass failure names the input, not the module."""
        if self.args.verify_diagnostics:  # xdsl-opt prints the raw diagnostic
            super().apply_passes(prog)
            return
        try:
            self._target_requant(prog)
            super().apply_passes(prog)
        except DiagnosticException as e:
            raise Diagnostic(self.get_input_name(), few_lines(str(e))) from None
        except RecursionError:
            raise Diagnostic(self.get_input_name(), "the IR nests too deeply") from None

    def _target_requant(self, prog: ModuleOp) -> None:
        """--mcpu's requantization when the pipeline chooses none: the
        integer-only CPUs (the Cortex-M ones) get the requant pass's fixed mode,
        as tigris-run gives them, recorded in the IR (`nn.requant`); a module
        that records a mode, a lowered plan and a model without int8 ops keep
        theirs."""
        from tigris_ir.dialects import nn

        if self.args.mcpu is None or nn.REQUANT_ATTR in prog.attributes:
            return
        from xdsl.utils.exceptions import PassFailedException

        from tigris_ir.loops.verify import is_lowered
        from tigris_ir.passes.requant import RequantPass, default_requant, set_requant
        from tigris_ir.plan.ir import main_func
        if any(isinstance(p, RequantPass) for p in self.pipeline.passes):
            return
        if default_requant(self.args.mcpu) != "fixed":
            return
        if not any(isinstance(op, nn.NNOp) and op.is_quantized() for op in prog.walk()):
            return
        try:
            if is_lowered(main_func(prog)):
                return
        except (PassFailedException, ValueError):
            return
        try:
            set_requant(prog, "fixed")
        except PassFailedException as e:
            raise Diagnostic(
                self.get_input_name(), f"{e} (or add --requant=mode=float to the pipeline)"
            ) from None

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = PROG
        one_line_usage(arg_parser)
        arg_parser.add_argument(
            "--input-shape",
            action="append",
            default=[],
            metavar="NAME:DxDxD",
            help="shape of an ONNX input with symbolic dimensions (repeatable)",
        )
        arg_parser.add_argument(
            "--import-stats",
            action="store_true",
            help="print what the import folded and removed (nodes before and after, "
            "per operator) to stderr",
        )
        arg_parser.add_argument("--mcpu", metavar="NAME", default=None, help=MCPU_HELP)
        arg_parser.add_argument(
            "--weights-out",
            metavar="FILE.npz",
            help="write the imported weights to FILE.npz and reference it from the IR "
            "(default: the IR references the .onnx model itself)",
        )
        group = arg_parser.add_argument_group(
            "passes (as flags, applied in command-line order after -p; options as "
            "--PASS=key=value,key=value)"
        )
        for name in sorted(TIGRIS.all_passes):
            group.add_argument(
                f"--{name}",
                dest=f"_flag_{name}",
                action=_PassFlag,
                factory=TIGRIS.all_passes[name],
            )

    # -- import --------------------------------------------------------------
    def import_onnx(self, io: IO[bytes]) -> ModuleOp:
        # onnx (and its ml_dtypes, about 1 s) loads only for an .onnx input
        from tigris_ir.frontend.onnx_import import import_model, load_model, parse_shape_specs

        origin = self.get_input_name()
        try:
            shapes = parse_shape_specs(self.args.input_shape)
        except ValueError as e:
            raise UsageError(str(e)) from None
        base = Path(origin).resolve().parent if origin != "stdin" else None
        model = load_model(io.read(), origin, base_dir=base)
        ref = str(Path(origin).resolve()) if origin != "stdin" else None
        imported = import_model(model, origin=origin, input_shapes=shapes, weights_ref=ref)
        if self.args.import_stats and imported.simplified is not None:
            print(imported.simplified.summary(), file=sys.stderr)
        if self.args.weights_out:
            from tigris_ir.reference.executor import save_weights

            out = Path(self.args.weights_out)
            try:
                save_weights(imported.weights, out)
            except OSError as e:
                raise UsageError(f"cannot write --weights-out '{out}': {e.strerror}") from None
            imported.module.attributes["nn.weights"] = StringAttr(str(out.resolve()))
        return imported.module

    # -- output --------------------------------------------------------------
    def output_resulting_program(self, prog: ModuleOp) -> str:
        """`-t c -o NAME.c` of a plan also writes the header NAME.h beside it,
        and the weights blob NAME.weights.bin when the weights are in that
        form (`-t 'c{weights=blob}'`, or a large model's by default)."""
        out = self.args.output_file
        if self.args.target.split("{")[0] == "c":
            from xdsl.utils.arg_spec import parse_spec

            from tigris_ir.backend.c.network import CTarget, holds_plan

            try:
                target = CTarget.from_spec(parse_spec(self.args.target))
            except ValueError as e:
                raise UsageError(f"bad target '{self.args.target}': {e}") from None
            if out and out.endswith(".c") and holds_plan(prog):
                blob = Path(out).with_suffix(".weights.bin")
                source = target.source(prog, blob_file=blob.name)
                Path(out).with_suffix(".h").write_text(source.h)
                if source.blob is not None:
                    blob.write_bytes(source.blob)
                return source.c
        return super().output_resulting_program(prog)

    # -- pipeline ------------------------------------------------------------
    def setup_pipeline(self) -> None:
        specs = [s for s in (self.args.passes, *self.flag_passes) if s]
        self.args.passes = normalise_budgets(",".join(specs))
        try:
            super().setup_pipeline()
            if self.args.mcpu is not None:
                from xdsl.utils.arg_spec import parse_pipeline

                mcpu_target(self.args.mcpu)
                given = [set(spec.parameters) for spec in parse_pipeline(self.args.passes)]
                passes = target_options(self.pipeline.passes, given, self.args.mcpu)
                self.pipeline = dataclasses.replace(self.pipeline, passes=passes)
        except UserError:
            raise
        except ValueError as e:
            msg = str(e)
            if msg.startswith("Unrecognized passes"):
                ours = sorted(TIGRIS.all_passes) or ["(none yet)"]
                msg += (
                    "; TiGrIS passes: "
                    + ", ".join(ours)
                    + f"; {len(self.available_passes) - len(TIGRIS.all_passes)} xDSL "
                    "passes are listed by --help"
                )
            raise UsageError(f"bad pass pipeline '{self.args.passes}': {msg}") from None
        except (Exception, ArgSpecParseError) as e:  # the latter is a BaseException
            raise UsageError(f"bad pass pipeline '{self.args.passes}': {e}") from None


def split_pass_flags(argv: Sequence[str], pass_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """Take `--PASS` and `--PASS=opts` out of argv, keeping their order."""
    rest: list[str] = []
    flags: list[str] = []
    names = set(pass_names)
    for a in argv:
        if a.startswith("--"):
            key, eq, val = a[2:].partition("=")
            if key in names:
                flags.append(flag_to_spec(key, val if eq else None))
                continue
        rest.append(a)
    return rest, flags


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    return run_main(PROG, lambda: _main(args))


def _main(argv: list[str]) -> int:
    try:
        rest, flags = split_pass_flags(argv, list(TIGRIS.all_passes))
        if "-h" in rest or "--help" in rest:
            TigrisOptMain(rest, [])  # argparse prints help and exits 0
            return 0
        refuse_repeated(
            rest,
            [
                ("-o", "--output-file"),
                ("-t", "--target"),
                ("-p", "--passes"),
                ("--weights-out",),
                ("--mcpu",),
            ],
        )
        mcpu = _option_value(rest, "--mcpu")
        if mcpu is not None:
            mcpu_target(mcpu)
        input_file = _input_file(rest)
        if input_file is not None and input_file != "-" and not Path(input_file).exists():
            raise UsageError(f"cannot open '{input_file}': no such file")
        for opt in ("-o", "--output-file", "--weights-out"):
            dest = _option_value(rest, opt)
            if dest is not None and not Path(dest).parent.is_dir():
                raise UsageError(
                    f"{opt} '{dest}': the folder '{Path(dest).parent}' does not exist"
                )
        # xdsl-opt's --disable-verify replaces Attribute.__post_init__ for the
        # whole process; put it back after the run (and before it when passes
        # run, which need verified attributes), so that a caller in the same
        # process (a test, a pipeline) keeps attribute verification
        post_init = Attribute.__post_init__
        try:
            driver = TigrisOptMain(rest, flags)
            if driver.args.passes:
                Attribute.__post_init__ = post_init
            driver.run()
        finally:
            Attribute.__post_init__ = post_init
        return 0
    except ArgSpecParseError as e:  # a BaseException: run_main would not see it
        raise UsageError(str(e)) from None


def _option_value(args: Sequence[str], opt: str) -> str | None:
    """The value of `opt VALUE` or `opt=VALUE` (the last one given)."""
    value = None
    for i, a in enumerate(args):
        if a == opt and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(opt + "="):
            value = a[len(opt) + 1 :]
    return value


def _input_file(args: Sequence[str]) -> str | None:
    """The positional input, if any (a cheap pre-check for a clear message)."""
    takes_value = {
        "-o",
        "--output-file",
        "-p",
        "--passes",
        "-t",
        "--target",
        "-f",
        "--frontend",
        "--input-shape",
        "--weights-out",
        "--mcpu",
    }
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in takes_value:
            skip = True
            continue
        if a.startswith("-") and a != "-":
            continue
        return a
    return None


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
