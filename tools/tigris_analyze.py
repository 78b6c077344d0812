"""`tigris-analyze`: the memory plan of a model at a glance.

    tigris-analyze MODEL -m 256K [--slow-budget BYTES] [-v] [--json] [--min-budget]
                   [--frontier]

MODEL is `.onnx` or `.mlir` (as printed by tigris-opt). The table shows the
graph (operators, tensors, the layer-by-layer peak, the largest tensor), the
plan under the budget (fits, planned peak, slow-memory peak, reads, writes,
recomputed MACs) and the compile time; `-v` adds one row per stage in the
words of spec/tiling.md and one per chain with the MACs it recomputes
(`--json`: per stage too, a chain member its share); `--json` prints one
object instead. `--slow-budget`
bounds the slow memory too (0: none, one SRAM holds everything; in such a
single-arena plan `-v` also shows what each unit holds beside its buffers
and which unit sets the peak);
`--min-budget` searches the smallest fast budget beside it (without `-m`
the report is the plan at that budget), `--frontier`
plans from there up to the layer-by-layer peak (budget, peak, recomputed
MACs, slow traffic).
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

from tigris_ir.tools.cli import Diagnostic, Once, UserError, one_line_usage, run_main

PROG = "tigris-analyze"
DEFAULT_BUDGET = 256 * 1024


class AnalyzeError(UserError):
    """A user-facing problem: `tigris-analyze: error: ...`, exit 1."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=(__doc__ or "").splitlines()[0])
    p.add_argument("model", help="the model: .onnx, or .mlir as printed by tigris-opt")
    p.add_argument(
        "-m",
        "--budget",
        action=Once,
        default=None,
        help="fast-memory budget: bytes, or with K / M (default 256K; with --min-budget and "
        "no -m, the plan shown is the one at the smallest budget that fits)",
    )
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="one row per stage and per chain (in a single-arena plan with what each holds "
        "beside its buffers and which sets the peak)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--slow-budget",
        metavar="BYTES",
        help="slow-memory budget (default unbounded; 0: no slow memory, every tensor in the "
        "fast arena)",
    )
    p.add_argument(
        "--stream-input",
        action="store_true",
        help="the model inputs arrive in bands of rows (resident nowhere)",
    )
    p.add_argument(
        "--reread-input",
        action="store_true",
        help="the streamed inputs may be asked again, in windows of rows and columns (a frame "
        "buffer or flash, not a sensor read once): units reading them may tile in 2D and in "
        "column bands; implies --stream-input",
    )
    p.add_argument(
        "--stream-output",
        action="store_true",
        help="the model outputs nothing reads (feature maps) leave in bands of rows "
        "(resident nowhere)",
    )
    p.add_argument(
        "--min-budget",
        action="store_true",
        help="search the smallest fast budget that fits (beside --slow-budget); without -m "
        "the report is the plan at that budget",
    )
    p.add_argument(
        "--frontier",
        action="store_true",
        help="plans from the smallest fast budget up to the layer-by-layer peak: budget, "
        "peak, recomputed MACs, slow traffic",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="draw the plan's memory over the schedule (and with --frontier the frontier) "
        "to FILE.png or FILE.svg (needs matplotlib: pip install '.[plot]')",
    )
    p.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:DxDxD",
        help="shape of an ONNX input with symbolic dimensions",
    )
    p.add_argument(
        "--boundary",
        choices=("float", "int8"),
        default="float",
        help="plan with the model's float32 NCHW inputs and outputs (default) or int8: the "
        "quantized input and output as they are (the boundary pass), one byte per element",
    )
    one_line_usage(p)
    return p


def analyze(
    path: Path,
    budget: int | None,
    shapes: dict[str, tuple[int, ...]],
    with_min: bool,
    slow_budget: int | None = None,
    with_frontier: bool = False,
    stream_input: bool = False,
    stream_output: bool = False,
    boundary: str = "float",
    reread_input: bool = False,
) -> dict[str, Any]:
    """Import (or parse), plan, and collect the figures of the report.

    A model with If / Loop is a tree of graphs: the top-level figures are the
    whole model's (an If or Loop node holds its largest body's peak; MACs and
    slow traffic count the largest branch of an If and every trip of a bounded
    Loop, once for a loop the condition alone ends; the slow peak adds the
    largest body's to the enclosing graph's, an upper bound), and `bodies`
    lists each body's own plan, nested as the bodies are.
    """
    from tigris_ir.dialects import nn
    from tigris_ir.passes.boundary import is_int8_boundary
    from tigris_ir.passes.plan_arena import is_lowered
    from tigris_ir.plan.ir import (
        first_failure,
        layer_by_layer_peak,
        main_func,
        plan_tree,
        scope_need,
        tree_min_budget,
    )
    from tigris_ir.plan.nn_graph import build_view
    from tigris_ir.plan.planner import frontier, min_fast_budget
    from tigris_ir.tools.tigris_run import load_module

    t0 = time.perf_counter()
    module, _ = load_module(path, shapes, need_weights=False)
    fn = main_func(module)
    if is_lowered(fn):
        raise AnalyzeError(
            f"'{path}' is a placed loop-level plan (after --lower-to-loops): its figures are "
            "its loop.plan attribute; analyze the model or its nn / tile-level IR instead"
        )
    _set_boundary(module, boundary, path)
    stream_input = stream_input or reread_input
    streaming = stream_input or stream_output
    found: dict[str, Any] = {}
    if with_min:
        if (slow_budget is not None or streaming) and any(
            isinstance(op, nn.ControlFlowOp) for op in fn.walk()
        ):
            raise AnalyzeError(
                f"'{path}': --min-budget and --frontier beside --slow-budget "
                "and --stream-input cover models without If / Loop only"
            )
        t_min = time.perf_counter()
        if slow_budget is None and not streaming:
            found["min_budget_bytes"] = tree_min_budget(fn)
        else:
            found["min_budget_bytes"] = min_fast_budget(
                build_view(fn).graph, slow_budget, stream_input, stream_output, reread_input
            )
        found["min_budget_seconds"] = round(time.perf_counter() - t_min, 4)
    if budget is None:
        budget = int(found.get("min_budget_bytes", DEFAULT_BUDGET))
    tree = plan_tree(
        fn,
        budget,
        slow_budget=slow_budget,
        stream_input=stream_input,
        stream_output=stream_output,
        reread_input=reread_input,
    )
    compile_s = time.perf_counter() - t0 - found.get("min_budget_seconds", 0.0)
    view, p = tree.view, tree.plan
    assert p is not None
    g = view.graph
    acts = [t for t in g.tensors.values() if not t.is_const and t.name not in view.workspace]
    largest = max(acts, key=lambda t: t.nbytes)
    naive = layer_by_layer_peak(fn)
    failed = first_failure(tree)
    figures = _figures(tree)
    out: dict[str, Any] = {
        "model": str(path),
        "operators": len(g.nodes),
        "tensors": len(acts),
        "naive_peak_bytes": naive,
        "largest_tensor": largest.name,
        "largest_tensor_bytes": largest.nbytes,
        "fits": tree.fits,
        "budget_bytes": budget,
        "peak_bytes": p.peak,
        "slow_peak_bytes": figures["slow_peak_bytes"],
        "slow_read_bytes": figures["slow_read_bytes"],
        "slow_write_bytes": figures["slow_write_bytes"],
        "macs": p.macs,
        "recompute_macs": figures["recompute_macs"],
        "compile_seconds": round(compile_s, 4),
        "not_fitting": [_failed_name(failed)] if failed is not None else [],
        "not_fitting_model_node": _failed_model_node(failed) if failed is not None else None,
        "not_fitting_min_budget_bytes": scope_need(tree, failed) if failed is not None else None,
        "in_place": p.in_place,
        "slow_budget_bytes": slow_budget,
        "single_arena": p.single_arena,
        "stream_input": p.stream_input,
        "reread_input": p.reread_input,
        "stream_rows": p.stream_rows,
        "stream_bytes": p.stream_bytes,
        "stream_output": p.stream_output,
        "output_rows": p.out_rows,
        "stream_rows_by": dict(p.stream_rows_by),
        "output_rows_by": dict(p.out_rows_by),
        "not_fitting_message": p.message if not p.fits else None,
        "stages": _stages(tree),
        "chains": _chains(tree),
        "boundary": "int8" if is_int8_boundary(module) else "float",
        "inputs": [
            _port(g.tensors[n], a.type) for n, a in zip(g.inputs, fn.body.block.args)
        ],
        "outputs": [
            _port(g.tensors[n], t) for n, t in zip(g.outputs, fn.function_type.outputs.data)
        ],
    }
    if tree.bodies:
        out["bodies"] = [_body(b) for b in tree.bodies]
    flat = not tree.bodies
    if with_frontier and (slow_budget is not None or streaming) and not flat:
        raise AnalyzeError(
            f"'{path}': --min-budget and --frontier beside --slow-budget "
            "and --stream-input cover models without If / Loop only"
        )
    out.update(found)
    if with_frontier:
        if not flat:
            raise AnalyzeError(f"'{path}': --frontier covers models without If / Loop only")
        out["frontier"] = [
            {
                "budget_bytes": q.budget,
                "peak_bytes": q.peak,
                "slow_peak_bytes": q.slow_peak,
                "slow_traffic_bytes": q.slow_reads + q.slow_writes,
                "recompute_macs": q.recomputed_macs,
                "recompute_percent": round(100 * q.recomputed_macs / max(q.macs, 1), 3),
                "single_arena": q.single_arena,
            }
            for q in frontier(
                g,
                slow_budget,
                stream_input=stream_input,
                stream_output=stream_output,
                reread_input=reread_input,
            )
        ]
    return out


def _set_boundary(module: Any, boundary: str, path: Path) -> None:
    """The boundary pass, as --boundary asks (a diagnostic when the model breaks its rule)."""
    from xdsl.utils.exceptions import PassFailedException

    from tigris_ir.passes.boundary import is_int8_boundary, set_int8_boundary

    if boundary != "int8" or is_int8_boundary(module):
        return
    try:
        set_int8_boundary(module)
    except PassFailedException as e:
        raise Diagnostic(str(path), str(e)) from None


def _port(info: Any, t: Any) -> dict[str, Any]:
    """A model input or output as the plan holds it: bytes, element type, shape."""
    from tigris_ir.dialects import nn

    dt = str(nn.element_dtype(t.element_type))
    return {"name": info.name, "bytes": info.nbytes, "dtype": dt, "shape": list(info.shape)}


def _failed_name(sc: Any) -> str:
    """A failing op by its path: `conv_0`, `if0/then/conv_0`; a control-flow
    node whose operands leave its bodies nothing is named in its own graph."""
    if sc.error is not None:
        parent = sc.path.rsplit("/", 2)[0] if sc.path.count("/") >= 2 else ""
        return f"{parent}/{sc.owner}" if parent else str(sc.owner)
    return f"{sc.prefix}{sc.plan.failed_node}"


def _failed_model_node(sc: Any) -> str | None:
    """The failing op as the model names it (`node 0 'conv1' (Conv)`), when it
    was imported from a model node."""
    from tigris_ir.dialects import nn

    if sc.error is not None or sc.plan.failed_node is None:
        return None
    op = sc.view.ops.get(sc.plan.failed_node)
    return nn.model_node_of(op) if op is not None else None


def _held(sc: Any) -> Any:
    """Per unit of a single-arena plan, the tensors held beside its buffers."""
    from tigris_ir.plan.planner import plan_residents

    p = sc.plan
    residents = plan_residents(sc.view.graph, p)

    def held(unit: Any) -> dict[str, Any]:
        """A stage's or chain's resident figures (a chain member: its chain's)."""
        if getattr(unit, "chain", None) is not None:
            unit = p.chains[unit.chain]
        found = residents.held_by(unit) if residents is not None else []
        return {
            "resident_bytes": unit.resident,
            "resident": [{"tensor": name, "bytes": size} for name, size in found],
            "sets_peak": p.fits and unit.peak + unit.resident == p.peak,
        }

    return held


def _stages(sc: Any) -> list[dict[str, Any]]:
    p = sc.plan
    if p is None:
        return []
    chain_of = {s.index: s.chain for s in p.stages}
    held = _held(sc)
    return [
        {
            "name": f"{sc.prefix}s{s.index}",
            "ops": list(s.nodes),
            "strategy": s.strategy,
            "description": s.describe(),
            "tiles": s.num_tiles,
            "tile_h": s.tile_h,
            "tile_w": s.tile_w,
            "halo": s.halo,
            "peak_bytes": s.peak,
            "chain": f"{sc.prefix}c{chain_of[s.index]}" if chain_of[s.index] is not None else None,
            "line_buffered": bool(s.chain is not None and p.chains[s.chain].line_buffered),
            "recompute_macs": s.recomputed_macs,
            "fits": s.fits,
            **held(s),
        }
        for s in p.stages
    ]


def _chains(sc: Any) -> list[dict[str, Any]]:
    p = sc.plan
    if p is None:
        return []
    held = _held(sc)
    return [
        {
            "name": f"{sc.prefix}c{c.index}",
            "stages": [f"{sc.prefix}s{i}" for i in c.stages],
            "tile_h": c.tile_h,
            "tiles": c.num_tiles,
            "halo": c.halo,
            "line_buffered": c.line_buffered,
            "pace": c.pace,
            "peak_bytes": c.peak,
            "scratch_bytes": c.scratch_bytes,
            "scratch": sorted(c.scratch),
            "pixel_block": c.pixel_block,
            "pixel_runs": [[sc.view.graph.nodes[k].name for k in r] for r in c.pixel_runs],
            "blocked": list(c.blocked),
            "blocked_columns": dict(c.blocked_cols),
            "window_feeders": [sc.view.graph.nodes[k].name for k in c.feeders],
            "column_bands": len({t.cols for t in c.tiles}) if c.tile_w else 0,
            "band_width": c.tile_w,
            "inputs_in_place": list(c.in_place),
            "recompute_macs": c.recomputed_macs,
            "description": c.describe(),
            **held(c),
        }
        for c in p.chains
    ]


def _figures(sc: Any) -> dict[str, int]:
    """Slow-memory figures and recomputed MACs of a graph with its bodies: an
    If counts its largest branch, a Loop its body times its trip limit (once
    when unbounded); a body's slow peak adds to the graph's."""
    p = sc.plan
    own = {
        "slow_peak_bytes": p.slow_peak if p is not None else 0,
        "slow_read_bytes": p.slow_reads if p is not None else 0,
        "slow_write_bytes": p.slow_writes if p is not None else 0,
        "recompute_macs": p.recomputed_macs if p is not None else 0,
    }
    by_owner: dict[str, list[dict[str, int]]] = {}
    trips: dict[str, int] = {}
    for b in sc.bodies:
        by_owner.setdefault(b.owner, []).append(_figures(b))
        trips[b.owner] = b.trips if b.trips is not None else 1
    deepest = 0
    for owner, figs in by_owner.items():
        deepest = max([deepest] + [f["slow_peak_bytes"] for f in figs])
        for key in ("slow_read_bytes", "slow_write_bytes", "recompute_macs"):
            own[key] += trips[owner] * max(f[key] for f in figs)
    own["slow_peak_bytes"] += deepest
    return own


def _body(sc: Any) -> dict[str, Any]:
    p = sc.plan
    failed = None if sc.own_fits else (sc.owner if sc.error else p.failed_node)
    out: dict[str, Any] = {
        "name": sc.path,
        "op": sc.owner,
        "trips": sc.trips,
        "budget_bytes": max(sc.budget, 0),
        "held_bytes": sc.held,
        "fits": sc.fits,
        "peak_bytes": sc.peak,
        "macs": sc.macs,
        **_figures(sc),
        "not_fitting": [failed] if failed is not None else [],
        "error": sc.error,
        "stages": _stages(sc),
        "chains": _chains(sc),
    }
    if sc.bodies:
        out["bodies"] = [_body(b) for b in sc.bodies]
    return out


def _rows_by(rows: dict[str, int]) -> str:
    """Rows per streamed port: `name rows, ...`."""
    return ", ".join(f"{name} {n}" for name, n in rows.items())


def _kib(n: int | None) -> str:
    if n is None:
        return "-"
    from tigris_ir.plan.memory import format_bytes

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
        (
            f"inputs ({r['boundary']} boundary)",
            ", ".join(f"{_kib(x['bytes'])} {x['dtype']}" for x in r["inputs"]),
        ),
        ("outputs", ", ".join(f"{_kib(x['bytes'])} {x['dtype']}" for x in r["outputs"])),
        ("budget", _kib(r["budget_bytes"])),
        ("planned peak", _kib(r["peak_bytes"])),
        ("fits", "yes" if r["fits"] else "[red]no[/red]"),
        (
            "slow budget",
            "unbounded" if r["slow_budget_bytes"] is None else _kib(r["slow_budget_bytes"]),
        ),
        ("slow-memory peak", _kib(r["slow_peak_bytes"])),
        ("slow reads", _kib(r["slow_read_bytes"])),
        ("slow writes", _kib(r["slow_write_bytes"])),
        ("MACs", f"{r['macs']:,}"),
        ("recomputed MACs", f"{r['recompute_macs']:,} ({100 * r['recompute_macs'] / macs:.2f}%)"),
        ("stages / chains", f"{len(r['stages'])} / {len(r['chains'])}"),
        ("compile time", f"{r['compile_seconds']:.3f} s"),
    ]
    if r["single_arena"]:
        rows.insert(8, ("one arena", "every tensor in fast memory, none in slow"))
    if r["stream_input"]:
        asked = f"{r['stream_rows']} rows, {_kib(r['stream_bytes'])}"
        if r["reread_input"]:
            asked += " (windows, some asked again)"
        rows.append(("input streamed", asked))
        if len(r["stream_rows_by"]) > 1:
            rows.append(("  by input", _rows_by(r["stream_rows_by"])))
    if r["stream_output"]:
        rows.append(("output streamed", f"{r['output_rows']} rows"))
        if len(r["output_rows_by"]) > 1:
            rows.append(("  by output", _rows_by(r["output_rows_by"])))
    if not r["fits"]:
        rows.insert(
            7,
            (
                "does not fit",
                f"{r['not_fitting_model_node'] or r['not_fitting'][0]}: needs at least "
                f"{_kib(r['not_fitting_min_budget_bytes'])}",
            ),
        )
    bodies = _all_bodies(r.get("bodies", []))
    if bodies:
        ok = sum(1 for b in bodies if b["fits"] and not b["error"])
        rows.append(("If / Loop bodies", f"{len(bodies)} ({ok} fit their share)"))
    if "min_budget_bytes" in r:
        rows.append(("smallest budget that fits", _kib(r["min_budget_bytes"])))
    for k, v in rows:
        t.add_row(k, v)
    console.print(t)
    if not r["fits"] and r["not_fitting_message"] and r["slow_budget_bytes"] is not None:
        console.print(r["not_fitting_message"], markup=False)
    if "frontier" in r:
        f = Table(title="memory against recomputed MACs and slow traffic")
        for col in ("budget", "peak", "slow peak", "slow traffic", "recomputed MACs", "one arena"):
            f.add_column(col, justify="right")
        for row in r["frontier"]:
            f.add_row(
                _kib(row["budget_bytes"]),
                _kib(row["peak_bytes"]),
                _kib(row["slow_peak_bytes"]),
                _kib(row["slow_traffic_bytes"]),
                f"{row['recompute_macs']:,} ({row['recompute_percent']:.2f}%)",
                "yes" if row["single_arena"] else "no",
            )
        console.print(f)
    if verbose:
        console.print(_stage_table("stages", r["stages"]))
        _chain_table(console, r["chains"], "chains")
        _held_table(console, r)
        for body in _all_bodies(r.get("bodies", [])):
            _body_tables(console, body)


def _all_bodies(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in bodies:
        out.append(b)
        out.extend(_all_bodies(b.get("bodies", [])))
    return out


def _stage_table(title: str, stages: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    s = Table(title=title)
    for col in ("stage", "ops", "strategy", "tiling", "peak", "chain"):
        s.add_column(col, justify="right" if col == "peak" else "left")
    for st in stages:
        ops = st["ops"]
        shown = ", ".join(ops) if len(ops) <= 3 else f"{ops[0]} .. {ops[-1]} ({len(ops)})"
        chain = st["chain"] or ""
        if chain and st["line_buffered"]:
            chain += ", line-buffered"
        s.add_row(
            st["name"], shown, st["strategy"], st["description"], _kib(st["peak_bytes"]), chain
        )
    return s


def _chain_table(console: Any, chains: list[dict[str, Any]], title: str) -> None:
    from rich.table import Table

    if not chains:
        return
    c = Table(title=title)
    for col in ("chain", "stages", "tiling", "peak", "of it scratch", "recomputed MACs"):
        c.add_column(col, justify="right" if col == "recomputed MACs" else "left")
    for ch in chains:
        n = len(ch["scratch"])
        c.add_row(
            ch["name"],
            f"{ch['stages'][0]}..{ch['stages'][-1]}",
            ch["description"],
            _kib(ch["peak_bytes"]),
            f"{_kib(ch['scratch_bytes'])} ({n} buffers)" if n else "",
            f"{ch['recompute_macs']:,}",
        )
    console.print(c)


def _held_table(console: Any, r: dict[str, Any]) -> None:
    """A single-arena plan, unit by unit: its own buffers' peak, the tensors
    resident beside them (largest first) and whether the two reach the plan's
    peak."""
    from rich.table import Table

    if not r["single_arena"] or not r["stages"]:
        return
    t = Table(title="one arena: what each unit holds beside its buffers")
    for col in ("unit", "buffers", "held beside", "tensors held", "sets the peak"):
        t.add_column(col, justify="right" if col in ("buffers", "held beside") else "left")
    members = {name for c in r["chains"] for name in c["stages"]}
    first = {s["name"]: i for i, s in enumerate(r["stages"])}
    units = [s for s in r["stages"] if s["name"] not in members] + r["chains"]
    units.sort(key=lambda u: first[u.get("stages", [u["name"]])[0]])
    for u in units:
        names = [h["tensor"] for h in u["resident"]]
        shown = ", ".join(names[:3]) + (f" +{len(names) - 3}" if len(names) > 3 else "")
        t.add_row(
            u["name"],
            _kib(u["peak_bytes"]),
            _kib(u["resident_bytes"]),
            shown,
            "yes" if u["sets_peak"] else "",
        )
    console.print(t)


def _body_tables(console: Any, b: dict[str, Any]) -> None:
    """One body's plan: where it runs, its share of the budget, fits or not."""
    runs = (
        "once"
        if b["op"].startswith("if")
        else (
            f"up to {b['trips']} trips" if b["trips"] is not None else "while its condition holds"
        )
    )
    head = f"{b['name']} (body of {b['op']}, {runs})"
    if b["error"]:
        console.print(f"{head}: [red]does not fit[/red]: {b['error']}")
        return
    fits = "fits" if b["fits"] else "[red]does not fit[/red]"
    title = (
        f"{head}: {fits} {_kib(b['budget_bytes'])} ({_kib(b['held_bytes'])} held by "
        f"{b['op']}), peak {_kib(b['peak_bytes'])}"
    )
    if not b["stages"]:
        console.print(f"{title}: no ops")
        return
    console.print(_stage_table(title, b["stages"]))
    _chain_table(console, b["chains"], f"chains of {b['name']}")


def run(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from tigris_ir.frontend.onnx_import import parse_shape_specs
    from tigris_ir.plan.memory import parse_budget
    from tigris_ir.tools.cli import check_budget

    budget: int | None = None
    if args.budget is not None:
        try:
            budget = check_budget(parse_budget(args.budget), args.budget)
        except ValueError as e:
            raise AnalyzeError(f"{e} (option -m)") from None
    elif not args.min_budget:
        budget = DEFAULT_BUDGET
    path = Path(args.model)
    if not path.exists():
        raise AnalyzeError(f"cannot open '{path}': no such file")
    try:
        shapes = parse_shape_specs(args.input_shape)
    except ValueError as e:
        raise AnalyzeError(str(e)) from None
    slow: int | None = None
    if args.slow_budget is not None:
        try:
            slow = parse_budget(args.slow_budget, zero_ok=True)
        except ValueError as e:
            raise AnalyzeError(f"--slow-budget: {e}") from None
    report = analyze(
        path,
        budget,
        shapes,
        args.min_budget,
        slow,
        args.frontier,
        args.stream_input,
        args.stream_output,
        args.boundary,
        args.reread_input,
    )
    if args.plot:
        _plot(
            Path(args.plot),
            path,
            shapes,
            report["budget_bytes"],
            slow,
            (args.stream_input or args.reread_input, args.stream_output, args.reread_input),
            report,
        )
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        render(report, args.verbose)
    return 0 if report["fits"] else 1


def _plot(
    out: Path,
    path: Path,
    shapes: dict[str, tuple[int, ...]],
    budget: int,
    slow: int | None,
    stream: tuple[bool, bool, bool],
    report: dict[str, Any],
) -> None:
    """The picture of the plan the report describes (`tools/plot.py`)."""
    from tigris_ir.plan.ir import main_func, plan_tree
    from tigris_ir.tools.plot import plot_plan
    from tigris_ir.tools.tigris_run import load_module

    module, _ = load_module(path, shapes, need_weights=False)
    _set_boundary(module, report.get("boundary", "float"), path)
    tree = plan_tree(
        main_func(module),
        budget,
        slow_budget=slow,
        stream_input=stream[0],
        stream_output=stream[1],
        reread_input=stream[2],
    )
    assert tree.plan is not None
    plot_plan(out, tree.view.graph, tree.plan, report.get("frontier"), path.stem)


def main(argv: Sequence[str] | None = None) -> int:
    return run_main(PROG, lambda: run(argv))


if __name__ == "__main__":
    sys.exit(main())
