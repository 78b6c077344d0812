"""`tigris-analyze`: the memory plan of a model at a glance.

    tigris-analyze MODEL -m 256K [-v] [--json] [--min-budget]

MODEL is `.onnx` or `.mlir` (as printed by tigris-opt). The table shows the
graph (operators, tensors, the layer-by-layer peak, the largest tensor), the
plan under the budget (fits, planned peak, slow-memory peak, reads, writes,
recomputed MACs) and the compile time; `-v` adds one row per stage in the
words of spec/tiling.md; `--json` prints one object instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tigris_ir.tools.cli import UserError, run_main

PROG = "tigris-analyze"


class AnalyzeError(UserError):
    """A user-facing problem: `tigris-analyze: error: ...`, exit 1."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").splitlines()[0])
    p.add_argument("model", help="the model: .onnx, or .mlir as printed by tigris-opt")
    p.add_argument(
        "-m",
        "--budget",
        default="256K",
        help="fast-memory budget: bytes, or with K / M (default 256K)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="one row per stage")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--min-budget", action="store_true", help="also search the smallest budget that fits"
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:DxDxD",
        help="shape of an ONNX input with symbolic dimensions",
    )
    return p


def analyze(
    path: Path, budget: int, shapes: dict[str, tuple[int, ...]], with_min: bool
) -> dict[str, Any]:
    """Import (or parse), plan, and collect the figures of the report."""
    from tigris_ir.tools.tigris_run import load_module

    from tigris_ir.nn_graph import build_view
    from tigris_ir.plan_ir import main_func
    from tigris_ir.planner import min_budget, normal_peak, plan
    from tigris_ir.tiling import GraphTables

    t0 = time.perf_counter()
    module, _ = load_module(path, shapes, need_weights=False)
    view = build_view(main_func(module))
    p = plan(view.graph, budget)
    compile_s = time.perf_counter() - t0
    g = view.graph
    acts = [t for t in g.tensors.values() if not t.is_const]
    largest = max(acts, key=lambda t: t.nbytes)
    naive = normal_peak(g, 0, len(g.nodes), GraphTables(g)) if g.nodes else 0
    chain_of = {s.index: s.chain for s in p.stages}
    out: dict[str, Any] = {
        "model": str(path),
        "operators": len(g.nodes),
        "tensors": len(acts),
        "naive_peak_bytes": naive,
        "largest_tensor": largest.name,
        "largest_tensor_bytes": largest.nbytes,
        "fits": p.fits,
        "budget_bytes": budget,
        "peak_bytes": p.peak,
        "slow_peak_bytes": p.slow_peak,
        "slow_read_bytes": p.slow_reads,
        "slow_write_bytes": p.slow_writes,
        "macs": p.macs,
        "recompute_macs": p.recomputed_macs,
        "compile_seconds": round(compile_s, 4),
        "not_fitting": [p.failed_node] if p.failed_node else [],
        "not_fitting_min_budget_bytes": p.failed_min_budget,
        "in_place": p.in_place,
        "stages": [
            {
                "name": f"s{s.index}",
                "ops": list(s.nodes),
                "strategy": s.strategy,
                "description": s.describe(),
                "tiles": s.num_tiles,
                "tile_h": s.tile_h,
                "tile_w": s.tile_w,
                "halo": s.halo,
                "peak_bytes": s.peak,
                "chain": f"c{chain_of[s.index]}" if chain_of[s.index] is not None else None,
                "line_buffered": bool(s.chain is not None and p.chains[s.chain].line_buffered),
                "fits": s.fits,
            }
            for s in p.stages
        ],
        "chains": [
            {
                "name": f"c{c.index}",
                "stages": [f"s{i}" for i in c.stages],
                "tile_h": c.tile_h,
                "tiles": c.num_tiles,
                "halo": c.halo,
                "line_buffered": c.line_buffered,
                "peak_bytes": c.peak,
                "description": c.describe(),
            }
            for c in p.chains
        ],
    }
    if with_min:
        t0 = time.perf_counter()
        out["min_budget_bytes"] = min_budget(g)
        out["min_budget_seconds"] = round(time.perf_counter() - t0, 4)
    return out


def _kib(n: int | None) -> str:
    if n is None:
        return "-"
    from tigris_ir.memory import format_bytes

    return format_bytes(n)


def render(r: dict[str, Any], verbose: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=int(os.environ.get("COLUMNS", "120")))
    t = Table(title=f"TiGrIS plan of {r['model']}", show_header=False)
    t.add_column("what", style="bold")
    t.add_column("value", justify="right")
    macs = max(r["macs"], 1)
    rows = [
        ("operators", str(r["operators"])),
        ("tensors", str(r["tensors"])),
        ("layer-by-layer peak", _kib(r["naive_peak_bytes"])),
        ("largest tensor", f"{_kib(r['largest_tensor_bytes'])} ({r['largest_tensor']})"),
        ("budget", _kib(r["budget_bytes"])),
        ("planned peak", _kib(r["peak_bytes"])),
        ("fits", "yes" if r["fits"] else "[red]no[/red]"),
        ("slow-memory peak", _kib(r["slow_peak_bytes"])),
        ("slow reads", _kib(r["slow_read_bytes"])),
        ("slow writes", _kib(r["slow_write_bytes"])),
        ("MACs", f"{r['macs']:,}"),
        ("recomputed MACs", f"{r['recompute_macs']:,} ({100 * r['recompute_macs'] / macs:.2f}%)"),
        ("stages / chains", f"{len(r['stages'])} / {len(r['chains'])}"),
        ("compile time", f"{r['compile_seconds']:.3f} s"),
    ]
    if not r["fits"]:
        rows.insert(
            7,
            (
                "does not fit",
                f"{r['not_fitting'][0]}: needs at least {_kib(r['not_fitting_min_budget_bytes'])}",
            ),
        )
    if "min_budget_bytes" in r:
        rows.append(("smallest budget that fits", _kib(r["min_budget_bytes"])))
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
    if verbose:
        s = Table(title="stages")
        for col in ("stage", "ops", "strategy", "tiling", "peak", "chain"):
            s.add_column(col, justify="right" if col == "peak" else "left")
        for st in r["stages"]:
            ops = st["ops"]
            shown = ", ".join(ops) if len(ops) <= 3 else f"{ops[0]} .. {ops[-1]} ({len(ops)})"
            chain = st["chain"] or ""
            if chain and st["line_buffered"]:
                chain += ", line-buffered"
            s.add_row(
                st["name"], shown, st["strategy"], st["description"], _kib(st["peak_bytes"]), chain
            )
        console.print(s)
        if r["chains"]:
            c = Table(title="chains")
            for col in ("chain", "stages", "tiling", "peak"):
                c.add_column(col)
            for ch in r["chains"]:
                c.add_row(
                    ch["name"],
                    f"{ch['stages'][0]}..{ch['stages'][-1]}",
                    ch["description"],
                    _kib(ch["peak_bytes"]),
                )
            console.print(c)


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from tigris_ir.memory import parse_budget
    from tigris_ir.onnx_import import parse_shape_spec

    try:
        budget = parse_budget(args.budget)
    except ValueError as e:
        raise AnalyzeError(str(e)) from None
    path = Path(args.model)
    if not path.exists():
        raise AnalyzeError(f"cannot open '{path}': no such file")
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in args.input_shape:
        try:
            name, dims = parse_shape_spec(spec)
        except ValueError as e:
            raise AnalyzeError(str(e)) from None
        shapes[name] = dims
    report = analyze(path, budget, shapes, args.min_budget)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        render(report, args.verbose)
    return 0 if report["fits"] else 1


def main() -> int:
    return run_main(PROG, run)


if __name__ == "__main__":
    sys.exit(main())
