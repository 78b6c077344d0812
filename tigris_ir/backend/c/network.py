"""A whole tiled network as one C99 translation unit (the `c` target of a plan).

`print_network` prints a loop-level plan (`lower-to-loops`, `plan-arena`) as
C that does exactly what the interpreter (`tigris_ir.interp.loop_ir`) does, with no allocation:

* the fast arena is ONE static, aligned byte buffer of exactly the plan's
  `loop.arena` bytes and the slow arena a second one of `loop.slow_arena`
  bytes (or the caller's, under `-DTIGRIS_SLOW_ARENA_EXTERN`); every
  `memref.alloc` is a pointer at its `loop.offset`, a dealloc prints nothing;
* weights are `static const` arrays (flash; `TIGRIS_FLASH` names their
  section), printed as their bytes (`c_bytes_array`: at most about three
  characters of source per byte), and the per-tile row tables `static const`
  integer arrays indexed by the tile loop; `TIGRIS_FAST_SECTION` and
  `TIGRIS_SLOW_SECTION` place the arenas (DTCM or SRAM, external RAM);
* or, in the blob form (`weights_form="blob"`, or "auto" from `BLOB_MIN`
  bytes of weights on), the weights that would be printed as bytes are one
  binary file written beside the unit (`CSource.blob`, named
  `CSource.blob_file`), which a top-level `__asm__` block includes with
  `.incbin` into `TIGRIS_WEIGHTS_SECTION` (ELF assemblers: gcc, clang,
  arm-none-eabi-gcc); each weight is a constant pointer into it, at a
  multiple of `ARENA_ALIGN` bytes (`weights_blob`). The C of VGG19 (548 MiB
  of weights) is then a few hundred kilobytes, printed and compiled in seconds;
* `scf.for` is a C `for`, `arith` a C expression, `memref.subview` pointer
  arithmetic with the memrefs' static strides and `memref.copy` a loop of
  `memmove`s over contiguous runs (a line buffer's shift copies within one
  buffer, in the direction that never overwrites rows not yet moved);
* each `loop.band` / `loop.accumulate` / `loop.finish` is the C its op's
  emitter prints (`c_band`), skipped when its output band is empty.

Inputs and outputs cross the entry point in the model's boundary layout
(NCHW where `nn.input_layouts` says so); the C transposes them into and out
of the arenas. Macros: `TIGRIS_BOUNDS_CHECK` turns `TIGRIS_BOUND(cond)` into
a check that aborts, and checks every band operand and copy to lie inside its
arena; `TIGRIS_STATS` counts slow reads and writes, the live peaks and the
tiles (`<name>_stats`); `TIGRIS_PORTABLE` makes emitters print plain C.

A plan that does not verify (the checks of `plan-arena`), an arena above the
budget or an op without a C lowering is a `NetworkError` naming it; no C is
printed then.
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects import memref as mr
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from tigris_ir.backend.c import band as c_band
from tigris_ir.backend.c.band import CLoweringError, CTensor, Kind
from tigris_ir.dialects import loop, nn
from tigris_ir.loops.arena import Lifetime, all_lifetimes, arg_names, body_scopes, lifetimes
from tigris_ir.loops.verify import budget_for, verify_arena
from tigris_ir.plan.ir import main_func
from tigris_ir.reference.executor import ReferenceError_, load_weights, module_layouts

ARENA_ALIGN = 64
"""The alignment of the arenas and constant arrays (offsets are multiples of
`memory.ALIGN`, which divides it)."""


class NetworkError(CLoweringError, DiagnosticException):
    """A plan that cannot be printed as C: the message names the op or the check."""


@dataclass(frozen=True)
class CPort:
    """An input or output of the entry point, in the model's boundary layout."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    layout: str
    streamed: bool = False
    """A streamed port: the unit asks `<name>_input_rows(i, ...)` for bands of
    input #i's rows, or hands output #i's to `<name>_output_rows(i, ...)`,
    channels-last (`shape` is then (N, H, W, C)); its pointer is not used."""

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class CSource:
    """A printed network: the translation unit, its header and its interface."""

    name: str
    c: str
    h: str
    inputs: tuple[CPort, ...]
    outputs: tuple[CPort, ...]
    fast_arena: int
    slow_arena: int
    blob: bytes | None = None
    """The weights of the blob form, to be written as `blob_file` beside the
    unit (None: every weight is in the C)."""
    blob_file: str = ""
    """The blob's file name, as the unit's `.incbin` names it (no folder: the
    assembler looks it up in its working directory and its -I folders)."""


# ---------------------------------------------------------------------------
# C text helpers

_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for
    goto if inline int long register restrict return short signed sizeof static struct
    switch typedef union unsigned void volatile while _Bool _Complex _Imaginary main
    memmove memcpy memset abort fprintf stderr assert size_t ptrdiff_t uintptr_t
    int8_t uint8_t int16_t int32_t int64_t NULL tigris_bound_fail tigris_requant
    tigris_quant exp expf log logf sqrt sqrtf fabs fabsf floor floorf ceil ceilf tanh tanhf
    erf erff pow powf nearbyint nearbyintf round roundf fmax fmaxf fmin fminf abs printf
    INFINITY NAN""".split()
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def c_float(x: float) -> str:
    """A float32 literal of exactly `x` (a float32 value)."""
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    text = f"{x:.9g}"  # 9 significant digits identify every float32
    if not any(ch in text for ch in ".en"):
        text += ".0"
    return text + "f"


def c_double(x: float) -> str:
    """A double literal of exactly `x` (the shortest repr that round-trips)."""
    if math.isnan(x) or math.isinf(x):
        return c_float(x)
    text = repr(float(x))
    return text if any(ch in text for ch in ".en") else text + ".0"


def c_int(x: int, ctype: str) -> str:
    """An integer literal of `ctype` (the most negative value written as a difference)."""
    if ctype == "int32_t" and x == -(2**31):
        return "(-2147483647 - 1)"
    if ctype == "int64_t" and x == -(2**63):
        return "(-9223372036854775807LL - 1)"
    if ctype == "int64_t" and not -(2**31) <= x < 2**31:
        return f"{x}LL"
    return str(x)


BYTES_MIN = 256
"""Constant arrays of at least this many bytes are printed as their bytes
(`c_bytes_array`); smaller ones as lists of literals, readable in the C."""

_BYTE_ESCAPES = {
    b: chr(b) if 0x20 <= b < 0x7F and chr(b) not in '\\"?01234567' else "\\" + format(b, "o")
    for b in range(256)
}
"""Each byte's spelling in a C string literal: printable characters as
themselves, except the octal digits (so an escape is never followed by one and
every escape can be its shortest), `?` (trigraphs), the quote and the backslash,
which are octal escapes like every other byte."""

_BYTES_LINE = 240
"""Bytes per line of a printed byte string."""


def c_string_lines(data: bytes) -> list[str]:
    """`data` as adjacent C string literals, one per line of `_BYTES_LINE`
    bytes; their concatenation holds exactly those bytes."""
    return [
        '"' + data[i : i + _BYTES_LINE].decode("latin-1").translate(_BYTE_ESCAPES) + '"'
        for i in range(0, len(data), _BYTES_LINE)
    ] or ['""']


def c_words_lines(data: bytes) -> list[str]:
    """`data` as lines of 32-bit little-endian words in hexadecimal (zero-padded
    to a whole word)."""
    pad = -len(data) % 4
    words = np.frombuffer(data + bytes(pad), dtype="<u4").tolist()
    return [",".join(f"{w:#x}" for w in words[i : i + 24]) for i in range(0, len(words), 24)]


def c_bytes_array(name: str, ctype: str, flat: np.ndarray) -> str:
    """A constant array as its bytes: the compact form of a weight.

    The bytes are printed as a string literal (one token per line for the
    compiler, which parses it many times faster than a list of numbers), or as
    32-bit words where the string would take more than three characters per
    byte (int8 weights of small magnitude: most of their bytes are escapes).
    Either way the source holds at most about three characters per byte, the
    object is a union of the bytes with an array of `ctype`, and `name` is a
    constant pointer to that array (the compiler folds it to the object's
    address). The bytes are the array's in little-endian order: the prelude
    refuses a big-endian target.
    """
    data = np.ascontiguousarray(flat).astype(flat.dtype.newbyteorder("<")).tobytes()
    n, nbytes = int(flat.size), len(data)
    text = c_string_lines(data)
    if sum(len(t) for t in text) <= 3 * nbytes:
        member, init = f"unsigned char b[{nbytes + 1}]", text  # room for the literal's NUL
    else:
        words = ",\n    ".join(c_words_lines(data))
        member, init = f"uint32_t w[{(nbytes + 3) // 4}]", ["{" + words + "}"]
    body = "\n    ".join(init)
    return (
        f"static const union {{ {member}; {ctype} v[{n}]; }} {name}_bytes TIGRIS_FLASH "
        f"TIGRIS_ALIGNED = {{\n    {body}\n}};\n"
        f"static const {ctype} *const {name} = {name}_bytes.v;\n"
    )


WEIGHTS_FORMS = ("c", "blob", "auto")
"""How a unit holds its weights (`print_network`'s `weights_form`): as C text,
in a binary blob beside it, or in a blob from `BLOB_MIN` bytes of weights on."""

BLOB_MIN = 64 << 20
"""The "auto" form's threshold, in bytes of the weights that would be printed
as bytes: as C text, 64 MiB of float32 weights is 197 MB of source, which gcc 12
-O3 compiles in about 7.5 s and 0.9 GB of memory (AMD Zen 4), growing with the
size (VGG19's 513 MB: 1.44 GB of C, 14 GiB of memory exhausted after 332 s);
the blob builds in seconds at any size."""


def weights_blob(sizes: Sequence[int], align: int = ARENA_ALIGN) -> tuple[list[int], int]:
    """The offsets of weights of `sizes` bytes laid one after another in a
    blob, each at a multiple of `align`, and the blob's size: each weight is
    padded to a multiple of `align`."""
    offsets, at = [], 0
    for n in sizes:
        offsets.append(at)
        at += -(-n // align) * align
    return offsets, at


def _place_weights(
    consts: Sequence[_Const], form: str, blob_min: int, symbol: str
) -> bytes | None:
    """Print the weights `_Printer.const` left for later: as their bytes
    (`c_bytes_array`), or as constant pointers into `symbol`, the blob, whose
    bytes are returned (little-endian, laid out by `weights_blob`)."""
    late = [c for c in consts if c.data is not None]
    total = sum(c.data.nbytes for c in late if c.data is not None)
    if not late or form == "c" or (form == "auto" and total < blob_min):
        for c in late:
            assert c.data is not None
            c.text = c_bytes_array(c.name, c.ctype, c.data)
        return None
    offsets, size = weights_blob([c.data.nbytes for c in late if c.data is not None])
    blob = np.zeros(size, np.uint8)
    for c, off in zip(late, offsets):
        assert c.data is not None
        data = np.ascontiguousarray(c.data.astype(c.data.dtype.newbyteorder("<"), copy=False))
        blob[off : off + data.nbytes] = data.reshape(-1).view(np.uint8)
        t = c.ctype
        c.text = f"static const {t} *const {c.name} = (const {t} *)({symbol} + {off});\n"
    return blob.tobytes()


_BLOB_ASM = """\
/* ---- weights: {size} bytes in the binary file {file} ----
 * The file is not C: the assembler includes it (.incbin below) when it
 * assembles this unit, and looks it up in its working directory, then in
 * the folders given as -Wa,-I<dir>; or define TIGRIS_WEIGHTS_FILE as its
 * path in quotes: -DTIGRIS_WEIGHTS_FILE='"/path/to/{file}"'. So build with
 *     cc -std=c99 -ffp-contract=off ... -Wa,-I<the folder of {file}> ...
 * or from that folder. TIGRIS_WEIGHTS_SECTION names its section (default
 * .rodata; e.g. -DTIGRIS_WEIGHTS_SECTION=.rodata.weights for a linker script
 * that places it). Each weight lies at a multiple of {align} bytes of it, in
 * little-endian order. ELF targets only (gcc, clang, arm-none-eabi-gcc). */
#ifndef __ELF__
#error "the weights blob is placed with ELF assembler directives: print the weights as C"
#endif
#ifndef TIGRIS_WEIGHTS_FILE
#define TIGRIS_WEIGHTS_FILE "{file}"
#endif
#ifndef TIGRIS_WEIGHTS_SECTION
#define TIGRIS_WEIGHTS_SECTION .rodata
#endif
#define TIGRIS_STR_(x) #x
#define TIGRIS_STR(x) TIGRIS_STR_(x)
extern const unsigned char {symbol}[{size}] __asm__("{symbol}") TIGRIS_ALIGNED;
__asm__(".pushsection " TIGRIS_STR(TIGRIS_WEIGHTS_SECTION) "\\n"
        ".balign {align}\\n"
        ".globl {symbol}\\n"
        ".type {symbol}, %object\\n"
        "{symbol}:\\n"
        ".incbin " TIGRIS_STR(TIGRIS_WEIGHTS_FILE) "\\n"
        ".size {symbol}, . - {symbol}\\n"
        ".popsection\\n");
"""


def _is_int(e: str) -> bool:
    return re.fullmatch(r"-?\d+", e) is not None


def _atom(e: str) -> str:
    """`e` safe to use as an operand of another expression."""
    if _IDENT.fullmatch(e) or re.fullmatch(r"\d+", e):
        return e
    if e.startswith("(") and e.endswith(")") and _balanced(e[1:-1]):
        return e
    return f"({e})"


def _balanced(e: str) -> bool:
    depth = 0
    for ch in e:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def c_sub(a: str, b: str) -> str:
    if _is_int(a) and _is_int(b):
        return str(int(a) - int(b))
    if b == "0":
        return a
    return f"({a} - {_atom(b)})"


def c_add(a: str, b: str) -> str:
    if _is_int(a) and _is_int(b):
        return str(int(a) + int(b))
    if a == "0":
        return b
    if b == "0":
        return a
    return f"({a} + {b})"


def c_mul(a: str, b: str) -> str:
    if _is_int(a) and _is_int(b):
        return str(int(a) * int(b))
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    return f"{_atom(a)} * {_atom(b)}"


def c_linear(terms: Sequence[tuple[str, int]]) -> str:
    """sum(index * stride) as one folded C expression."""
    const = 0
    parts: list[str] = []
    for e, s in terms:
        if _is_int(e):
            const += int(e) * s
        elif s:
            parts.append(c_mul(e, str(s)))
    if const or not parts:
        parts.append(str(const))
    return " + ".join(parts)


def _sanitize(hint: str) -> str:
    h = re.sub(r"[^A-Za-z0-9_]", "_", hint).strip("_") or "v"
    if h[0].isdigit():
        h = "v" + h
    return h


# ---------------------------------------------------------------------------
# values of the loop IR, as C


@dataclass(frozen=True)
class _Mem:
    """A memref as C: a pointer expression, sizes (C expressions), strides."""

    ptr: str
    ctype: str
    sizes: tuple[str, ...]
    strides: tuple[int, ...]
    space: str
    """ "fast", "slow", or "" (a constant array in flash)."""
    root: str
    """The buffer it views (copies within one buffer mind their direction)."""
    value: np.ndarray | None = None

    @property
    def rank(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class _Index:
    expr: str


@dataclass(frozen=True)
class _Float:
    expr: str


_Val = _Mem | _Index | _Float


@dataclass
class _Decl:
    """A declaration the printer drops when nothing else names it."""

    name: str
    text: str


@dataclass
class _Const:
    name: str
    text: str
    data: np.ndarray | None = None
    """A weight of at least `BYTES_MIN` bytes (flat), printed once the unit's
    weights are known (`_place_weights`): as its bytes or in the blob."""
    ctype: str = ""


def _mem_type(t: object, where: Operation | str) -> MemRefType:
    if not isinstance(t, MemRefType):
        raise NetworkError(f"{_what(where)}: expected a memref, got {t}")
    return t


def _what(where: Operation | str) -> str:
    if isinstance(where, str):
        return where
    tensor = where.attributes.get(loop.TENSOR_ATTR)
    unit = where.attributes.get(loop.UNIT_ATTR)
    extra = ""
    if isinstance(tensor, StringAttr):
        extra = f" ('{tensor.data}')"
    elif isinstance(unit, StringAttr):
        extra = f" ({unit.data})"
    return f"'{where.name}'{extra}"


def _elem_dtype(t: MemRefType) -> np.dtype:
    if isinstance(t.element_type, IndexType):
        return np.dtype(np.int64)
    return loop.element_dtype(t.element_type)


def _static_strides(t: MemRefType, where: Operation | str) -> tuple[int, ...]:
    strides = t.get_strides()
    if strides is None or any(s is None or s == DYNAMIC_INDEX for s in strides):
        raise NetworkError(f"{_what(where)}: memref {t} has no static strides")
    return tuple(int(s) for s in strides)  # type: ignore[arg-type]


def _table_ctype(values: np.ndarray) -> str:
    lo, hi = (int(values.min()), int(values.max())) if values.size else (0, 0)
    for ct, bits in (("int16_t", 16), ("int32_t", 32)):
        if -(2 ** (bits - 1)) <= lo and hi < 2 ** (bits - 1):
            return ct
    return "int64_t"


# ---------------------------------------------------------------------------
# the printer


class _Printer:
    """Prints one planned function; implements `c_band.CUnit` for the emitters."""

    def __init__(self, module: ModuleOp, weights: Mapping[str, np.ndarray], name: str):

        self.module = module
        self.fn = main_func(module)
        self.weights = weights
        self.name = name
        self.upper = name.upper()
        self.used: set[str] = set(_KEYWORDS)
        self.used.update(
            f"{name}_{s}"
            for s in ("run", "run_n", "stats", "stats_t", "fast_arena", "slow_arena", "weights")
        )
        self.consts: list[_Const] = []
        self.const_keys: dict[tuple[str, tuple[int, ...], bytes], str] = {}
        self.helpers: dict[str, str] = {}
        self.lines: list[str | _Decl] = []
        self.prof: dict[str, int] = {}
        """Profile labels (`TIGRIS_PROFILE`): one per op kind, copy and boundary."""
        self.depth = 1
        self.vals: dict[SSAValue, _Val] = {}
        self.globals = {op.sym_name.data: op for op in module.ops if isinstance(op, mr.GlobalOp)}
        self.global_vals: dict[str, _Mem] = {}
        fast = self.fn.attributes.get(loop.ARENA_ATTR)
        slow = self.fn.attributes.get(loop.SLOW_ARENA_ATTR)
        if not isinstance(fast, IntegerAttr) or not isinstance(slow, IntegerAttr):
            raise NetworkError("the loop IR has no arena: run plan-arena first")
        self.fast_bytes = int(fast.value.data)
        self.windows = False
        """Some load asks the input callback for a window of columns
        (`<name>_input_window`, a streamed input that may be read again)."""
        self.scratch_bytes = 0
        self.slow_bytes = int(slow.value.data)
        self.fast_arena = f"{name}_fast_arena"
        self.slow_arena = f"{name}_slow_arena"
        self.lives = {id(lv.owner): lv for lv in all_lifetimes(self.fn)}
        self.workspaces = {
            id(sc.op): sc.workspace
            for sc in body_scopes(self.fn.body.block, lifetimes(self.fn))
            if sc.workspace is not None
        }
        """An If / Loop's workspace: its bodies' buffers lie in it (stats count them instead)."""
        self.arg_ends: dict[int, list[int]] = {}
        for lv in self.lives.values():
            if not isinstance(lv.owner, Operation):
                self.arg_ends.setdefault(lv.last, []).append(int(lv.key.removeprefix("arg")))

    # ---- CUnit -------------------------------------------------------------

    def fresh(self, hint: str) -> str:
        base = _sanitize(hint)
        n, name = 0, base
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        return name

    def scratch(self, nbytes: int) -> None:
        self.scratch_bytes = max(self.scratch_bytes, nbytes)

    def helper(self, key: str, code: str) -> None:
        if key not in self.helpers:
            self.helpers[key] = code.rstrip() + "\n"
            self.used.update(_IDENT.findall(code))

    def const(self, hint: str, value: np.ndarray) -> str:
        arr = np.ascontiguousarray(value)
        ctype = c_band.c_type(arr.dtype)
        key = (ctype, tuple(arr.shape), arr.tobytes())
        got = self.const_keys.get(key)
        if got is not None:
            return got
        name = self.fresh(hint)
        self.const_keys[key] = name
        flat = arr.reshape(-1)
        if flat.nbytes >= BYTES_MIN:  # placed after pruning (`_place_weights`)
            self.consts.append(_Const(name, "", flat, ctype))
        else:
            self.consts.append(_Const(name, self._array_text(name, ctype, flat)))
        return name

    # ---- text --------------------------------------------------------------

    def emit(self, text: str) -> None:
        pad = "    " * self.depth
        for ln in text.rstrip("\n").split("\n"):
            self.lines.append(pad + ln.rstrip() if ln.strip() else "")

    def declare(self, name: str, text: str) -> None:
        self.lines.append(_Decl(name, "    " * self.depth + text))

    def open(self, head: str) -> None:
        self.emit(f"{head} {{" if head else "{")
        self.depth += 1

    def close(self, tail: str = "") -> None:
        self.depth -= 1
        self.emit("}" + tail)

    def prof_label(self, label: str) -> int:
        """The profile counter of `label` (a `TIGRIS_PROFILE` build times
        every band, copy and boundary transpose into its label's counter)."""
        return self.prof.setdefault(label, len(self.prof))

    def _array_text(self, name: str, ctype: str, flat: np.ndarray, aligned: bool = True) -> str:
        """A constant array as a list of literals (the weights of at least
        `BYTES_MIN` bytes are printed by `_place_weights`)."""
        if ctype == "float":
            items = [c_float(x) for x in flat.astype(np.float64).tolist()]
        elif ctype == "double":
            items = [c_double(x) for x in flat.astype(np.float64).tolist()]
        else:
            items = [c_int(int(x), ctype) for x in flat.tolist()]
        if not items:
            items = ["0"]
        rows = [", ".join(items[i : i + 12]) for i in range(0, len(items), 12)]
        body = ",\n    ".join(rows)
        attrs = "TIGRIS_FLASH TIGRIS_ALIGNED" if aligned else "TIGRIS_FLASH"
        return f"static const {ctype} {name}[{len(items)}] {attrs} = {{\n    {body}\n}};\n"

    # ---- values ------------------------------------------------------------

    def idx(self, v: SSAValue) -> str:
        x = self.vals.get(v)
        if not isinstance(x, _Index):
            raise NetworkError(f"an index value defined by {_what(_owner(v))} is not known here")
        return x.expr

    def mem(self, v: SSAValue) -> _Mem:
        x = self.vals.get(v)
        if not isinstance(x, _Mem):
            raise NetworkError(f"a memref defined by {_what(_owner(v))} is not known here")
        return x

    def _hint(self, v: SSAValue, default: str) -> str:
        return v.name_hint or default

    # ---- the function ------------------------------------------------------

    def print_body(self) -> None:

        block = self.fn.body.block
        self.arg_mems: list[_Mem] = []
        self.unread: set[int] = set()
        for i, a in enumerate(block.args):
            t = _mem_type(a.type, f"argument #{i}")
            space = loop.space_of(t)
            lv = self.lives.get(id(a))
            if space == loop.STREAM.data:
                # no storage: subviews of it are element offsets that a copy
                # turns into a call of the row callback for input #i
                if len(t.get_shape()) < 2 and a.uses:
                    raise NetworkError(
                        f"input #{i} '{arg_names(self.fn)[i]}' is of rank {len(t.get_shape())}: "
                        "a streamed input is read in bands of rows (axis 1), so it needs rank 2 "
                        "or more (plan it without --stream-input)"
                    )
                self._no_storage(a, t, i, space, f"stream{i}")
                continue
            if space and lv is None and not a.uses:
                # an input nothing reads (a model of its Shape only): no
                # storage and no copy, as the plan holds no bytes of it
                self._no_storage(a, t, i, space, f"unread{i}")
                self.unread.add(i)
                continue
            if not space or lv is None:
                raise NetworkError(f"argument #{i} is in no memory space (run lower-to-loops)")
            off = self._arg_offset(i, loop.OFFSET_ATTR)
            m = self._buffer(a, t, space, off, self._hint(a, f"arg{i}"))
            self.arg_mems.append(m)
            self.emit(f"TIGRIS_STAT_ALLOC({int(space == 'fast')}, {lv.size}, {off + lv.size});")
        self.input_lines_at = len(self.lines)
        ops = list(block.ops)
        for pos, op in enumerate(ops):
            if isinstance(op, func.ReturnOp):
                self.returned = [self.mem(v) for v in op.arguments]
                return
            self.op(op)
            for i in self.arg_ends.get(pos, []):
                lv = self.lives[id(block.args[i])]
                self.emit(f"TIGRIS_STAT_FREE({int(lv.space == 'fast')}, {lv.size});")
        raise NetworkError("the function has no func.return")

    def _no_storage(self, a: SSAValue, t: MemRefType, i: int, space: str, name: str) -> None:
        """Argument #i as a memory of no storage of its own (a stream, or an
        input nothing reads): offsets from 0, printed as `name`."""
        m = _Mem(
            "0",
            c_band.c_type(_elem_dtype(t)),
            tuple(str(d) for d in t.get_shape()),
            _static_strides(t, f"argument #{i}"),
            space,
            name,
        )
        self.vals[a] = m
        self.arg_mems.append(m)

    def _arg_offset(self, i: int, attr: str) -> int:
        from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr

        attrs = self.fn.arg_attrs
        if isinstance(attrs, ArrayAttr) and i < len(attrs.data):
            d = attrs.data[i]
            if isinstance(d, DictionaryAttr):
                a = d.data.get(attr)
                if isinstance(a, IntegerAttr):
                    return int(a.value.data)
        raise NetworkError(f"argument #{i} has no {attr} (run plan-arena)")

    def _buffer(self, v: SSAValue, t: MemRefType, space: str, off: int, hint: str) -> _Mem:
        dt = _elem_dtype(t)
        ctype = c_band.c_type(dt)
        arena = self.fast_arena if space == "fast" else self.slow_arena
        var = self.fresh(hint)
        self.declare(var, f"{ctype} *{var} = ({ctype} *)(void *)({arena} + {off});")
        m = _Mem(
            var,
            ctype,
            tuple(str(d) for d in t.get_shape()),
            _static_strides(t, var),
            space,
            var,
        )
        self.vals[v] = m
        return m

    def block(self, block: Block) -> None:
        for op in block.ops:
            if isinstance(op, scf.YieldOp):
                if op.operands:
                    raise NetworkError("scf.yield with values is not printed (no iter_args)")
                continue
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp):
            v = op.value
            if isinstance(v, IntegerAttr):
                self.vals[op.result] = _Index(str(int(v.value.data)))
            elif isinstance(v, FloatAttr):
                self.vals[op.result] = _Float(c_float(float(np.float32(v.value.data))))
            else:
                raise NetworkError(f"{_what(op)}: {v} is not a scalar")
        elif isinstance(op, arith.SubiOp | arith.AddiOp | arith.MuliOp):
            a, b = self.idx(op.lhs), self.idx(op.rhs)
            fn = {arith.SubiOp: c_sub, arith.AddiOp: c_add, arith.MuliOp: c_mul}[type(op)]
            self.vals[op.result] = _Index(fn(a, b))
        elif isinstance(op, mr.GetGlobalOp):
            self.vals[op.memref] = self.get_global(op)
        elif isinstance(op, mr.LoadOp):
            self.load(op)
        elif isinstance(op, mr.AllocOp):
            self.alloc(op)
        elif isinstance(op, mr.DeallocOp):
            lv = self.lives.get(id(op.memref.owner))
            if lv is not None:
                self.emit(f"TIGRIS_STAT_FREE({int(lv.space == 'fast')}, {lv.size});")
        elif isinstance(op, mr.SubviewOp):
            self.subview(op)
        elif isinstance(op, mr.CopyOp):
            self.copy(op)
        elif isinstance(op, FillOp):
            self.fill(op)
        elif isinstance(op, arith.CmpiOp | arith.AndIOp | arith.IndexCastOp):
            self.vals[op.results[0]] = _Index(self.scalar_expr(op))
        elif isinstance(op, mr.StoreOp):
            self.store(op)
        elif isinstance(op, scf.IfOp):
            self.if_(op)
        elif isinstance(op, scf.WhileOp):
            self.while_(op)
        elif isinstance(op, scf.ForOp):
            self.for_(op)
        elif isinstance(op, loop.BandComputeOp):
            self.band(op)
        else:
            raise NetworkError(f"{_what(op)}: the C printer has no lowering for this op")

    # ---- memory ------------------------------------------------------------

    def alloc(self, op: mr.AllocOp) -> None:

        t = _mem_type(op.memref.type, op)
        space = loop.space_of(t)
        lv = self.lives.get(id(op))
        off = op.attributes.get(loop.OFFSET_ATTR)
        if space == loop.STREAM.data:  # a streamed output: spills call the row callback
            self.vals[op.memref] = _Mem(
                "0",
                c_band.c_type(_elem_dtype(t)),
                tuple(str(d) for d in t.get_shape()),
                _static_strides(t, op),
                space,
                f"stream_out{self._output_index(op)}",
            )
            return
        if not space or lv is None:
            raise NetworkError(f"{_what(op)}: a buffer in no memory space")
        if not isinstance(off, IntegerAttr):
            raise NetworkError(
                f"{_what(op)}: the buffer has no {loop.OFFSET_ATTR} (run plan-arena)"
            )
        o = int(off.value.data)
        self._buffer(op.memref, t, space, o, self._hint(op.memref, "buf"))
        self.emit(f"TIGRIS_STAT_ALLOC({int(space == 'fast')}, {lv.size}, {o + lv.size});")

    def _output_index(self, op: mr.AllocOp) -> int:
        """The model output a streamed buffer is: its position in func.return,
        the index its rows are sent under."""
        ret = self.fn.body.block.last_op
        args = ret.arguments if isinstance(ret, func.ReturnOp) else ()
        at = [k for k, v in enumerate(args) if v is op.memref]
        if len(at) != 1:
            tensor = op.attributes.get(loop.TENSOR_ATTR)
            what = f"'{tensor.data}'" if isinstance(tensor, StringAttr) else _what(op)
            raise NetworkError(
                f"the streamed output {what} is returned {len(at)} times: a streamed output "
                "leaves as exactly one output of the model"
            )
        return at[0]

    def get_global(self, op: mr.GetGlobalOp) -> _Mem:
        sym = op.name_.root_reference.data
        got = self.global_vals.get(sym)
        if got is not None:
            return got
        g = self.globals.get(sym)
        if g is None:
            raise NetworkError(f"{_what(op)}: no memref.global @{sym}")
        t = _mem_type(g.type, op)
        dt = _elem_dtype(t)
        shape = tuple(t.get_shape())
        init = g.initial_value
        if isinstance(init, DenseIntOrFPElementsAttr):
            value = np.array(init.get_values(), dtype=dt).reshape(shape)
            is_table = isinstance(t.element_type, IndexType)
        else:
            ref = g.attributes.get(loop.REF_ATTR)
            key = ref.data if isinstance(ref, StringAttr) else sym
            if key not in self.weights:
                raise NetworkError(f"weight '{key}' (@{sym}) is not in the weight table")
            value = np.asarray(self.weights[key])
            if value.shape == () and shape == (1,):  # a scalar is stored as one element
                value = value.reshape(1)
            if tuple(value.shape) != shape or value.dtype != dt:
                raise NetworkError(
                    f"weight '{key}' is {value.dtype}{list(value.shape)}, the IR says "
                    f"{dt}{list(shape)}"
                )
            is_table = False
        if is_table:
            ctype = _table_ctype(value)
            name = self.fresh(sym)
            text = self._array_text(name, ctype, value.reshape(-1), aligned=False)
            self.consts.append(_Const(name, text))
        else:
            ctype = c_band.c_type(dt)
            name = self.const(sym, value)
        m = _Mem(
            name,
            ctype,
            tuple(str(d) for d in shape),
            _static_strides(t, op),
            "",
            name,
            value,
        )
        self.global_vals[sym] = m
        return m

    def load(self, op: mr.LoadOp) -> None:
        m = self.mem(op.memref)
        if not isinstance(op.res.type, IndexType | IntegerType):
            raise NetworkError(
                f"{_what(op)}: only index tables and integer flags are loaded by the loop level"
            )
        terms = [(self.idx(i), s) for i, s in zip(op.indices, m.strides)]
        elem = f"{m.ptr}[{c_linear(terms)}]"
        if m.value is not None and all(_is_int(e) for e, _ in terms):
            flat = int(c_linear(terms))
            self.vals[op.res] = _Index(str(int(m.value.reshape(-1)[flat])))
            return
        var = self.fresh(self._hint(op.res, "i"))
        self.declare(var, f"const ptrdiff_t {var} = (ptrdiff_t){elem};")
        self.vals[op.res] = _Index(var)

    def subview(self, op: mr.SubviewOp) -> None:
        src = self.mem(op.source)
        rt = _mem_type(op.result.type, op)
        if len(rt.get_shape()) != src.rank:
            raise NetworkError(f"{_what(op)}: rank-reducing subviews are not printed")
        offs = self._mixed(op.static_offsets.get_values(), op.offsets)
        sizes = self._mixed(op.static_sizes.get_values(), op.sizes)
        steps = self._mixed(op.static_strides.get_values(), op.strides)
        if not all(_is_int(s) for s in steps):
            raise NetworkError(f"{_what(op)}: dynamic subview strides are not printed")
        strides = tuple(s * int(k) for s, k in zip(src.strides, steps))
        checks = []
        for ax, (o, n, d) in enumerate(zip(offs, sizes, src.sizes)):
            if _is_int(o) and _is_int(n) and _is_int(d):
                if int(o) < 0 or int(n) < 0 or int(o) + int(n) > int(d):
                    raise NetworkError(
                        f"{_what(op)}: a subview takes [{o}, {int(o) + int(n)}) along axis "
                        f"{ax} of {d}"
                    )
            else:
                conds = [f"{_atom(e)} >= 0" for e in (o, n) if not _is_int(e)]
                conds.append(f"{c_add(o, n)} <= {d}")
                checks.append(" && ".join(conds))
        for c in checks:
            self.emit(f"TIGRIS_BOUND({c});")
        off = c_linear(list(zip(offs, src.strides)))
        var = self.fresh(self._hint(op.result, "v"))
        if src.space == loop.STREAM.data:  # an element offset into the input stream
            self.declare(var, f"long {var} = {c_add(src.ptr, off)};")
            self.vals[op.result] = _Mem(
                var, src.ctype, tuple(sizes), strides, src.space, src.root, None
            )
            return
        const = "const " if src.space == "" else ""
        init = src.ptr if off == "0" else f"{src.ptr} + {off}"
        self.declare(var, f"{const}{src.ctype} *{var} = {init};")
        self.vals[op.result] = _Mem(
            var, src.ctype, tuple(sizes), strides, src.space, src.root, None
        )

    def _mixed(self, static: Sequence[int], dynamic: Sequence[SSAValue]) -> list[str]:
        out: list[str] = []
        dyn = iter(dynamic)
        for v in static:
            out.append(self.idx(next(dyn)) if v == DYNAMIC_INDEX else str(int(v)))
        return out

    def copy(self, op: mr.CopyOp) -> None:
        src, dst = self.mem(op.source), self.mem(op.destination)
        if src.rank != dst.rank or src.ctype != dst.ctype:
            raise NetworkError(
                f"{_what(op)}: copies {src.ctype} rank {src.rank} into {dst.ctype} rank {dst.rank}"
            )
        if not dst.space:
            raise NetworkError(f"{_what(op)}: a copy into a constant array")
        if src.space == loop.STREAM.data:
            self._stream_rows(op, src, dst)
            return
        if dst.space == loop.STREAM.data:
            self._stream_rows(op, dst, src, out=True)
            return
        sizes = []
        for ax, (a, b) in enumerate(zip(src.sizes, dst.sizes)):
            if _is_int(a) and _is_int(b) and a != b:
                raise NetworkError(f"{_what(op)}: copies {a} elements into {b} along axis {ax}")
            sizes.append(b if _is_int(b) else a)
        self.open("")
        for a, b in zip(src.sizes, dst.sizes):
            if not (_is_int(a) and _is_int(b)) and a != b:
                self.emit(f"TIGRIS_BOUND({a} == {b});")
        for m in (src, dst):
            self._inside(m, sizes)
        nbytes = c_mul(self._count(sizes), f"sizeof({src.ctype})")
        where = {"slow": "slow", "fast": "fast", "": "flash"}
        k = self.prof_label(f"copy {where[src.space]} -> {where[dst.space]}")
        self.emit(f"TIGRIS_PROF_BEGIN({k});")
        if src.space == "slow" and dst.space == "fast":
            self.emit(f"TIGRIS_STAT_READ({nbytes});")
        elif src.space == "fast" and dst.space == "slow":
            self.emit(f"TIGRIS_STAT_WRITE({nbytes});")
        if src.root == dst.root and self._copy_loop_axes(src, dst, sizes)[1]:
            self.open(f"if ({dst.ptr} <= {src.ptr})")
            self._copy_loops(src, dst, sizes, backward=False)
            self.close(" else {")
            self.depth += 1
            self._copy_loops(src, dst, sizes, backward=True)
            self.close()
        else:
            self._copy_loops(src, dst, sizes, backward=False)
        self.emit(f"TIGRIS_PROF_END({k});")
        self.close()

    def _stream_rows(self, op: mr.CopyOp, src: _Mem, dst: _Mem, out: bool = False) -> None:
        """A band of whole input rows asked of the callback, written densely
        into the destination (which holds whole rows of every channel); with
        `out`, a band of output rows (`src` the stream) handed to its callback.
        A band of some columns of an input's rows (a tile of a 2D grid or a
        column band, the input read again) asks `<name>_input_window`."""
        kind = "output" if out else "input"
        if src.rank < 2 or not all(_is_int(s) for s in src.sizes[3:]):
            raise NetworkError(f"{_what(op)}: a streamed {kind} is moved in bands of rows")
        if not out and src.rank == 4 and (
            src.sizes[2] != str(src.strides[1] // max(src.strides[2], 1))
            or dst.strides[1] != src.strides[1]
        ):
            self._stream_window(op, src, dst)
            return
        if not all(_is_int(s) for s in src.sizes[2:]):
            raise NetworkError(f"{_what(op)}: a streamed {kind} is moved in bands of rows")
        row = 1
        for k in range(src.rank - 1, 1, -1):
            if dst.strides[k] != row or int(src.sizes[k]) != int(dst.sizes[k]):
                raise NetworkError(
                    f"{_what(op)}: a band of a streamed {kind} must be whole dense rows"
                )
            row *= int(src.sizes[k])
        if src.sizes[0] != "1" or dst.strides[1] != row or src.strides[1] != row:
            raise NetworkError(
                f"{_what(op)}: a band of a streamed {kind} must be whole rows of one image"
            )
        call = "output_rows" if out else "input_rows"
        cast = "const void *" if out else "void *"
        port = src.root.removeprefix("stream_out" if out else "stream")
        self.emit(
            f"if ({self.name}_{call}({port}, (int)({src.ptr} / {row}), (int)({src.sizes[1]}), "
            f"({cast})({dst.ptr})) != 0) return 2;"
        )

    def _stream_window(self, op: mr.CopyOp, src: _Mem, dst: _Mem) -> None:
        """Rows x columns of a streamed (N, H, W, C) input, every channel, into
        a destination whose rows are `dst.strides[1]` elements apart."""
        chans, row = src.strides[2], src.strides[1]
        if (
            src.sizes[0] != "1"
            or src.sizes[3] != str(chans)
            or src.strides[3] != 1
            or dst.strides[3] != 1
            or dst.strides[2] != chans
        ):
            raise NetworkError(
                f"{_what(op)}: a window of a streamed input must hold every channel of its "
                "pixels, densely, of one image"
            )
        self.windows = True
        port = src.root.removeprefix("stream")
        self.emit(
            f"if ({self.name}_input_window({port}, (int)(({src.ptr}) / {row}), "
            f"(int)({src.sizes[1]}), (int)((({src.ptr}) % {row}) / {chans}), "
            f"(int)({src.sizes[2]}), (void *)({dst.ptr}), "
            f"(int)({dst.strides[1]} * sizeof({src.ctype}))) != 0) return 2;"
        )

    def _count(self, sizes: Sequence[str]) -> str:
        out = "1"
        for s in sizes:
            out = c_mul(out, s)
        return out

    @staticmethod
    def _copy_loop_axes(src: _Mem, dst: _Mem, sizes: Sequence[str]) -> tuple[str, list[int]]:
        """The elements of one contiguous run (the inner axes dense in both
        memrefs, merged) and the outer axes to loop over."""
        run = "1"
        inner = len(sizes)
        while inner > 0:
            a = inner - 1
            if not _is_int(run) or src.strides[a] != int(run) or dst.strides[a] != int(run):
                break
            run = c_mul(run, sizes[a])
            inner -= 1
        return run, [a for a in range(inner) if sizes[a] != "1"]

    def _copy_loops(self, src: _Mem, dst: _Mem, sizes: list[str], backward: bool) -> None:
        """Nested loops over the outer axes, a memmove of each contiguous run."""
        run, loops = self._copy_loop_axes(src, dst, sizes)
        ivs: dict[int, str] = {}
        for a in loops:
            iv = self.fresh(f"i{a}")
            ivs[a] = iv
            n = sizes[a]
            if backward:
                self.open(f"for (ptrdiff_t {iv} = {_atom(n)} - 1; {iv} >= 0; --{iv})")
            else:
                self.open(f"for (ptrdiff_t {iv} = 0; {iv} < {n}; ++{iv})")
        s_off = c_linear([(ivs[a], src.strides[a]) for a in loops])
        d_off = c_linear([(ivs[a], dst.strides[a]) for a in loops])
        s_ptr = src.ptr if s_off == "0" else f"{src.ptr} + {s_off}"
        d_ptr = dst.ptr if d_off == "0" else f"{dst.ptr} + {d_off}"
        # runs of two buffers (live at once, so apart) by the inline copy:
        # a tile's runs are often a pixel's channels, too short for a call
        copy = "memmove"
        if loops and src.root != dst.root:
            copy = "tigris_copy_runs"
            self.helper(copy, _COPY_RUNS)
        self.emit(f"{copy}({d_ptr}, {s_ptr}, (size_t)({run}) * sizeof({src.ctype}));")
        for _ in loops:
            self.close()

    def _inside(self, m: _Mem, sizes: Sequence[str] | None = None) -> None:
        """In the bounds-checking build: `m`'s footprint lies inside its arena."""
        if not m.space:
            return
        sizes = list(m.sizes if sizes is None else sizes)
        const, parts = 1, []
        for n, s in zip(sizes, m.strides):
            if _is_int(n):
                const += (int(n) - 1) * s
            else:
                parts.append(c_mul(c_sub(n, "1"), str(s)))
        span = " + ".join([*parts, str(const)]) if parts else str(const)
        nonempty = " && ".join(f"{_atom(n)} > 0" for n in sizes if not _is_int(n))
        if any(_is_int(n) and int(n) <= 0 for n in sizes):
            span = "0"
        elif nonempty:
            span = f"({nonempty}) ? {_atom(span)} : 0"
        arena = "FAST" if m.space == "fast" else "SLOW"
        self.emit(f"TIGRIS_BOUND(TIGRIS_INSIDE_{arena}({m.ptr}, {_atom(span)}));")

    def fill(self, op: FillOp) -> None:
        if len(op.inputs) != 1 or len(op.outputs) != 1:
            raise NetworkError(f"{_what(op)}: one value into one buffer")
        v = self.vals.get(op.inputs[0])
        if not isinstance(v, _Float | _Index):
            raise NetworkError(f"{_what(op)}: the fill value is not a constant")
        m = self.mem(op.outputs[0])
        self.open("")
        self._inside(m)
        terms: list[tuple[str, int]] = []
        for a, n in enumerate(m.sizes):
            if n == "1":
                continue
            iv = self.fresh(f"i{a}")
            terms.append((iv, m.strides[a]))
            self.open(f"for (ptrdiff_t {iv} = 0; {iv} < {n}; ++{iv})")
        self.emit(f"{m.ptr}[{c_linear(terms)}] = ({m.ctype}){v.expr};")
        for _ in terms:
            self.close()
        self.close()

    # ---- control -----------------------------------------------------------

    # ---- control flow --------------------------------------------------------

    def scalar_expr(self, op: Operation) -> str:
        """A comparison, conjunction or cast of loop scalars as a C expression."""
        if isinstance(op, arith.IndexCastOp):
            return self.idx(op.input)
        assert isinstance(op, arith.CmpiOp | arith.AndIOp)
        a, b = self.idx(op.lhs), self.idx(op.rhs)
        if isinstance(op, arith.AndIOp):
            return f"({_atom(a)} && {_atom(b)})"
        sign = ["==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="]
        return f"({_atom(a)} {sign[int(op.predicate.value.data)]} {_atom(b)})"

    def store(self, op: mr.StoreOp) -> None:
        m = self.mem(op.memref)
        terms = [(self.idx(i), s) for i, s in zip(op.indices, m.strides)]
        self.emit(f"{m.ptr}[{c_linear(terms)}] = ({m.ctype})({self.idx(op.value)});")

    def _body(self, op: Operation, block: Block) -> None:
        """A body: its buffers lie in the node's workspace, which the stats
        count while it runs (as the interpreter does)."""
        ws = self.workspaces.get(id(op))
        if ws is not None:
            self.emit(f"TIGRIS_STAT_FREE(1, {ws.size});")
        self.block(block)
        if ws is not None:
            off = self.lives_offset(ws)
            self.emit(f"TIGRIS_STAT_ALLOC(1, {ws.size}, {off + ws.size});")

    def lives_offset(self, lv: Lifetime) -> int:
        owner = lv.owner
        assert isinstance(owner, Operation)
        off = owner.attributes.get(loop.OFFSET_ATTR)
        assert isinstance(off, IntegerAttr)
        return int(off.value.data)

    def if_(self, op: scf.IfOp) -> None:
        """An If: a C `if` on the condition's element."""
        if op.results:
            raise NetworkError(f"{_what(op)}: an scf.if with results is not printed")
        node = op.attributes.get(loop.NODE_ATTR)
        self.emit(f"/* {node.data if isinstance(node, StringAttr) else 'if'}: If */")
        self.open(f"if ({self.idx(op.cond)})")
        self._body(op, op.true_region.block)
        if op.false_region.blocks:
            self.close()
            self.open("else")
            self._body(op, op.false_region.block)
        self.close()

    def while_(self, op: scf.WhileOp) -> None:
        """A Loop: the condition region's scalars as C variables, a `for (;;)`
        that breaks when the condition fails."""
        node = op.attributes.get(loop.NODE_ATTR)
        self.emit(f"/* {node.data if isinstance(node, StringAttr) else 'while'}: Loop */")
        before, after = op.before_region.block, op.after_region.block
        state: list[str] = []
        for a, init in zip(before.args, op.arguments):
            var = self.fresh(self._hint(a, "s"))
            self.emit(f"ptrdiff_t {var} = {self.idx(init)};")
            self.vals[a] = _Index(var)
            state.append(var)
        self.open("for (;;)")
        for inner in before.ops:
            if isinstance(inner, scf.ConditionOp):
                self.emit(f"if (!{_atom(self.idx(inner.condition))}) break;")
                for a, v in zip(after.args, inner.args):
                    self.vals[a] = _Index(self.idx(v))
            else:
                self.op(inner)
        ws = self.workspaces.get(id(op))
        if ws is not None:
            self.emit(f"TIGRIS_STAT_FREE(1, {ws.size});")
        term = after.last_op
        assert isinstance(term, scf.YieldOp)
        for inner in after.ops:
            if inner is not term:
                self.op(inner)
        if ws is not None:
            self.emit(f"TIGRIS_STAT_ALLOC(1, {ws.size}, {self.lives_offset(ws) + ws.size});")
        nxt = [self.idx(v) for v in term.operands]
        tmp = [self.fresh(f"{v}_next") for v in state]
        for t, e in zip(tmp, nxt):
            self.emit(f"const ptrdiff_t {t} = {e};")
        for v, t in zip(state, tmp):
            self.emit(f"{v} = {t};")
        self.close()
        if op.results:
            for r, v in zip(op.results, state):
                self.vals[r] = _Index(v)

    def for_(self, op: scf.ForOp) -> None:
        if op.iter_args:
            raise NetworkError(f"{_what(op)}: loops with iter_args are not printed")
        lb, ub, step = self.idx(op.lb), self.idx(op.ub), self.idx(op.step)
        iv_v = op.body.block.args[0]
        iv = self.fresh(self._hint(iv_v, "i"))
        self.vals[iv_v] = _Index(iv)
        unit = op.attributes.get(loop.UNIT_ATTR)
        kind = op.attributes.get(loop.KIND_ATTR)
        what = unit.data if isinstance(unit, StringAttr) else "loop"
        group = op.attributes.get(loop.CHANNEL_GROUP_ATTR)
        if isinstance(kind, StringAttr) and isinstance(group, IntegerAttr):
            self.emit(f"/* {what}: {kind.data}, tiles of {group.value.data} channels */")
        elif isinstance(kind, StringAttr):
            self.emit(f"/* {what}: {kind.data}, tiles */")
        else:
            self.emit(f"/* {what}: groups */")
        incr = f"++{iv}" if step == "1" else f"{iv} += {step}"
        self.open(f"for (ptrdiff_t {iv} = {lb}; {iv} < {ub}; {incr})")
        if isinstance(kind, StringAttr):
            self.emit("TIGRIS_STAT_TILE();")
        self._body(op, op.body.block)
        self.close()

    # ---- band ops ----------------------------------------------------------

    def band(self, op: loop.BandComputeOp) -> None:
        kind: Kind = (
            "finish"
            if isinstance(op, loop.FinishOp)
            else "accumulate"
            if isinstance(op, loop.AccumulateOp)
            else "band"
        )
        nn_op = op.nn_op
        if not isinstance(nn_op, nn.NNOp):
            raise NetworkError(f"{_what(op)}: the body holds {nn_op.name}, not an nn op")
        cuts = op.cut_axes()
        bounds = [self.idx(b) for b in op.bounds]
        n_in = len(op.inputs)
        types = [a.type for a in op.body.block.args] + list(op.tensor_results())
        tensors: list[CTensor] = []
        mems: list[_Mem] = []
        out_band: list[tuple[str, str]] = []
        checks: list[str] = []
        i = 0
        for k, (v, t, axes) in enumerate(zip((*op.inputs, *op.outputs), types, cuts)):
            m = self.mem(v)
            shape = nn.shape_of(t)
            origin = ["0"] * len(shape)
            extent = [str(d) for d in shape]
            for ax in axes:
                lo, hi = bounds[i], bounds[i + 1]
                i += 2
                origin[ax] = lo
                extent[ax] = m.sizes[ax]
                if k == n_in:
                    out_band.append((lo, hi))
                want = c_sub(hi, lo)
                if _is_int(want) and _is_int(m.sizes[ax]):
                    if int(want) != int(m.sizes[ax]) and int(want) > 0:
                        raise NetworkError(
                            f"{_what(op)}: operand #{k} holds {m.sizes[ax]} rows along axis "
                            f"{ax}, its band [{lo}, {hi}) has {want}"
                        )
                elif want != m.sizes[ax]:
                    checks.append(f"{_atom(want)} <= 0 || {m.sizes[ax]} == {_atom(want)}")
            tensors.append(
                CTensor(
                    name=m.ptr,
                    ctype=m.ctype,
                    shape=tuple(shape),
                    strides=m.strides,
                    origin=tuple(origin),
                    extent=tuple(extent),
                    cut=tuple(axes),
                    value=m.value,
                )
            )
            mems.append(m)
        if any(_is_int(lo) and _is_int(hi) and int(hi) <= int(lo) for lo, hi in out_band):
            self.emit(f"/* {op.name} {nn_op.name}: empty band */")
            return
        try:
            code = c_band.emit(kind, nn_op, tensors[:n_in], tensors[n_in:], self)
        except NetworkError:
            raise
        except CLoweringError as e:
            raise NetworkError(f"{e} (computing {self._band_target(op)})") from None
        self.used.update(_IDENT.findall(code))
        empty = [f"{hi} > {lo}" for lo, hi in out_band if not (_is_int(lo) and _is_int(hi))]
        self.emit(f"/* {op.name} {nn_op.name} -> {self._band_target(op)} */")
        self.open(f"if ({' && '.join(empty)})" if empty else "")
        for m in mems:
            self._inside(m)
        for c in checks:
            self.emit(f"TIGRIS_BOUND({c});")
        k = self.prof_label(_prof_label(kind, nn_op, code))
        self.emit(f"TIGRIS_PROF_BEGIN({k});")
        self.emit(textwrap.dedent(code).strip("\n"))
        self.emit(f"TIGRIS_PROF_END({k});")
        self.close()

    def _band_target(self, op: loop.BandComputeOp) -> str:
        names = []
        for v in op.outputs:
            root = v
            while isinstance(root.owner, mr.SubviewOp):
                root = root.owner.source
            owner = root.owner
            tensor = (
                owner.attributes.get(loop.TENSOR_ATTR) if isinstance(owner, Operation) else None
            )
            names.append(f"'{tensor.data}'" if isinstance(tensor, StringAttr) else "a buffer")
        return ", ".join(names)


_KERNEL = re.compile(r"\b(tg_[a-z]+)")


def _prof_label(kind: Kind, op: nn.NNOp, code: str) -> str:
    """A band's profile label: its op, its kind and the family of the kernel
    it calls (`tg_dw`, `tg_pw`, ...), so that the paths of one op part."""
    fam = _KERNEL.search(code)
    label = op.name if kind == "band" else f"{op.name} ({kind})"
    return f"{label} {fam.group(1)}" if fam else label


def _owner(v: SSAValue) -> Operation | str:
    o = v.owner
    return o if isinstance(o, Operation) else "a block argument"


# ---------------------------------------------------------------------------
# the translation unit


_VOID_USE = re.compile(r"\(void\)\s*([A-Za-z_][A-Za-z0-9_]*)\s*;")


def _prune(lines: list[str | _Decl], keep_text: list[str], consts: list[_Const]) -> list[str]:
    """Drop declarations and constant arrays nothing names (an unused variable
    warns under -Wall; an unused weight would take flash). A `(void)name;`
    statement is no use: it goes with the declaration."""
    counts: dict[str, int] = {}

    def count(text: str, d: int) -> None:
        for tok in _IDENT.findall(_VOID_USE.sub("", _COMMENT.sub("", text))):
            counts[tok] = counts.get(tok, 0) + d

    for ln in lines:
        count(ln.text if isinstance(ln, _Decl) else ln, 1)
    for t in keep_text:
        count(t, 1)
    alive = [True] * len(lines)
    changed = True
    while changed:
        changed = False
        for k, ln in enumerate(lines):
            if alive[k] and isinstance(ln, _Decl) and counts.get(ln.name, 0) <= 1:
                alive[k] = False
                count(ln.text, -1)
                changed = True
    gone = {ln.name for ln, a in zip(lines, alive) if isinstance(ln, _Decl) and not a}
    gone.update(c.name for c in consts if counts.get(c.name, 0) <= 0)
    consts[:] = [c for c in consts if c.name not in gone]

    def strip(text: str) -> str:
        if "(void)" not in text:
            return text
        return _VOID_USE.sub(lambda m: "" if m.group(1) in gone else m.group(0), text).rstrip()

    keep_text[:] = [strip(t) for t in keep_text]
    out = [strip(ln.text if isinstance(ln, _Decl) else ln) for ln, a in zip(lines, alive) if a]
    return [ln if ln.strip() else "" for ln in out]


def _ports(fn: func.FuncOp, mems: Sequence[_Mem], key: str, layouts: Sequence[str]) -> list[CPort]:

    if key == "nn.input_names":
        names = arg_names(fn)
    else:
        from xdsl.dialects.builtin import ArrayAttr

        a = fn.attributes.get(key)
        n = len(mems)
        names = [f"out{i}" for i in range(n)]
        if isinstance(a, ArrayAttr) and len(a.data) == n:
            names = [
                x.data if isinstance(x, StringAttr) else names[i] for i, x in enumerate(a.data)
            ]
    out = []
    for i, m in enumerate(mems):
        shape = tuple(int(s) for s in m.sizes)
        lay = layouts[i] if i < len(layouts) else "plain"
        streamed = m.space == loop.STREAM.data
        if lay in ("nchw", "ncw") and not streamed:
            shape = (shape[0], shape[-1], *shape[1:-1])
        elif lay == "scalar":  # one element of shape 1 inside, rank 0 outside
            shape = ()
        dt = {v: k for k, v in c_band.C_TYPES.items()}[m.ctype]
        out.append(CPort(names[i], dt, shape, lay, streamed))
    return out


def _boundary_copy(p: _Printer, m: _Mem, port: CPort, ext: str, into_arena: bool) -> list[str]:
    """Loops moving one input into its arena buffer (or an output out of it)."""
    what = "input" if into_arena else "output"
    dense = CTensor("", m.ctype, tuple(int(s) for s in m.sizes), m.strides, (), (), ())
    if not dense.contiguous():
        raise NetworkError(f"{what} '{port.name}' is not a dense buffer")
    t = m.ctype
    x = p.fresh(f"{what}{'s' if into_arena else 's'}_{_sanitize(port.name)}")
    k = p.prof_label(f"{what} {port.layout}")
    lines = [
        f"/* {what} '{port.name}': {t} {'x'.join(map(str, port.shape))}, {port.layout} */",
        "{",
        f"    {'const ' if into_arena else ''}{t} *{x} = ({'const ' if into_arena else ''}"
        f"{t} *){ext};",
        f"    TIGRIS_PROF_BEGIN({k});",
    ]
    if port.layout in ("nchw", "ncw"):
        n, c = port.shape[0], port.shape[1]
        s = math.prod(port.shape[2:])
        i_n, i_s, i_c = p.fresh("n"), p.fresh("s"), p.fresh("c")
        inside = f"{m.ptr}[({i_n} * {s} + {i_s}) * {c} + {i_c}]"
        outside = f"{x}[({i_n} * {c} + {i_c}) * {s} + {i_s}]"
        assign = f"{inside} = {outside};" if into_arena else f"{outside} = {inside};"
        lines += [
            f"    for (ptrdiff_t {i_n} = 0; {i_n} < {n}; ++{i_n})",
            f"        for (ptrdiff_t {i_s} = 0; {i_s} < {s}; ++{i_s})",
            f"            for (ptrdiff_t {i_c} = 0; {i_c} < {c}; ++{i_c})",
            f"                {assign}",
        ]
    elif into_arena:
        lines.append(f"    memcpy({m.ptr}, {x}, {port.nbytes});")
    else:
        lines.append(f"    memcpy({x}, {m.ptr}, {port.nbytes});")
    lines += [f"    TIGRIS_PROF_END({k});", "}"]
    return lines


_COPY_RUNS = """\
/* One run of a copy between two buffers (never overlapping): blocks of
   constant size, which the compiler moves inline, where a call of memcpy
   would cost more than the bytes; long runs by memcpy. */
static inline void tigris_copy_runs(void *restrict dst, const void *restrict src, size_t n)
{
    unsigned char *restrict d = (unsigned char *)dst;
    const unsigned char *restrict s = (const unsigned char *)src;
    if (n > 512) {
        memcpy(d, s, n);
        return;
    }
    for (; n >= 64; n -= 64, d += 64, s += 64) memcpy(d, s, 64);
    if (n >= 32) { memcpy(d, s, 32); n -= 32; d += 32; s += 32; }
    if (n >= 16) { memcpy(d, s, 16); n -= 16; d += 16; s += 16; }
    if (n >= 8) { memcpy(d, s, 8); n -= 8; d += 8; s += 8; }
    if (n >= 4) { memcpy(d, s, 4); n -= 4; d += 4; s += 4; }
    for (; n > 0; --n) *d++ = *s++;
}
"""
"""The copy of one run between two buffers, printed where a copy uses it."""


_PRELUDE = """\
#if defined(__GNUC__) || defined(__clang__)
#define TIGRIS_ALIGNED __attribute__((aligned({align})))
#else
#define TIGRIS_ALIGNED
#endif
#ifndef TIGRIS_FLASH
#define TIGRIS_FLASH /* e.g. __attribute__((section(".rodata.weights"))) */
#endif
#ifndef TIGRIS_FAST_SECTION
#define TIGRIS_FAST_SECTION /* e.g. __attribute__((section(".dtcm"))) */
#endif
#ifndef TIGRIS_SLOW_SECTION
#define TIGRIS_SLOW_SECTION /* e.g. __attribute__((section(".ext_ram"))) */
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the weights are printed as little-endian bytes"
#endif

#ifdef TIGRIS_BOUNDS_CHECK
#include <stdio.h>
#include <stdlib.h>
void tigris_bound_fail(const char *what, int line)
{{
    fprintf(stderr, "{name}: bounds check failed at line %d: %s\\n", line, what);
    abort();
}}
static int {name}_inside_(const void *p, ptrdiff_t span, size_t elem, const unsigned char *arena,
                          size_t size)
{{
    uintptr_t a = (uintptr_t)arena, q = (uintptr_t)p;
    return span == 0 || (q >= a && span > 0 && q - a + (uintptr_t)span * elem <= size);
}}
#define TIGRIS_INSIDE_FAST(p, span) \\
    {name}_inside_((p), (span), sizeof(*(p)), {fast_arena}, {upper}_FAST_ARENA_BYTES)
#define TIGRIS_INSIDE_SLOW(p, span) \\
    {name}_inside_((p), (span), sizeof(*(p)), {slow_arena}, {upper}_SLOW_ARENA_BYTES)
#else
/* unevaluated, but what the condition names counts as used */
#undef TIGRIS_BOUND
#define TIGRIS_BOUND(cond) ((void)sizeof(cond))
#define TIGRIS_INSIDE_FAST(p, span) ((p) != NULL && (span) >= 0)
#define TIGRIS_INSIDE_SLOW(p, span) ((p) != NULL && (span) >= 0)
#endif

#ifdef TIGRIS_STATS
static {name}_stats_t {name}_stats_now_;
static unsigned long long {name}_fast_live_, {name}_slow_live_;
static int {name}_counted_;
static void {name}_alloc_(int fast, unsigned long long size, unsigned long long end)
{{
    if (fast) {{
        {name}_fast_live_ += size;
        if ({name}_fast_live_ > {name}_stats_now_.fast_peak)
            {name}_stats_now_.fast_peak = {name}_fast_live_;
        if (end > {name}_stats_now_.fast_high)
            {name}_stats_now_.fast_high = end;
    }} else {{
        {name}_slow_live_ += size;
        if ({name}_slow_live_ > {name}_stats_now_.slow_peak)
            {name}_stats_now_.slow_peak = {name}_slow_live_;
    }}
}}
#define TIGRIS_STAT_ALLOC(fast, size, end) {name}_alloc_((fast), (size), (end))
#define TIGRIS_STAT_FREE(fast, size) \\
    (*((fast) ? &{name}_fast_live_ : &{name}_slow_live_) -= (unsigned long long)(size))
#define TIGRIS_STAT_READ(bytes) ({name}_stats_now_.slow_reads += (unsigned long long)(bytes))
#define TIGRIS_STAT_WRITE(bytes) ({name}_stats_now_.slow_writes += (unsigned long long)(bytes))
#define TIGRIS_STAT_TILE() ({name}_stats_now_.tiles += 1)
#else
#define TIGRIS_STAT_ALLOC(fast, size, end) ((void)0)
#define TIGRIS_STAT_FREE(fast, size) ((void)0)
#define TIGRIS_STAT_READ(bytes) ((void)0)
#define TIGRIS_STAT_WRITE(bytes) ((void)0)
#define TIGRIS_STAT_TILE() ((void)0)
#endif

#ifdef TIGRIS_PROFILE
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#define TIGRIS_TICKS() ((unsigned long long)__builtin_ia32_rdtsc())
#else
#define TIGRIS_TICKS() ((unsigned long long)clock())
#endif
static unsigned long long {name}_prof_ticks_[{nprof}], {name}_prof_calls_[{nprof}];
static unsigned long long {name}_prof_t0_[{nprof}];
#define TIGRIS_PROF_BEGIN(k) ({name}_prof_t0_[k] = TIGRIS_TICKS())
#define TIGRIS_PROF_END(k) \\
    ({name}_prof_ticks_[k] += TIGRIS_TICKS() - {name}_prof_t0_[k], {name}_prof_calls_[k] += 1)
#else
#define TIGRIS_PROF_BEGIN(k) ((void)0)
#define TIGRIS_PROF_END(k) ((void)0)
#endif
"""


def _header(
    p: _Printer, ins: Sequence[CPort], outs: Sequence[CPort], blob_file: str = ""
) -> str:
    n, u = p.name, p.upper
    lines = [
        f"/* The tiled network '{n}', printed from its loop-level plan.",
        " *",
        f" * {n}_run_n(inputs, outputs) runs it: inputs[i] and outputs[i] point to the",
        " * model's inputs and outputs in its own layout (NCHW for feature maps), dense,",
        " * of the element types and byte sizes below. It returns 0, or 1 for a NULL",
        f" * pointer. {n}_run(input, output) is the same for a model of one input and",
        " * one output. Not reentrant: the arenas are static.",
        " *",
        f" * Memory: a fast arena of {u}_FAST_ARENA_BYTES (static, in this unit) and a slow",
        f" * arena of {u}_SLOW_ARENA_BYTES, static too unless the unit is compiled with",
        " * -DTIGRIS_SLOW_ARENA_EXTERN: then the caller defines `unsigned char",
        f" * {n}_slow_arena[{u}_SLOW_ARENA_BYTES]`, aligned to {u}_ARENA_ALIGN bytes (for",
        " * instance in external RAM). Weights are static const arrays; define",
        " * TIGRIS_FLASH to place them in a section, TIGRIS_FAST_SECTION and",
        " * TIGRIS_SLOW_SECTION to place the arenas. Besides the arenas, a kernel may",
        f" * keep up to {u}_STACK_SCRATCH_BYTES on the stack (gathered pixel blocks of",
        " * the vectorised convolutions; none with -DTIGRIS_PORTABLE).",
        *(
            [
                f" * The large weights are the binary file {blob_file}, which the unit",
                " * includes when it is assembled: see the unit for where it is looked up.",
            ]
            if blob_file
            else []
        ),
        " *",
        " * Build flags: -std=c99 -ffp-contract=off (int8 requantization is bit-exact",
        " * only without contraction), -lm. -DTIGRIS_PORTABLE: plain C loops, no vector",
        " * extensions. -DTIGRIS_BOUNDS_CHECK: every band operand and copy is checked to lie",
        " * inside its arena (abort with a message otherwise). -DTIGRIS_STATS: the last",
        f" * run's slow reads and writes, live peaks and tiles, through {n}_stats().",
        " */",
        f"#ifndef {u}_H_",
        f"#define {u}_H_",
        "",
        f"#define {u}_FAST_ARENA_BYTES {p.fast_bytes}",
        f"#define {u}_SLOW_ARENA_BYTES {p.slow_bytes}",
        f"#define {u}_ARENA_ALIGN {ARENA_ALIGN}",
        f"#define {u}_STACK_SCRATCH_BYTES {p.scratch_bytes}",
        f"#define {u}_NUM_INPUTS {len(ins)}",
        f"#define {u}_NUM_OUTPUTS {len(outs)}",
    ]
    for kind, ports in (("INPUT", ins), ("OUTPUT", outs)):
        for i, port in enumerate(ports):
            lay = "streamed by rows, channels-last" if port.streamed else port.layout
            lines.append(
                f"#define {u}_{kind}{i}_BYTES {port.nbytes} /* '{port.name}': "
                f"{port.dtype} {'x'.join(map(str, port.shape))} ({lay}) */"
            )
    lines += [
        "",
        "typedef struct {",
        "    unsigned long long fast_peak;   /* largest sum of live fast buffers (bytes) */",
        "    unsigned long long fast_high;   /* highest fast arena byte in use */",
        "    unsigned long long slow_peak;   /* largest sum of live slow buffers */",
        "    unsigned long long slow_reads;  /* bytes copied from slow to fast memory */",
        "    unsigned long long slow_writes; /* bytes copied from fast to slow memory */",
        "    unsigned long long tiles;       /* tiles run */",
        f"}} {n}_stats_t;",
        "",
        f"int {n}_run_n(const void *const *inputs, void *const *outputs);",
    ]
    if len(ins) == 1 and len(outs) == 1:
        lines.append(f"int {n}_run(const void *input, void *output);")
    lines += _stream_decls(p, ins, outs)
    lines += [
        "/* The last run's figures: 0 in a -DTIGRIS_STATS build after a run, else -1. */",
        f"int {n}_stats({n}_stats_t *out);",
        "#ifdef TIGRIS_PROFILE",
        "/* Prints 'profile LABEL: TICKS CALLS' per op kind, copy and boundary, and",
        " * the total, summed over the runs so far. */",
        f"void {n}_profile(void);",
        "#endif",
    ]
    if p.slow_bytes:
        lines += [
            "",
            "#ifdef TIGRIS_SLOW_ARENA_EXTERN",
            f"extern unsigned char {n}_slow_arena[];",
            "#endif",
        ]
    lines += ["", f"#endif /* {u}_H_ */", ""]
    return "\n".join(lines)


def _stream_decls(p: _Printer, ins: Sequence[CPort], outs: Sequence[CPort]) -> list[str]:
    """The row callbacks of the streamed ports, which the caller defines: one
    per direction, taking the port's index (its position among the model's
    inputs or outputs, as in inputs[i] and outputs[i])."""
    n, u = p.name, p.upper
    lines: list[str] = []
    for kind, ports in (("input", ins), ("output", outs)):
        streamed = [i for i, port in enumerate(ports) if port.streamed]
        if not streamed:
            continue
        k = kind.upper()
        if kind == "input":
            what = [
                f"/* Streamed inputs: the caller defines {n}_input_rows, which writes rows",
                " * [first_row, first_row + rows) of input #input, channels-last (row by row,",
                f" * {u}_INPUTi_ROW_BYTES bytes a row: W x C), densely to dst and returns 0;",
                f" * anything else stops the run, which then returns 2. {n}_run_n does not",
                " * read inputs[i] of a streamed input (it may be NULL). A line-buffered plan",
                " * asks for each row once, in order. */",
            ]
            decl = f"int {n}_input_rows(int input, int first_row, int rows, void *dst);"
            if p.windows:
                what += [
                    f"/* The plan reads its streamed inputs again: {n}_input_window writes",
                    " * rows [first_row, first_row + rows) x columns [first_col, first_col +",
                    " * cols) of input #input, channels-last, each row's cols x C elements at",
                    " * dst + r * dst_row_bytes, and returns 0 (else the run returns 2). Rows",
                    " * and columns may be asked more than once, in any order. */",
                ]
                decl += (
                    f"\nint {n}_input_window(int input, int first_row, int rows, int first_col, "
                    "int cols, void *dst, int dst_row_bytes);"
                )
        else:
            what = [
                f"/* Streamed outputs: the caller defines {n}_output_rows, which takes rows",
                " * [first_row, first_row + rows) of output #output, channels-last",
                f" * ({u}_OUTPUTi_ROW_BYTES bytes a row), dense at src, each row once, and",
                " * returns 0; anything else stops the run, which then returns 2. The rows",
                f" * of several outputs may interleave. {n}_run_n does not write outputs[i]",
                " * of a streamed output (it may be NULL). */",
            ]
            decl = f"int {n}_output_rows(int output, int first_row, int rows, const void *src);"
        lines += what
        for i in streamed:
            port = ports[i]
            rows = port.shape[1]
            lines += [
                f"#define {u}_{k}{i}_STREAMED 1 /* '{port.name}' */",
                f"#define {u}_{k}{i}_ROWS {rows}",
                f"#define {u}_{k}{i}_ROW_BYTES {port.nbytes // rows}",
            ]
        lines.append(decl)
    return lines


def print_network(
    module: ModuleOp,
    *,
    name: str = "tigris",
    weights: Mapping[str, np.ndarray] | None = None,
    base: Path | None = None,
    budget: int | None = None,
    verify: bool = True,
    weights_form: str = "c",
    blob_min: int = BLOB_MIN,
    blob_file: str | None = None,
) -> CSource:
    """The C translation unit and header of a planned, placed loop module.

    Weights come from `weights` or the module's `nn.weights` (relative to
    `base`). The plan is verified first as `plan-arena` does (against
    `budget`, else the module's `tile.budget`, else the plan's).

    `weights_form` (`WEIGHTS_FORMS`): "c" prints every weight in the unit;
    "blob" puts the weights of at least `BYTES_MIN` bytes in `CSource.blob`,
    which the unit includes from the file `blob_file` (default
    NAME.weights.bin); "auto" does so when they add up to `blob_min` bytes or
    more."""

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise NetworkError(f"'{name}' is not a C identifier")
    if weights_form not in WEIGHTS_FORMS:
        raise NetworkError(
            f"unknown weights form '{weights_form}' (known: {', '.join(WEIGHTS_FORMS)})"
        )
    blob_file = f"{name}.weights.bin" if blob_file is None else blob_file
    if not re.fullmatch(r"[^/\\\"\n]+", blob_file):
        raise NetworkError(
            f"the weights file name '{blob_file}' must be a file name without a folder, "
            "quotes or backslashes"
        )
    fn = main_func(module)
    if loop.PLAN_ATTR not in fn.attributes:
        raise NetworkError(
            "the module holds no loop-level plan (run --lower-to-loops and --plan-arena)"
        )
    if verify:
        _verify(module, fn, budget)
    if weights is None:
        try:
            weights = load_weights(module, base)
        except ReferenceError_ as e:
            raise NetworkError(str(e)) from None
    p = _Printer(module, weights, name)
    try:
        p.print_body()
    except NetworkError:
        raise
    except CLoweringError as e:  # e.g. an element type C has no name for
        raise NetworkError(str(e)) from None
    in_lay, out_lay = module_layouts(fn)
    ins = _ports(fn, p.arg_mems, "nn.input_names", in_lay)
    outs = _ports(fn, p.returned, "nn.output_names", out_lay)
    pre = ["if (inputs == NULL || outputs == NULL) return 1;"]
    for i in range(len(ins)):
        if not ins[i].streamed:
            pre.append(f"if (inputs[{i}] == NULL) return 1;")
    for i in range(len(outs)):
        if not outs[i].streamed:
            pre.append(f"if (outputs[{i}] == NULL) return 1;")
    pre.append("#ifdef TIGRIS_STATS")
    pre.append(f"memset(&{name}_stats_now_, 0, sizeof {name}_stats_now_);")
    pre.append(f"{name}_fast_live_ = {name}_slow_live_ = 0;")
    pre.append("#endif")
    body_lines = list(p.lines)
    at = p.input_lines_at
    inputs_text: list[str] = []
    for i, (m, port) in enumerate(zip(p.arg_mems, ins)):
        if not port.streamed and i not in p.unread:
            inputs_text += _boundary_copy(p, m, port, f"inputs[{i}]", True)
    outputs_text: list[str] = []
    for i, (m, port) in enumerate(zip(p.returned, outs)):
        if not port.streamed:
            outputs_text += _boundary_copy(p, m, port, f"outputs[{i}]", False)
    total = len(p.prof)
    pre.append(f"TIGRIS_PROF_BEGIN({total});")
    pad = "    "
    body_lines[at:at] = [pad + ln if ln else "" for ln in inputs_text]
    body_lines += [pad + ln if ln else "" for ln in outputs_text]
    body_lines += ["#ifdef TIGRIS_STATS", pad + f"{name}_counted_ = 1;", "#endif"]
    body_lines.append(pad + f"TIGRIS_PROF_END({total});")
    body_lines.append(pad + "return 0;")
    helpers = list(p.helpers.values())
    body = _prune(body_lines, helpers, p.consts)
    blob = _place_weights(p.consts, weights_form, blob_min, f"{name}_weights")
    header = _header(p, ins, outs, blob_file if blob is not None else "")
    u = p.upper
    out: list[str] = [
        f"/* The tiled network '{name}' as one C99 translation unit, printed from its",
        " * loop-level plan: static arenas, no allocation. The declarations of its",
        " * header follow, so that this file compiles alone. */",
        header,
        "/* a band's kernel stays a function of its own: inlined where the run calls",
        "   it once, it made the run one function too big to compile in seconds. gcc",
        "   gets noipa, not noinline: with its interprocedural constant propagation of",
        "   the arena addresses (a kernel called twice), gcc 12 -O3 computed Hardmax",
        "   before opset 13 wrong; right at -O1 or with -fno-ipa-cp */",
        "#if defined(__clang__)",
        "#define TIGRIS_BAND __attribute__((noinline))",
        "#elif defined(__GNUC__)",
        "#define TIGRIS_BAND __attribute__((noipa))",
        "#endif",
        "#if defined(__clang__) /* the prelude's helpers an int8-free unit does not call */",
        "#pragma clang diagnostic push",
        '#pragma clang diagnostic ignored "-Wunused-function"',
        "#endif",
        c_band.PRELUDE.rstrip("\n"),
        "#if defined(__clang__)",
        "#pragma clang diagnostic pop",
        "#endif",
        "",
        _PRELUDE.format(
            name=name,
            upper=u,
            align=ARENA_ALIGN,
            fast_arena=p.fast_arena,
            slow_arena=p.slow_arena,
            nprof=len(p.prof) + 1,
        ),
    ]
    out.append("/* ---- arenas ---- */")
    if p.fast_bytes:
        out.append(
            f"static unsigned char {p.fast_arena}[{u}_FAST_ARENA_BYTES] TIGRIS_FAST_SECTION "
            "TIGRIS_ALIGNED;"
        )
    else:
        out.append(f"#define {p.fast_arena} ((unsigned char *)NULL) /* no fast buffer */")
    if p.slow_bytes:
        out += [
            "#ifndef TIGRIS_SLOW_ARENA_EXTERN",
            f"static unsigned char {p.slow_arena}[{u}_SLOW_ARENA_BYTES] TIGRIS_SLOW_SECTION "
            "TIGRIS_ALIGNED;",
            "#endif",
        ]
    else:
        out.append(f"#define {p.slow_arena} ((unsigned char *)NULL) /* no slow buffer */")
    out.append("")
    if blob is not None:
        out.append(
            _BLOB_ASM.format(
                size=len(blob), file=blob_file, symbol=f"{name}_weights", align=ARENA_ALIGN
            )
        )
    if p.consts:
        out.append("/* ---- constants: weights and tile tables ---- */")
        out += [c.text for c in p.consts]
    if helpers:
        out.append("/* ---- band kernels ---- */")
        out += helpers
    out.append("/* ---- the network ---- */")
    out.append(f"int {name}_run_n(const void *const *inputs, void *const *outputs)")
    out.append("{")
    out += [pad + ln if not ln.startswith("#") else ln for ln in pre]
    out += body
    out.append("}")
    out.append("")
    if len(ins) == 1 and len(outs) == 1:
        out += [
            f"int {name}_run(const void *input, void *output)",
            "{",
            "    const void *ins[1];",
            "    void *outs[1];",
            "    ins[0] = input;",
            "    outs[0] = output;",
            f"    return {name}_run_n(ins, outs);",
            "}",
            "",
        ]
    out += [
        f"int {name}_stats({name}_stats_t *out)",
        "{",
        "#ifdef TIGRIS_STATS",
        f"    if (out == NULL || !{name}_counted_) return -1;",
        f"    *out = {name}_stats_now_;",
        "    return 0;",
        "#else",
        "    (void)out;",
        "    return -1;",
        "#endif",
        "}",
        "",
    ]
    labels = [*p.prof, "total"]
    out += [
        "#ifdef TIGRIS_PROFILE",
        f"void {name}_profile(void)",
        "{",
        f"    static const char *const labels[{len(labels)}] = {{",
        *(f'        "{lb}",' for lb in labels),
        "    };",
        f"    for (int k = 0; k < {len(labels)}; ++k)",
        f'        printf("profile %s: %llu %llu\\n", labels[k], {name}_prof_ticks_[k],',
        f"               {name}_prof_calls_[k]);",
        "}",
        "#endif",
        "",
    ]
    return CSource(
        name,
        "\n".join(out),
        header,
        tuple(ins),
        tuple(outs),
        p.fast_bytes,
        p.slow_bytes,
        blob,
        blob_file if blob is not None else "",
    )


def _verify(module: ModuleOp, fn: func.FuncOp, budget: int | None) -> None:
    problems = verify_arena(module, budget if budget is not None else budget_for(module, fn, None))
    if problems:
        raise NetworkError("the plan does not verify, no C is printed:\n  " + "\n  ".join(problems))


def holds_plan(module: ModuleOp) -> bool:
    """Whether the module is a loop-level plan (a function with `loop.plan`)."""
    return any(isinstance(op, func.FuncOp) and loop.PLAN_ATTR in op.attributes for op in module.ops)


@dataclass(frozen=True)
class CTarget(Target):
    """`-t c`: a planned, placed network (after `plan-arena`) as one C unit
    (`print_network`); `tigris-opt -t c -o NAME.c` also writes NAME.h, and
    NAME.weights.bin when the weights are in the blob form.

    `-t 'c{weights=FORM}'`: "auto" (the default) puts the weights in a blob
    from `BLOB_MIN` bytes of them on, "c" prints them all as C text, "blob"
    always puts them in a blob. A blob needs `-o NAME.c`: the C written to
    standard output (or to a file not named .c) is refused then."""

    name = "c"

    weights: str = "auto"

    def source(self, module: ModuleOp, blob_file: str | None = None) -> CSource:
        """The printed unit, in this target's weights form."""
        if not holds_plan(module):
            raise NetworkError(
                "the C target prints loop-level plans: the module holds none "
                "(run --lower-to-loops and --plan-arena, and for register-tiled "
                "matrix products --gebp-tile and --lower-gebp, first)"
            )
        if self.weights not in WEIGHTS_FORMS:
            raise NetworkError(
                f"c{{weights={self.weights}}}: the weights form is one of "
                f"{', '.join(WEIGHTS_FORMS)}"
            )
        return print_network(module, weights_form=self.weights, blob_file=blob_file)

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        source = self.source(module)
        if source.blob is not None:
            why = f", {BLOB_MIN >> 20} MiB or more" if self.weights == "auto" else ""
            raise NetworkError(
                f"the weights ({len(source.blob)} bytes{why}) go in a binary file beside "
                "the C file, which standard output or a file not named .c cannot have: "
                "give -o NAME.c (the weights go to NAME.weights.bin), or print them as "
                "C text with -t 'c{weights=c}'"
            )
        output.write(source.c)


__all__ = [
    "BLOB_MIN",
    "WEIGHTS_FORMS",
    "CPort",
    "CSource",
    "CTarget",
    "NetworkError",
    "c_double",
    "c_float",
    "holds_plan",
    "print_network",
    "weights_blob",
]
