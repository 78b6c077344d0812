"""Whole networks as C: latency and memory against onnxruntime, side by side.

For each model (full size) x dtype x fast budget: plan, lower and place the
arenas, print the network as C, build it (`-O3 -march=native`, one thread) and
time it with the harness's `-r` loop; run onnxruntime (all graph
optimisations, one intra-op thread) on the same input in the same script, its
runs alternating with the C's (each figure the best of `--rounds`); check
the C output against the untiled reference (int8 bit-exact, float32 relative
1e-5). Memory: the C program's fast and slow arenas beside onnxruntime's
peak memory growth during one inference (the process's peak resident set,
reset just before the run, minus its resident set then), measured in a child
process per model. The target: float32 at 256K within 2x of onnxruntime.

`--profile` also builds each row with `-DTIGRIS_PROFILE` and prints where its
time goes: per op kind and kernel family (`nn.conv tg_dw` is a depthwise
kernel, `tg_pw` a pointwise GEBP, `tg_conv` an im2col or direct one), per copy
direction (slow -> fast loads, fast -> slow spills, fast -> fast line-buffer
shifts) and the boundary transposes, as shares of the run's time-stamp ticks.

`--before REV` (default: BEFORE, the C backend before the performance work of
issue 10; `--before none` leaves it out) prints the same plans with the printer
of that git revision too, built with the same flags and timed alternately with
today's in the same run: the "before ms" and "before / ort" columns. The
table's title names the host's ISA.

    python bench/network.py [--models mobilenet_v2,resnet,ds_cnn] [--budgets 256K,64K]
                            [--dtypes f32,int8] [--repeat 20] [--rounds 3] [--profile]
                            [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table
from xdsl.context import Context

from tigris_ir.passes.lower_gebp import tile_and_lower
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.backend.c.build import build, execute, profile_of
from tigris_ir.backend.c.network import CSource, print_network
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import parse_budget
from tigris_ir.reference.executor import module_layouts, run_function, to_boundary, to_internal

_ORT_CHILD = r"""
import json, sys, time
import numpy as np
import onnxruntime as ort

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0

path, xpath, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
x = np.load(xpath)
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.log_severity_level = 3
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
name = sess.get_inputs()[0].name
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
before = status("VmRSS")
y = sess.run(None, {name: x})[0]
peak = status("VmHWM") - before
best = float("inf")
for _ in range(3):
    t = time.perf_counter()
    for _ in range(repeat):
        sess.run(None, {name: x})
    best = min(best, (time.perf_counter() - t) / repeat)
np.save(sys.argv[4], y)
print(json.dumps({"seconds": best, "peak_bytes": peak}))
"""


BEFORE = "bae3857"
"""The revision whose printer the "before" columns run."""

_BEFORE_CHILD = r"""
import json, os, sys
# the editable install of today's tree resolves any module the revision lacks:
# without its finders every project module comes from the revision or fails
sys.meta_path[:] = [f for f in sys.meta_path
                    if not getattr(f, "__module__", "").startswith("__editable__")]
import numpy as np
import zoo
from xdsl.context import Context
import tigris_ir
from tigris_ir.passes.lower_to_loops import LowerToLoopsPass
from tigris_ir.passes.plan_arena import PlanArenaPass
from tigris_ir.backend.c.network import print_network
from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.plan.memory import parse_budget
try:  # revisions whose printer no longer chooses the register tiles itself
    from tigris_ir.passes.lower_gebp import tile_and_lower
except ImportError:
    tile_and_lower = None

name, dtype, budget = sys.argv[1], sys.argv[2], sys.argv[3]
model = zoo.build(name, size="full", int8=dtype == "int8")
imp = import_model(model, origin=name)
LowerToLoopsPass(budget=parse_budget(budget)).apply(Context(), imp.module)
if tile_and_lower is not None:
    tile_and_lower(imp.module)
PlanArenaPass().apply(Context(), imp.module)
src = print_network(imp.module, weights=imp.weights)
project = ("tigris_ir", "dialects", "passes", "tools", "zoo")
files = sorted({os.path.realpath(m.__file__) for k, m in list(sys.modules.items())
                if k.split(".")[0] in project and getattr(m, "__file__", None)})
json.dump({"c": src.c, "h": src.h, "fast": src.fast_arena, "slow": src.slow_arena,
           "package": tigris_ir.__file__, "files": files}, open(sys.argv[4], "w"))
"""


def link_packages(tree: Path) -> None:
    """Make the exported tree importable as its install would be: every package
    its pyproject maps to another folder (setuptools' package-dir, e.g.
    tigris_ir.passes -> passes/) gets a link at its import path."""
    pyproject = tree / "pyproject.toml"
    if not pyproject.exists():
        return
    cfg = tomllib.loads(pyproject.read_text())
    dirs = cfg.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    for name, folder in dirs.items():
        path = tree.joinpath(*name.split(".")) if name else tree
        target = tree / folder
        if name and not path.exists() and not path.is_symlink() and target.is_dir():
            path.symlink_to(os.path.relpath(target, path.parent))


def foreign_modules(tree: Path, files: list[str]) -> list[str]:
    """The project modules a revision's child imported from outside its tree."""
    root = os.path.realpath(tree) + os.sep
    return [f for f in files if not f.startswith(root)]


def export_revision(rev: str, into: Path) -> Path | None:
    """The tree of git revision `rev` of this repository under `into`, or None."""
    root = Path(__file__).resolve().parents[1]
    tree = into / f"rev-{rev}"
    if tree.exists():
        return tree
    try:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", rev], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    tree.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    link_packages(tree)
    return tree


def before_source(tree: Path, today: CSource, name: str, dtype: str, budget: str) -> CSource:
    """The network of the same plan as printed by the exported revision."""
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "src.json"
        env = dict(os.environ, PYTHONPATH=f"{tree}{os.pathsep}{tree / 'tests'}")
        subprocess.run(
            [sys.executable, "-c", _BEFORE_CHILD, name, dtype, budget, str(out)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(out.read_text())
    foreign = foreign_modules(tree, [str(got["package"]), *got["files"]])
    if foreign:
        raise RuntimeError(f"the revision's child imported {', '.join(foreign[:3])}")
    return CSource(
        today.name, got["c"], got["h"], today.inputs, today.outputs, got["fast"], got["slow"]
    )


def isa_name() -> str:
    """The host's vector ISA as the C build sees it (-march=native)."""
    from tigris_ir.rtile.targets import host_target

    t = host_target()
    isa = {"avx512": "AVX-512", "avx2": "AVX2", "sse": "SSE", "neon": "NEON"}.get(t.isa, t.isa)
    return f"{isa}{' with VNNI' if t.vnni else ''}"


def ort_run(data: bytes, x: np.ndarray, repeat: int) -> tuple[float, int, np.ndarray]:
    """onnxruntime's best mean latency, its peak memory growth, its output."""
    with tempfile.TemporaryDirectory() as d:
        model, xp, yp = Path(d) / "m.onnx", Path(d) / "x.npy", Path(d) / "y.npy"
        model.write_bytes(data)
        np.save(xp, x)
        res = subprocess.run(
            [sys.executable, "-c", _ORT_CHILD, str(model), str(xp), str(repeat), str(yp)],
            capture_output=True,
            text=True,
            check=True,
        )
        fig = json.loads(res.stdout.strip().splitlines()[-1])
        return float(fig["seconds"]), int(fig["peak_bytes"]), np.load(yp)


def agree(a: np.ndarray, b: np.ndarray) -> str:
    if a.dtype != np.float32:
        d = int(np.max(np.abs(a.astype(np.int64) - b.astype(np.int64)))) if a.size else 0
        return "exact" if d == 0 else f"{d} LSB"
    rel = float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)
    return "equal" if rel <= 1e-5 else f"rel {rel:.1e}"


def kib(n: int) -> str:
    return f"{n / 1024:.1f}K"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    ap.add_argument("--models", default="mobilenet_v2,resnet,ds_cnn")
    ap.add_argument("--budgets", default="256K,64K")
    ap.add_argument("--dtypes", default="f32,int8")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3, help="timed runs per build (the best)")
    ap.add_argument("--profile", action="store_true", help="time per op kind, copy, boundary")
    ap.add_argument("--before", default=BEFORE, help="a git revision to compare, or 'none'")
    args = ap.parse_args()
    profiles: list[tuple[str, dict[str, tuple[float, int]]]] = []
    scratch = Path(tempfile.mkdtemp(prefix="tigris-bench-net-"))
    tree = None if args.before == "none" else export_revision(args.before, scratch)
    table = Table(
        title=f"Generated C (one thread, -O3 -march=native, {isa_name()}) against onnxruntime "
        "(ORT_ENABLE_ALL, one intra-op thread), full-size models"
    )
    before_cols = (f"{args.before} ms", f"{args.before} / ort") if tree is not None else ()
    for col in (
        "model",
        "dtype",
        "budget",
        *before_cols,
        "C ms",
        "ort ms",
        "C / ort",
        "fast arena",
        "slow arena",
        "ort peak",
        "vs reference",
        "print+build s",
    ):
        table.add_column(col, justify="left" if col in ("model", "dtype") else "right")
    for name in args.models.split(","):
        for dtype in args.dtypes.split(","):
            model = zoo.build(name, size="full", int8=dtype == "int8")
            data = model.SerializeToString()
            rng = np.random.default_rng(7)
            x = rng.standard_normal(tuple(zoo.input_shape(model))).astype(np.float32)
            imp = import_model(model, origin=name)
            fn = main_func(imp.module)
            layouts = module_layouts(fn)
            ref = run_function(fn, imp.weights, [to_internal(x, layouts[0][0])])[0]
            ref = to_boundary(ref, layouts[1][0])
            t_ort, ort_peak, _ = ort_run(data, x, args.repeat)
            for budget in args.budgets.split(","):
                module = import_model(model, origin=name).module
                t = time.perf_counter()
                try:
                    LowerToLoopsPass(budget=parse_budget(budget)).apply(Context(), module)
                    tile_and_lower(module)
                    PlanArenaPass().apply(Context(), module)
                    source = print_network(module, weights=imp.weights)
                    exe = build(source)
                except Exception as e:  # noqa: BLE001 - a row says what failed
                    table.add_row(name, dtype, budget, f"[red]{type(e).__name__}: {e}"[:80])
                    continue
                t_build = time.perf_counter() - t
                before: tuple[str, ...] = ()
                old_exe = None
                if tree is not None:
                    try:
                        old = before_source(tree, source, name, dtype, budget)
                        old_exe = build(old)
                    except Exception as e:  # noqa: BLE001 - the column says what failed
                        before = (f"{type(e).__name__}"[:20], "")
                # the best of `--rounds` runs each, today's, the revision's and
                # onnxruntime's alternately: a shared machine's load moves all three
                outs, fig = execute(source, exe, [x], repeat=args.repeat)
                t_c, t_old = fig["time"], float("inf")
                for k in range(args.rounds):
                    if old_exe is not None:
                        t = execute(old, old_exe, [x], repeat=args.repeat)[1]["time"]
                        t_old = min(t_old, t)
                    if k:
                        t_c = min(t_c, execute(source, exe, [x], repeat=args.repeat)[1]["time"])
                        t_ort = min(t_ort, ort_run(data, x, args.repeat)[0])
                if old_exe is not None:
                    before = (f"{t_old * 1e3:.2f}", f"{t_old / t_ort:.2f}x")
                elif tree is not None and not before:
                    before = ("", "")
                if args.profile:
                    pexe = build(source, variant="profile")
                    _, pfig = execute(source, pexe, [x], repeat=args.repeat)
                    profiles.append((f"{name} {dtype} {budget}", profile_of(pfig)))
                table.add_row(
                    name,
                    dtype,
                    budget,
                    *before,
                    f"{t_c * 1e3:.2f}",
                    f"{t_ort * 1e3:.2f}",
                    f"{t_c / t_ort:.2f}x",
                    kib(source.fast_arena),
                    kib(source.slow_arena),
                    kib(ort_peak),
                    agree(outs[0], ref),
                    f"{t_build:.1f}",
                )
    os.environ.setdefault("COLUMNS", "160")
    console = Console(width=160)
    console.print(table)
    if profiles:
        console.print(profile_table(profiles, args.repeat + 1))
    shutil.rmtree(scratch, ignore_errors=True)


def profile_table(profiles: list[tuple[str, dict[str, tuple[float, int]]]], runs: int) -> Table:
    """Per row, the share of the run's ticks of each label (op kind and kernel
    family, copy direction, boundary), largest first, with its calls per run."""
    table = Table(title="Where the time goes (-DTIGRIS_PROFILE, time-stamp ticks)")
    for col in ("row", "label", "share", "calls / run"):
        table.add_column(col, justify="left" if col in ("row", "label") else "right")
    for row, prof in profiles:
        total = prof["total"][0] or 1.0
        items = sorted(((k, v) for k, v in prof.items() if k != "total"), key=lambda kv: -kv[1][0])
        for i, (label, (ticks, calls)) in enumerate(items):
            if ticks / total < 0.005:
                continue
            table.add_row(
                row if i == 0 else "", label, f"{100 * ticks / total:.1f}%", f"{calls / runs:.0f}"
            )
    return table


if __name__ == "__main__":
    main()
