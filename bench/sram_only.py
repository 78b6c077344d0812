"""Plans without external memory: the smallest single SRAM of the zoo models.

For every model (full size), int8 and float32: the layer-by-layer peak (every
op run whole), the smallest fast budget with unbounded slow memory, and the
smallest single SRAM (`--slow-budget 0`: every tensor in the one fast arena)
with the model input resident and with it streamed in by rows
(`--stream-input`), each with its recomputed MACs (percent of the model's) and
the planning time of one plan at that budget. Each single-SRAM figure twice:
with the plans of line buffers (`patch_windows=1`: a 2D grid spans at most
one window op; a chain's line buffers may run in column bands, which
recompute their halo columns) and with patches (`planner.PATCH_WINDOWS`, the default:
stages of patches spanning several window ops recompute their overlaps,
chosen by the planner's cost where they lower the peak). The streamed figure
once more for a plan that recomputes no MAC (`max_recompute=0`), naming the
chains that take pixel runs (`plan.scratch`: a depthwise and the 1x1
convolutions after it computed a block of columns at a time); and once more
with the input read again (`--reread-input`: a frame buffer or flash the
network asks for windows of rows and columns, as often as it needs, so the
chains reading it may run in column bands). Every single-SRAM figure is the
planner's as it stands: below the budgets that fit without them, chains may
run window feeders (`plan.scratch.window_feeders`: an expansion recomputed a
block of columns at a time for the depthwise after it), and the "MACs +"
columns say what they cost. Beside them, side by side, the
measured anchors of ANCHORS.md ("Plans without external memory") and the
ratio of our figure to theirs (below 1: less memory than the anchor).

The figures are the planner's; tests/test_planner_slow_budget.py holds them
equal to what the loop-level interpreter and the C measure. The planner does
not depend on the ISA; the planning times are measured on the machine the
script runs on (its CPU is printed under the table; one thread, noisy when
the machine is shared).

    python bench/sram_only.py [--models mobilenet_v2,mobilenet_v2_035] [--dtypes int8,f32]
                              [--boundary int8|float]

A second table takes MobileNetV2-0.35-144 (`--parts`) apart at its block
boundaries (`PlanGraph.cuts`: one activation alone crosses), at the first
boundary of each resolution (the smallest crossing tensor there): the
smallest single SRAM of the network up to it (input streamed, the crossing
tensor its output; once more with the input read again) and from it on
(that tensor resident): a plan that runs the two parts one after the other
needs the larger of the two (a plan of the whole may also fuse ops across the
cut). It shows where the memory of the
8 KiB target of issue 15 goes.

`--boundary int8` (the default) plans the int8 models as the boundary pass
leaves them: the input is the quantized NHWC tensor (one byte an element, as a
camera's DMA delivers it) and the output the int8 logits; `--boundary float`
keeps the float32 input and its QuantizeLinear, which a resident plan holds
whole.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.passes.boundary import set_int8_boundary
from tigris_ir.plan.ir import layer_by_layer_peak, main_func
from tigris_ir.plan.memory import format_bytes
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import PATCH_WINDOWS, Plan, min_budget, min_single_budget, plan
from tigris_ir.rtile.targets import host_cpu_name

KB = 1000
KIB = 1024

# ANCHORS.md, "Plans without external memory" (SRAM peaks; kB = 1000 bytes)
ANCHORS: dict[tuple[str, str, str], tuple[str, int]] = {
    ("mobilenet_v2", "int8", "streamed"): ("MCUNetV2 patch-based, +3..10% MACs", 172 * KB),
    ("mobilenet_v2", "int8", "resident"): ("line-buffer estimate, image resident", 264 * KIB),
    ("mobilenet_v2_035", "int8", "streamed"): ("msf-CNN at 1.68x MACs (no residuals)", 8600),
    ("mobilenet_v2_035", "int8", "resident"): ("line-buffer estimate, image resident", 86 * KIB),
    ("mobilenet_v2", "f32", "fast"): ("reference tool, smallest fast budget", 38 * KIB),
}
TARGETS = {  # issue 15
    ("mobilenet_v2", "int8", "streamed"): "<= 128 KiB at <= 3% MACs",
    ("mobilenet_v2", "int8", "resident"): "<= 270 KiB",
    ("mobilenet_v2_035", "int8", "streamed"): "<= 26 KiB at 0% MACs",
    ("mobilenet_v2", "f32", "fast"): "<= 32 KiB",
}


def _pct(p: Plan) -> str:
    return f"{100 * p.recomputed_macs / max(p.macs, 1):.2f}%"


def _exact(n: int) -> str:
    """`26.6 KiB = 27,216 B`: the rounded figure and the exact bytes."""
    return f"{format_bytes(n)} = {n:,} B"


def _timed(graph, budget: int, **kw) -> tuple[Plan, float]:
    t0 = time.perf_counter()
    p = plan(graph, budget, **kw)
    return p, time.perf_counter() - t0


def _vs(key: tuple[str, str, str], ours: int) -> str:
    a = ANCHORS.get(key)
    if a is None:
        return ""
    return f"{ours / a[1]:.2f}x of {format_bytes(a[1])} ({a[0]})"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v2,mobilenet_v2_035,vgg,resnet,ds_cnn")
    ap.add_argument("--dtypes", default="int8,f32")
    ap.add_argument("--boundary", choices=("int8", "float"), default="int8")
    ap.add_argument("--parts", default="mobilenet_v2_035", help="models taken apart (int8)")
    args = ap.parse_args()
    console = Console(width=240)
    t = Table(title="smallest SRAM budgets of the zoo models (full size)")
    for col in (
        "model",
        "dtype",
        "layer-by-layer",
        "fast, slow unbounded",
        "one SRAM, input resident",
        "MACs +",
        "resident, patches",
        "MACs +",
        "one SRAM, input streamed",
        "MACs +",
        "streamed, patches",
        "MACs +",
        "streamed, no MAC recomputed",
        "streamed, read again",
        "MACs +",
        "plan s (max)",
        "against the anchors",
        "target (issue 15)",
    ):
        t.add_column(col, justify="left" if col in ("model", "dtype") else "right")
    for name in args.models.split(","):
        for dt in args.dtypes.split(","):
            model = zoo.build(name, size="full", int8=dt == "int8")
            module = import_model(model).module
            if dt == "int8" and args.boundary == "int8":
                set_int8_boundary(module)
            fn = main_func(module)
            g = build_view(fn).graph
            naive = layer_by_layer_peak(fn)
            fast = min_budget(g)
            found: dict[tuple[bool, int], tuple[int, Plan, float]] = {}
            for stream in (False, True):
                for pw in (1, PATCH_WINDOWS):
                    b = min_single_budget(g, stream_input=stream, patch_windows=pw)
                    p, secs = _timed(g, b, slow_budget=0, stream_input=stream, patch_windows=pw)
                    assert p.fits and p.slow_peak == 0 and p.peak <= b
                    found[stream, pw] = (b, p, secs)
            exact = min_single_budget(g, stream_input=True, max_recompute=0.0)
            pe = plan(g, exact, slow_budget=0, stream_input=True)
            assert pe.fits and pe.recomputed_macs == 0 and pe.peak <= exact
            pixel = [f"c{c.index}" for c in pe.chains if c.pixel_block]
            again = min_single_budget(g, stream_input=True, reread_input=True)
            pa = plan(g, again, slow_budget=0, stream_input=True, reread_input=True)
            assert pa.fits and pa.slow_peak == 0 and pa.peak <= again
            banded = sum(1 for c in pa.chains if c.tile_w)
            resident, pr, _ = found[False, 1]
            streamed, ps, _ = found[True, 1]
            resident_p, prp, _ = found[False, PATCH_WINDOWS]
            streamed_p, psp, _ = found[True, PATCH_WINDOWS]
            slowest = max(secs for _, _, secs in found.values())
            notes = [
                _vs((name, dt, "fast"), fast),
                _vs((name, dt, "resident"), resident),
                _vs((name, dt, "streamed"), min(streamed, streamed_p)),
                "read again: " + _vs((name, dt, "streamed"), again)
                if (name, dt, "streamed") in ANCHORS
                else "",
            ]
            targets = [f"{k[2]} {v}" for k, v in TARGETS.items() if k[0] == name and k[1] == dt]
            t.add_row(
                name,
                dt,
                _exact(naive),
                _exact(fast),
                f"{_exact(resident)} ({resident / naive:.3f}x)",
                _pct(pr),
                f"{_exact(resident_p)} ({resident_p / naive:.3f}x)",
                _pct(prp),
                f"{_exact(streamed)} ({streamed / naive:.3f}x)",
                _pct(ps),
                f"{_exact(streamed_p)} ({streamed_p / naive:.3f}x)",
                _pct(psp),
                f"{_exact(exact)} ({exact / naive:.3f}x)"
                + (f"\npixel runs in {', '.join(pixel)}" if pixel else ""),
                f"{_exact(again)} ({again / naive:.3f}x)\n{banded} chains in column bands",
                _pct(pa),
                f"{slowest:.2f}",
                "\n".join(n for n in notes if n),
                "\n".join(targets),
            )
    console.print(t)
    console.print(
        "Ratios in brackets: of the layer-by-layer peak. 'plan s': the slowest of the "
        "four plans at those budgets. 'patches': stages of patches may span up to "
        f"{PATCH_WINDOWS} window ops (else one). 'no MAC recomputed': the smallest "
        "streamed single SRAM of a plan that recomputes nothing (the chains that "
        "needed pixel runs named). 'read again': the input streamed from a source that "
        "can be asked again, in windows (--reread-input: a frame buffer or flash), so the "
        "chains reading it may run in column bands. int8 boundary: "
        f"{args.boundary} (float: the int8 models take a float32 input, QuantizeLinear "
        "first, which a resident plan holds whole)."
    )
    console.print(f"planning times on: {host_cpu_name()}")
    for name in filter(None, args.parts.split(",")):
        console.print(_parts(name, args.boundary))
    return 0


def _parts(name: str, boundary: str) -> Table:
    """The network up to and from the first block boundary of each
    resolution (its smallest crossing tensor): the smallest single SRAM of
    each part and its recomputed MACs (percent of the part's)."""
    module = import_model(zoo.build(name, size="full", int8=True)).module
    if boundary == "int8":
        set_int8_boundary(module)
    g = build_view(main_func(module)).graph
    best: dict[int, tuple[int, int]] = {}  # height -> (crossing bytes, cut)
    for k in g.cuts():
        (x,) = g.part(k, len(g.nodes)).inputs
        t = g.tensors[x]
        if t.rank == 4 and (t.height not in best or t.nbytes < best[t.height][0]):
            best[t.height] = (t.nbytes, k)
    t = Table(title=f"{name} int8 taken apart: the smallest single SRAM of each part")
    for col in ("cut before", "crossing tensor", "bytes", "up to it (input streamed)",
                "MACs +", "up to it (read again)", "MACs +", "from it on (it resident)",
                "MACs +"):
        t.add_column(col, justify="left" if col.startswith("c") else "right")
    for _, k in sorted(best.values(), key=lambda v: v[1]):
        cells = []
        for part, stream, again in (
            (g.part(0, k), True, False),
            (g.part(0, k), True, True),
            (g.part(k, len(g.nodes)), False, False),
        ):
            b = min_single_budget(part, stream_input=stream, reread_input=again)
            p = plan(part, b, slow_budget=0, stream_input=stream, reread_input=again)
            assert p.fits and p.slow_peak == 0 and p.peak <= b
            cells += [_exact(b), _pct(p)]
        (x,) = g.part(k, len(g.nodes)).inputs
        shape = "x".join(str(d) for d in g.tensors[x].shape[1:])
        t.add_row(g.nodes[k].name, f"{x} ({shape})", f"{g.tensors[x].nbytes:,}", *cells)
    return t


if __name__ == "__main__":
    sys.exit(main())
