"""What every TiGrIS command line shares: one diagnostic per user error, exit 1.

A user never sees a traceback for bad input: usage errors, import diagnostics,
parse errors, verifier and pass diagnostics, and failures of the file system,
numpy, onnxruntime or the C compiler print one line on stderr, naming the
file, node, option or command and the rule. Any other exception is an internal
error, reported in one line too, with the hint to set TIGRIS_TRACEBACK=1.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


class UserError(Exception):
    """A bad command line or input, printed as `PROG: error: ...`."""


class Diagnostic(Exception):
    """A problem located in a file (or another named thing): `WHERE: error: ...`."""

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: error: {message}")
        self.where = where
        self.message = message


def first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def few_lines(text: str, limit: int = 6) -> str:
    """A message of a few lines (a verifier's list of problems), cut at `limit`."""
    lines = [ln.rstrip() for ln in str(text).strip().splitlines() if ln.strip()]
    if len(lines) > limit:
        lines = [*lines[: limit - 1], f"  ... ({len(lines) - limit + 1} more lines)"]
    return "\n".join(lines)


def parse_error_line(e) -> str:
    """An xDSL ParseError as one line: `FILE:LINE:COL: error: MESSAGE`."""
    try:
        loc = e.span.get_location()
        where = f"{loc.file}:{loc.line}:{loc.col}"
    except Exception:  # a span without a source: the message alone
        where = "<input>"
    message = " ".join(str(e.msg).split())
    if message.startswith("Unexpected character:"):  # name it: it may not print
        ch = e.span.text[:1] if getattr(e, "span", None) is not None else ""
        if ch:
            message = f"unexpected character {ch!r} (U+{ord(ch):04X})"
    return f"{where}: error: {message}"


def os_error_text(e: OSError) -> str:
    name = e.filename if e.filename is not None else ""
    reason = e.strerror or type(e).__name__
    return f"'{name}': {reason}" if name else reason


def read_text(path: Path) -> str:
    """A text input (IR): OSError and non-UTF-8 bytes become one Diagnostic."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise Diagnostic(str(path), f"cannot read the file: {e.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Diagnostic(
            str(path),
            f"not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start}; "
            "IR files are UTF-8 MLIR",
        ) from None


def unterminated_string(text: str) -> tuple[int, int] | None:
    """(line, column) of a string literal that a line ends before closing, if any.

    xDSL 0.74 lexes strings with a regex that backtracks exponentially in the
    length of an unterminated literal (30 characters take minutes), so IR is
    scanned for one first, in one pass: outside `//` comments a `"` opens a
    literal, a backslash escapes the next character, and a newline, vertical
    tab or form feed before the closing `"` ends it unterminated (MLIR strings
    do not span lines).
    """
    i, n = 0, len(text)
    line, line_start = 1, 0
    while i < n:
        c = text[i]
        if c == "\n":
            line, line_start = line + 1, i + 1
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c == '"':
            start = i
            i += 1
            while i < n and text[i] not in '"\n\v\f':
                i += 2 if text[i] == "\\" else 1
            if i >= n or text[i] != '"':
                return line, start - line_start + 1
        i += 1
    return None


def parse_module(ctx, text: str, origin: str, verify: bool = True):
    """Parse (and verify) IR text; parse, recursion and verifier failures
    become one line naming `origin`."""
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    bad = unterminated_string(text)
    if bad is not None:
        raise Diagnostic(
            f"{origin}:{bad[0]}:{bad[1]}", "the line ends before the string literal is closed"
        )
    try:
        parser = _locating_parser(Parser)(ctx, text, origin)  # lexes the first token
    except ParseError as e:
        raise Diagnostic(*parse_error_line(e).split(": error: ", 1)) from None
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise Diagnostic(*parse_error_line(e).split(": error: ", 1)) from None
    except DiagnosticException as e:  # an attribute the parser builds does not verify
        raise Diagnostic(parser.here() or origin, first_line(str(e))) from None
    except (OverflowError, ValueError) as e:  # Python's int() of a literal of 5000 digits
        text = first_line(str(e))
        m = re.search(r"value has (\d+) digits", text)
        if m is not None:
            text = f"an integer literal of {m.group(1)} digits (at most 4300 are read)"
        raise Diagnostic(parser.here() or origin, f"this IR cannot be read: {text}") from None
    except NotImplementedError as e:  # xDSL cannot hold it (dense data of an i65 type, ...)
        raise Diagnostic(
            parser.here() or origin, f"this IR cannot be read: {first_line(str(e))}"
        ) from None
    except RecursionError:
        raise Diagnostic(
            origin,
            "the IR nests too deeply to parse (deeper than the recursion limit of "
            f"{sys.getrecursionlimit()})",
        ) from None
    if verify:
        try:
            module.verify()
        except (DiagnosticException, ValueError) as e:
            message = first_line(str(e))
            where = origin
            try:
                bad = failing_op(module)
            except RecursionError:
                bad = None
            if bad is not None:
                message = first_line(str(bad[1])) or message
                where = parser.where(bad[0]) or origin
            raise Diagnostic(where, f"the IR does not verify: {message}") from None
        except RecursionError:
            raise Diagnostic(origin, "the IR nests too deeply to verify") from None
    return module


def _locating_parser(base):
    """xDSL's parser that remembers where the text of each op begins, so that
    an op that does not verify is named by its place (`FILE:LINE:COL`)."""

    class LocatingParser(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.starts: dict[int, object] = {}

        def parse_operation(self):
            span = self._current_token.span
            op = super().parse_operation()
            self.starts[id(op)] = span
            return op

        def where(self, op) -> str | None:
            """`FILE:LINE:COL` of the op's text, if it was parsed here."""
            return self._place(self.starts.get(id(op)))

        def here(self) -> str | None:
            """`FILE:LINE:COL` of the token the parser stopped at."""
            return self._place(self._current_token.span)

        @staticmethod
        def _place(span) -> str | None:
            if span is None:
                return None
            try:
                loc = span.get_location()  # type: ignore[attr-defined]
            except Exception:  # a span without a source
                return None
            return f"{loc.file}:{loc.line}:{loc.col}"

    return LocatingParser


def failing_op(op):
    """The op whose own verification fails first, the way xDSL's verifier
    goes (the ops of its regions before the op itself), and its error; None
    if each op verifies on its own (a region's or block's rule failed)."""
    from xdsl.utils.exceptions import DiagnosticException

    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                found = failing_op(inner)
                if found is not None:
                    return found
    try:
        op.verify(verify_nested_ops=False)
    except (DiagnosticException, ValueError) as e:
        return op, e
    return None


class Once(argparse.Action):
    """An option that may be given once (or repeated with the same value): a
    second, different value is a usage error, not silently the one that counts."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = namespace.__dict__.setdefault("_given_once", {})
        if self.dest in seen and seen[self.dest] != values:
            parser.error(
                f"{option_string} is given twice, as {seen[self.dest]!r} and {values!r}; "
                "give it once"
            )
        seen[self.dest] = values
        setattr(namespace, self.dest, values)


def refuse_repeated(argv: Sequence[str], options: Sequence[tuple[str, ...]]) -> None:
    """The same check on a raw argv: each group of spellings (`-o`,
    `--output-file`) may take one value only."""
    for spellings in options:
        values: list[str] = []
        for i, a in enumerate(argv):
            for o in spellings:
                if a == o and i + 1 < len(argv):
                    values.append(argv[i + 1])
                elif o.startswith("--") and a.startswith(o + "="):
                    values.append(a[len(o) + 1 :])
        if len(set(values)) > 1:
            raise UserError(
                f"{'/'.join(spellings)} is given twice, as {values[0]!r} and {values[1]!r}; "
                "give it once"
            )


def one_line_usage(parser) -> None:
    """argparse's usage errors as one line (`PROG: error: ... (see --help)`),
    instead of the usage text and then the error."""

    def error(message: str):
        print(f"{parser.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)

    parser.error = error


def run_main(prog: str, body: Callable[[], int]) -> int:
    """Run a command's body and turn every failure into one line and exit 1."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from tigris_ir.frontend.diagnostic import ImportDiagnostic

    def say(line: str) -> int:
        print(line.rstrip(), file=sys.stderr)
        return 1

    try:
        return body()
    except SystemExit as e:  # argparse: usage errors exit 2, --help/--version 0
        code = e.code if isinstance(e.code, int) else 1
        return 0 if code == 0 else 1
    except UserError as e:
        return say(f"{prog}: error: {few_lines(str(e))}")
    except (Diagnostic, ImportDiagnostic) as e:
        return say(str(e))
    except ParseError as e:
        return say(parse_error_line(e))
    except DiagnosticException as e:  # notes hold the whole module: not printed
        return say(f"{prog}: error: {few_lines(str(e))}")
    except OSError as e:
        return say(f"{prog}: error: {os_error_text(e)}")
    except UnicodeDecodeError as e:
        return say(f"{prog}: error: an input is not UTF-8 text ({e.reason} at offset {e.start})")
    except RecursionError:
        return say(f"{prog}: error: the input nests too deeply (recursion limit exceeded)")
    except MemoryError:
        return say(f"{prog}: error: out of memory")
    except KeyboardInterrupt:
        return say(f"{prog}: interrupted")
    except Exception as e:
        # the reference executor's errors are the user's; a command that never
        # loaded it (most do not: it takes 0.15 s) cannot have raised one
        ref = sys.modules.get("tigris_ir.reference.executor")
        if ref is not None and isinstance(e, ref.ReferenceError_):
            return say(f"{prog}: error: {few_lines(str(e))}")
        if os.environ.get("TIGRIS_TRACEBACK"):
            raise
        return say(
            f"{prog}: internal error: {type(e).__name__}: {first_line(str(e))} "
            "(set TIGRIS_TRACEBACK=1 for a traceback)"
        )


def check_budget(budget: int, option: str) -> int:
    """A parsed budget within what a target can address (ValueError names it)."""
    from tigris_ir.frontend.diagnostic import MAX_TENSOR_BYTES, format_size

    if budget > MAX_TENSOR_BYTES:
        raise ValueError(
            f"bad budget '{option}': {budget} bytes is more than any target addresses "
            f"({format_size(MAX_TENSOR_BYTES)}, a 32-bit address space)"
        )
    return budget


_STATIC_DIALECTS = ("nn.", "tile.")
"""Dialects whose ops need static shapes (the loop level views bands dynamically)."""


def check_ir_sizes(module, origin: str, allow_empty: bool = False) -> None:
    """Every static tensor and memref of parsed IR fits a target's address space
    and (unless `allow_empty`: IR of other dialects that tigris-opt only
    transforms) has dimensions >= 1, before anything is allocated or planned."""
    from xdsl.dialects.builtin import MemRefType, TensorType

    from tigris_ir.dialects import nn
    from tigris_ir.frontend.diagnostic import ModelInvalid, check_tensor_size

    for op in module.walk():
        values = [*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)]
        for v in values:
            t = v.type
            if not isinstance(t, TensorType | MemRefType):
                continue
            shape = list(t.get_shape())
            if any(d < 0 for d in shape):
                users = [op.name, *(u.operation.name for u in v.uses)]
                ours = next((n for n in users if n.startswith(_STATIC_DIALECTS)), None)
                if ours is not None:
                    raise Diagnostic(
                        f"{origin}: '{ours}'",
                        f"{t} has a dynamic dimension; nn and tile ops need static "
                        "shapes (import with --input-shape NAME:DxDxD)",
                    )
                continue  # another dialect's value: sized where it is allocated
            if allow_empty:
                shape = [max(d, 1) for d in shape]
            try:
                size = nn.element_dtype(t.element_type).itemsize
            except Exception:  # an element type the nn dialect does not size
                size = 1
            try:
                check_tensor_size(f"{origin}: '{op.name}'", f"a value of type {t}", shape, size)
            except ModelInvalid as e:
                raise Diagnostic(e.where, e.message) from None


MCPU_HELP = (
    "the CPU every target-dependent pass (gebp-tile's default target=) and the C "
    "(its flags, build and run) are for: host (this machine), an x86 or NEON "
    "preset, or cortex-m4, cortex-m7, cortex-m55 (built with arm-none-eabi-gcc, run "
    "under qemu-system-arm; their int8 plans requantize integer-only, the requant pass's "
    "fixed mode, unless the pipeline or --requant chooses); default host"
)


def mcpu_target(name: str):
    """The target `--mcpu NAME` names; an unknown name lists the known ones."""
    from tigris_ir.rtile.targets import get_target, known_targets

    try:
        return get_target(name)
    except ValueError:
        raise UserError(
            f"--mcpu '{name}': unknown CPU; known: {', '.join(known_targets())}"
        ) from None


def target_options(passes: Sequence, given: Sequence[set[str]], mcpu: str) -> tuple:
    """The passes with `--mcpu`'s target in every target-dependent pass (one with
    a `target` option) whose spec does not set `target=` itself; `given` holds,
    per pass, the option names its spec gave."""
    from dataclasses import fields, replace

    out = []
    for p, names in zip(passes, given, strict=True):
        if "target" in {f.name for f in fields(p)} and "target" not in names:
            p = replace(p, target=mcpu)
        out.append(p)
    return tuple(out)
