"""Compile and run a printed network (`c_net`) on the host.

`build` writes the translation unit, its header and a small harness (`main`
reads each input's raw bytes from a file, runs the network, writes each
output's bytes) into a build directory and compiles them, cached by the hash
of the sources, compiler and flags. `run_c` prints, builds and runs a plan on
arrays. Variants (combinable):

* "default": the flags as given (`-O3 -march=native` unless overridden);
* "portable": `-DTIGRIS_PORTABLE`, no `-march`/`-mcpu`/`-mtune`;
* "sanitize": `-fsanitize=address,undefined -fno-sanitize-recover=all`;
* "bounds": `-DTIGRIS_BOUNDS_CHECK`;
* "stats": `-DTIGRIS_STATS` (the run reports its measured figures);
* "profile": `-DTIGRIS_PROFILE` (time per op kind, copy and boundary, in
  time-stamp counter ticks: `profile_of` reads them);
* "extern": `-DTIGRIS_SLOW_ARENA_EXTERN` (the harness defines the slow arena).

A unit whose weights are in the blob form (`CSource.blob`) has the blob
written beside it in the build directory, where its `.incbin` finds it (the
compiler runs there), and the blob's hash is part of the build's key.

`-std=c99 -ffp-contract=off` are always passed: int8 requantization is
bit-exact only without floating-point contraction.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from tigris_ir.backend.c.network import CSource, print_network
from tigris_ir.interp.run_stats import RunStats
from tigris_ir.reference.executor import to_boundary, to_internal

REQUIRED_FLAGS = ("-std=c99", "-ffp-contract=off")
DEFAULT_FLAGS = ("-O3", "-march=native")
WARNING_FLAGS = ("-Wall", "-Wextra")
VARIANTS: dict[str, tuple[str, ...]] = {
    "default": (),
    "portable": ("-DTIGRIS_PORTABLE",),
    "sanitize": ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"),
    "bounds": ("-DTIGRIS_BOUNDS_CHECK",),
    "stats": ("-DTIGRIS_STATS",),
    "profile": ("-DTIGRIS_PROFILE",),
    "extern": ("-DTIGRIS_SLOW_ARENA_EXTERN",),
}
_TARGET_FLAGS = ("-march", "-mcpu", "-mtune", "-mavx", "-msse", "-mfma", "-mneon")


class CBuildError(Exception):
    """The C compiler failed (the message holds its output) or is missing."""


class CRunError(Exception):
    """The compiled network failed at run time (a sanitizer or bounds report)."""


def default_cc() -> str:
    return os.environ.get("CC") or "gcc"


def find_clang() -> str | None:
    """A clang command: `clang` on the PATH, else the clang that PyPI's
    `ziglang` package ships (`python -m ziglang cc`), else None."""
    if shutil.which("clang"):
        return "clang"
    import importlib.util
    import sys

    if importlib.util.find_spec("ziglang") is not None:
        return shlex.join([sys.executable, "-m", "ziglang", "cc"])
    return None


def cache_dir() -> Path:
    """Where builds are kept: $TIGRIS_C_CACHE, else a folder of the temp dir."""
    env = os.environ.get("TIGRIS_C_CACHE")
    return Path(env) if env else Path(tempfile.gettempdir()) / "tigris-c-cache"


def _variants(variant: str | Sequence[str]) -> tuple[str, ...]:
    names = (variant,) if isinstance(variant, str) else tuple(variant)
    for v in names:
        if v not in VARIANTS:
            raise CBuildError(f"unknown build variant '{v}' (known: {', '.join(VARIANTS)})")
    return names


def compile_flags(
    flags: Sequence[str] | str | None = None,
    variant: str | Sequence[str] = "default",
    strict: bool = False,
) -> list[str]:
    """The compiler flags of a variant: required + (given or default) + variant."""
    base = list(DEFAULT_FLAGS) if flags is None else _split(flags)
    names = _variants(variant)
    if "portable" in names:
        base = [f for f in base if not f.startswith(_TARGET_FLAGS)]
    out = [*REQUIRED_FLAGS, *WARNING_FLAGS, *(("-Werror",) if strict else ()), *base]
    for v in names:
        out += VARIANTS[v]
    return out


def _split(flags: Sequence[str] | str) -> list[str]:
    return shlex.split(flags) if isinstance(flags, str) else list(flags)


@cache
def _compiler_id(cc: str) -> str:
    """The first line of `cc --version`; `cc` is a command line (`clang`,
    `python -m ziglang cc`)."""
    words = shlex.split(cc)
    exe = shutil.which(words[0]) if words else None
    if exe is None:
        raise CBuildError(f"C compiler '{cc}' not found (set $CC or pass --cc)")
    try:
        out = subprocess.run(
            [exe, *words[1:], "--version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CBuildError(f"cannot run C compiler '{cc}': {e}") from None
    return out.stdout.splitlines()[0] if out.stdout else exe


def blob_digest(source: CSource) -> str:
    """The hash of the unit's weights blob (part of a build's key), or ""."""
    return "" if source.blob is None else hashlib.sha256(source.blob).hexdigest()


def harness(source: CSource) -> str:
    """A `main` that runs the network once per call on files of raw bytes."""
    n, u = source.name, source.name.upper()
    ni, no = len(source.inputs), len(source.outputs)
    in_bytes = ", ".join(str(p.nbytes) for p in source.inputs) or "0"
    out_bytes = ", ".join(str(p.nbytes) for p in source.outputs) or "0"
    slow = max(source.slow_arena, 1)
    stream, pass_input, free_stream, print_rows = _harness_streams(source)
    after_first = "    sent_check = 0;\n" if any(p.streamed for p in source.outputs) else ""
    return f"""\
/* The harness of '{n}': {n}_run_n on files of raw bytes.
 *   ./run [-r REPEAT] IN0 ... OUT0 ...
 * prints the mean time of a run with -r, the stats in a TIGRIS_STATS build. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "{n}.h"

#if defined(TIGRIS_SLOW_ARENA_EXTERN) && {u}_SLOW_ARENA_BYTES > 0
unsigned char {n}_slow_arena[{slow}] __attribute__((aligned({u}_ARENA_ALIGN)));
#endif

static const size_t in_bytes[] = {{{in_bytes}}};
{stream}
static const size_t out_bytes[] = {{{out_bytes}}};

static void *read_file(const char *path, size_t n)
{{
    FILE *f = fopen(path, "rb");
    void *p = malloc(n ? n : 1);
    if (f == NULL || p == NULL || fread(p, 1, n, f) != n || fgetc(f) != EOF) {{
        fprintf(stderr, "cannot read %zu bytes from '%s'\\n", n, path);
        exit(2);
    }}
    fclose(f);
    return p;
}}

int main(int argc, char **argv)
{{
    const void *ins[{max(ni, 1)}];
    void *outs[{max(no, 1)}];
    long repeat = 0;
    int a = 1, i, rc = 0;
    if (argc > 2 && strcmp(argv[1], "-r") == 0) {{
        repeat = atol(argv[2]);
        a = 3;
    }}
    if (argc - a != {ni + no}) {{
        fprintf(stderr, "usage: %s [-r REPEAT] IN*{ni} OUT*{no}\\n", argv[0]);
        return 2;
    }}
    for (i = 0; i < {ni}; ++i)
        ins[i] = read_file(argv[a + i], in_bytes[i]);
    for (i = 0; i < {no}; ++i)
        outs[i] = malloc(out_bytes[i] ? out_bytes[i] : 1);
{pass_input}    rc = {n}_run_n(ins, outs);
{after_first}    if (rc != 0) {{
        fprintf(stderr, "{n}_run_n returned %d\\n", rc);
        return 3;
    }}
    if (repeat > 0) {{
        struct timespec t0, t1;
        long k;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (k = 0; k < repeat; ++k)
            rc |= {n}_run_n(ins, outs);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("time: %.9f\\n", ((double)(t1.tv_sec - t0.tv_sec) +
                                 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec)) / (double)repeat);
    }}
    for (i = 0; i < {no}; ++i) {{
        FILE *f = fopen(argv[a + {ni} + i], "wb");
        if (f == NULL || fwrite(outs[i], 1, out_bytes[i], f) != out_bytes[i]) {{
            fprintf(stderr, "cannot write '%s'\\n", argv[a + {ni} + i]);
            return 2;
        }}
        fclose(f);
    }}
{print_rows}#ifdef TIGRIS_STATS
    {{
        {n}_stats_t st;
        if ({n}_stats(&st) != 0) {{
            fprintf(stderr, "no stats\\n");
            return 3;
        }}
        printf("fast peak: %llu\\nfast high: %llu\\nslow peak: %llu\\n", st.fast_peak,
               st.fast_high, st.slow_peak);
        printf("slow reads: %llu\\nslow writes: %llu\\ntiles: %llu\\n", st.slow_reads,
               st.slow_writes, st.tiles);
    }}
#endif
#ifdef TIGRIS_PROFILE
    {n}_profile();
#endif
    for (i = 0; i < {ni}; ++i)
        free((void *)ins[i]);
{free_stream}
    for (i = 0; i < {no}; ++i)
        free(outs[i]);
    return rc;
}}
"""


STREAM_DATA = {"input": "stream_data", "output": "sent_data"}
"""The harnesses' arrays of streamed port buffers, by port kind."""
STREAM_ROWS = {"input": "stream_rows", "output": "sent_rows"}
"""The harnesses' arrays of rows counted per port (`<array>_total`: in all)."""


def row_callback(source: CSource, kind: str, buffers: Sequence[str] | None = None) -> str:
    """The C of a harness's row callback for the streamed ports of `kind`
    ("input" or "output"): `<name>_input_rows` copies rows of the port's
    buffer (channels-last) to the network, `<name>_output_rows` places the
    network's rows in it; the rows are counted per port and in all, and while
    `sent_check` is set an output row sent twice fails the call. `buffers`:
    each port's buffer as a C expression (a harness of static buffers), or
    None: `main` assigns `STREAM_DATA[kind][i]` itself. Empty when no port
    of the kind is streamed."""
    ports = source.inputs if kind == "input" else source.outputs
    if not any(p.streamed for p in ports):
        return ""
    n, k = source.name, len(ports)
    data, rows = STREAM_DATA[kind], STREAM_ROWS[kind]
    heights = ", ".join(str(p.shape[1] if p.streamed else 0) for p in ports)
    row_bytes = ", ".join(str(p.nbytes // p.shape[1] if p.streamed else 0) for p in ports)
    text = once = ""
    if kind == "input":
        sig = "void *dst"
        copy = f"memcpy(dst, {data}[input] + (size_t)first_row * rb, (size_t)rows * rb);"
    else:
        sig = "const void *src"
        copy = f"memcpy({data}[output] + (size_t)first_row * rb, src, (size_t)rows * rb);"
        starts, at_row = [], 0
        for p in ports:
            starts.append(str(at_row))
            at_row += p.shape[1] if p.streamed else 0
        text += f"""
/* Each output row once (checked while sent_check is set). */
static int sent_check = 1;
static unsigned char sent_seen[{at_row}];
static const int sent_first[{k}] = {{{", ".join(starts)}}};
"""
        once = """
    if (sent_check) {
        int r;
        for (r = first_row; r < first_row + rows; ++r) {
            if (sent_seen[sent_first[output] + r]++) return 1;
        }
    }"""
    const = "const " if kind == "input" else ""
    init = ""
    if buffers is not None:
        init = " = {" + ", ".join(
            f"({const}unsigned char *){b}" if p.streamed else "0"
            for b, p in zip(buffers, ports)
        ) + "}"
    text += f"""
/* The {kind} streams: rows of the {kind} buffers (channels-last), counted. */
static {const}unsigned char *{data}[{k}]{init};
static unsigned long long {rows}[{k}];
static unsigned long long {rows}_total;
static unsigned long long {rows}_bytes;
static const int {kind}_height[{k}] = {{{heights}}}; /* 0: not streamed */
static const size_t {kind}_row_bytes[{k}] = {{{row_bytes}}};

int {n}_{kind}_rows(int {kind}, int first_row, int rows, {sig})
{{
    size_t rb;
    if ({kind} < 0 || {kind} >= {k} || {kind}_height[{kind}] == 0) return 1;
    if (first_row < 0 || rows < 0 || first_row + rows > {kind}_height[{kind}]) return 1;
    rb = {kind}_row_bytes[{kind}];{once}
    {copy}
    {rows}[{kind}] += (unsigned long long)rows;
    {rows}_total += (unsigned long long)rows;
    {rows}_bytes += (unsigned long long)rows * rb;
    return 0;
}}
"""
    if kind == "input" and f"{n}_input_window(" in source.h:
        widths = ", ".join(str(p.shape[2] if p.streamed else 0) for p in ports)
        text += f"""
static const int input_width[{k}] = {{{widths}}};

int {n}_input_window(int input, int first_row, int rows, int first_col, int cols, void *dst,
                     int dst_row_bytes)
{{
    size_t rb, pixel;
    int r;
    if (input < 0 || input >= {k} || input_height[input] == 0) return 1;
    if (first_row < 0 || rows < 0 || first_row + rows > input_height[input]) return 1;
    if (first_col < 0 || cols < 0 || first_col + cols > input_width[input]) return 1;
    rb = input_row_bytes[input];
    pixel = rb / (size_t)input_width[input];
    if (dst_row_bytes < 0 || (size_t)dst_row_bytes < (size_t)cols * pixel) return 1;
    for (r = 0; r < rows; ++r)
        memcpy((unsigned char *)dst + (size_t)r * (size_t)dst_row_bytes,
               {data}[input] + (size_t)(first_row + r) * rb + (size_t)first_col * pixel,
               (size_t)cols * pixel);
    {rows}[input] += (unsigned long long)rows;
    {rows}_total += (unsigned long long)rows;
    {rows}_bytes += (unsigned long long)rows * (size_t)cols * pixel;
    return 0;
}}
"""
    return text


def _harness_streams(source: CSource) -> tuple[str, str, str, str]:
    """The harness's row callbacks of the streamed ports (`row_callback`; in
    the first run a row sent twice fails it), the lines of `main` that hand
    them the buffers, free them and print the counts."""
    text = pass_input = free_stream = print_rows = ""
    for kind, ports in (("input", source.inputs), ("output", source.outputs)):
        at = [i for i, p in enumerate(ports) if p.streamed]
        if not at:
            continue
        text += row_callback(source, kind)
        data, rows = STREAM_DATA[kind], STREAM_ROWS[kind]
        label = "stream rows" if kind == "input" else "output rows"
        print_rows += f'    printf("{label}: %llu\\n", {rows}_total);\n'
        if kind == "input":
            print_rows += f'    printf("stream bytes: %llu\\n", {rows}_bytes);\n'
        for i in at:
            if kind == "input":
                pass_input += f"    {data}[{i}] = (const unsigned char *)ins[{i}];\n"
                pass_input += f"    ins[{i}] = NULL;\n"
                free_stream += f"    free((void *){data}[{i}]);\n"
            else:
                pass_input += f"    {data}[{i}] = (unsigned char *)outs[{i}];\n"
            print_rows += f'    printf("{label} {i}: %llu\\n", {rows}[{i}]);\n'
    return text, pass_input, free_stream, print_rows


def build(
    source: CSource,
    *,
    flags: Sequence[str] | str | None = None,
    variant: str | Sequence[str] = "default",
    cc: str | None = None,
    strict: bool = False,
    build_dir: Path | None = None,
    timeout: float = 600.0,
) -> Path:
    """The executable of `source` and its harness (built once per sources,
    compiler and flags). `strict` adds -Werror."""
    cc = cc or default_cc()
    args = compile_flags(flags, variant, strict)
    main = harness(source)
    parts = [source.c, source.h, main, _compiler_id(cc), *args]
    if source.blob is not None:
        parts.append(blob_digest(source))
    key = hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]
    root = build_dir or cache_dir()
    out = root / key
    exe = out / "run"
    if exe.exists():
        return exe
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        (tmp / f"{source.name}.c").write_text(source.c)
        (tmp / f"{source.name}.h").write_text(source.h)
        (tmp / "main.c").write_text(main)
        if source.blob is not None:  # the unit's .incbin finds it in the working directory
            (tmp / source.blob_file).write_bytes(source.blob)
        cmd = [*shlex.split(cc), *args, "-o", "run", f"{source.name}.c", "main.c", "-lm"]
        try:
            res = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise CBuildError(f"C compiler '{cc}' not found (set $CC or pass --cc)") from None
        except subprocess.TimeoutExpired:
            raise CBuildError(f"'{cc}' took more than {timeout:.0f} s") from None
        (tmp / "build.log").write_text(shlex.join(cmd) + "\n" + res.stdout + res.stderr)
        if res.returncode != 0:
            msg = (res.stderr or res.stdout).strip()
            lines = msg.splitlines()
            if len(lines) > 40:
                msg = "\n".join([*lines[:40], f"... ({len(lines) - 40} more lines)"])
            raise CBuildError(f"{shlex.join(cmd)} failed in {tmp}:\n{msg}")
        if not (tmp / "run").is_file():
            raise CBuildError(
                f"C compiler '{cc}' exited 0 but wrote no executable ({shlex.join(cmd)})"
            )
        try:
            tmp.rename(out)
        except OSError:  # built meanwhile by another process (or a stale entry)
            if exe.is_file():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                shutil.rmtree(out, ignore_errors=True)
                tmp.rename(out)
        return exe
    except BaseException:
        if tmp.exists() and not (tmp / "build.log").exists():
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def execute(
    source: CSource,
    exe: Path,
    inputs: Sequence[np.ndarray],
    *,
    timeout: float = 600.0,
    repeat: int = 0,
) -> tuple[list[np.ndarray], dict[str, float]]:
    """Run a built network on inputs in the model's boundary layout: its
    outputs and the `name: value` lines it printed (stats, time)."""
    if len(inputs) != len(source.inputs):
        raise CRunError(f"the model takes {len(source.inputs)} input(s), got {len(inputs)}")
    for x, p in zip(inputs, source.inputs):
        shape = tuple(x.shape) if not p.streamed else tuple(to_internal(x, p.layout).shape)
        if shape != p.shape or x.dtype != p.dtype:
            raise CRunError(
                f"input '{p.name}' must be {p.dtype} of shape {'x'.join(map(str, p.shape))}, "
                f"got {x.dtype} of shape {'x'.join(map(str, x.shape))}"
            )
    with tempfile.TemporaryDirectory(prefix="tigris-run-") as d:
        ins = [Path(d) / f"in{i}.bin" for i in range(len(inputs))]
        outs = [Path(d) / f"out{i}.bin" for i in range(len(source.outputs))]
        for path, x, p in zip(ins, inputs, source.inputs):
            if p.streamed:  # the stream delivers channels-last rows
                x = to_internal(x, p.layout)
            path.write_bytes(np.ascontiguousarray(x).tobytes())
        cmd = [str(exe), *(["-r", str(repeat)] if repeat else []), *map(str, ins + outs)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CRunError(f"the compiled network ran more than {timeout:.0f} s") from None
        if res.returncode != 0:
            raise CRunError(
                f"the compiled network failed (exit status {res.returncode}):\n"
                + (res.stderr or res.stdout).strip()
            )
        outputs = [
            np.frombuffer(path.read_bytes(), dtype=p.dtype).reshape(p.shape).copy()
            for path, p in zip(outs, source.outputs)
        ]
        outputs = [  # a streamed output arrived channels-last
            to_boundary(y, p.layout) if p.streamed else y
            for y, p in zip(outputs, source.outputs)
        ]
    figures: dict[str, float] = {}
    for line in res.stdout.splitlines():
        key, sep, val = line.rpartition(":")
        if sep and key.startswith("profile "):
            ticks, calls = val.split()
            figures[key] = float(ticks)
            figures["calls " + key.removeprefix("profile ")] = float(calls)
        elif sep:
            try:
                figures[key.strip()] = float(val)
            except ValueError:
                pass
    return outputs, figures


def profile_of(figures: Mapping[str, float]) -> dict[str, tuple[float, int]]:
    """The figures a profile build printed: per label (op kind and kernel
    family, copy direction, boundary, "total") its time-stamp ticks and calls,
    summed over the runs."""
    out = {}
    for key, ticks in figures.items():
        if key.startswith("profile "):
            label = key.removeprefix("profile ")
            out[label] = (ticks, int(figures["calls " + label]))
    if "total" not in out:
        raise CRunError("the build printed no profile (build the 'profile' variant)")
    return out


def stats_of(source: CSource, figures: Mapping[str, float]) -> RunStats:
    """The figures a stats build printed, as the interpreter reports them."""

    def get(k: str) -> int:
        if k not in figures:
            raise CRunError(f"the stats build printed no '{k}'")
        return int(figures[k])

    ins = _rows_by(figures, "stream rows", len(source.inputs))
    outs = _rows_by(figures, "output rows", len(source.outputs))
    return RunStats(
        get("fast peak"),
        get("fast high"),
        source.fast_arena,
        get("slow peak"),
        get("slow reads"),
        get("slow writes"),
        get("tiles"),
        int(figures.get("stream rows", 0)),
        int(figures.get("stream bytes", 0)),
        int(figures.get("output rows", 0)),
        ins if any(p.streamed for p in source.inputs) else (),
        outs if any(p.streamed for p in source.outputs) else (),
    )


def _rows_by(figures: Mapping[str, float], label: str, n: int) -> tuple[int, ...]:
    """The rows a stats build counted per port (0 for a port not streamed)."""
    return tuple(int(figures.get(f"{label} {i}", 0)) for i in range(n))


def run_c(
    module: ModuleOp | CSource,
    weights: Mapping[str, np.ndarray] | None,
    inputs: Sequence[np.ndarray],
    *,
    variant: str | Sequence[str] = "default",
    flags: Sequence[str] | str | None = None,
    cc: str | None = None,
    strict: bool = False,
    name: str = "tigris",
    weights_form: str = "auto",
) -> tuple[list[np.ndarray], RunStats | None]:
    """Print (unless given a `CSource`), build and run a plan on inputs in the
    model's boundary layout; its outputs (boundary layout) and, for a variant
    with "stats", the measured figures. `weights_form` as `print_network`'s
    (by default a large model's weights are a blob beside the unit)."""
    source = (
        module
        if isinstance(module, CSource)
        else print_network(module, name=name, weights=weights, weights_form=weights_form)
    )
    exe = build(source, flags=flags, variant=variant, cc=cc, strict=strict)
    outputs, figures = execute(source, exe, inputs)
    stats = stats_of(source, figures) if "stats" in _variants(variant) else None
    return outputs, stats


__all__ = [
    "CBuildError",
    "CRunError",
    "VARIANTS",
    "build",
    "compile_flags",
    "execute",
    "harness",
    "profile_of",
    "run_c",
    "stats_of",
]
