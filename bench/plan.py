"""Memory plans of the zoo against the reference tool, side by side.

For every model (full size), float32 and int8, at each budget: whether it
fits, the planned fast peak, slow-memory reads and writes, recomputed MACs,
the number of tiles and the import + planning time; and, when the reference
tool `tigris-ml` is installed (an optional peer: only run, never read), its
figures and the ratio of slow reads. A second table compares the smallest
budgets that fit.

    python bench/plan.py [--models a,b] [--budgets 32K,64K] [--peer PATH]

The peer is found as --peer, $TIGRIS_ML, or `tigris` on PATH.
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
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # test support: the zoo
import zoo  # noqa: E402

from tigris_ir.frontend.onnx_import import import_model
from tigris_ir.plan.ir import main_func
from tigris_ir.plan.memory import format_bytes, parse_budget
from tigris_ir.plan.nn_graph import build_view
from tigris_ir.plan.planner import min_budget, plan

ANCHOR_MIN = {  # ANCHORS.md: the reference tool's smallest budgets (KiB)
    ("mobilenet_v2", False): 38, ("mobilenet_v2", True): 10,
    ("vgg", False): 10, ("vgg", True): 3,
    ("resnet", False): 5, ("resnet", True): 2,
    ("ds_cnn", False): 3, ("ds_cnn", True): 2,
    ("audio_1d", False): 313, ("audio_1d", True): 79,
}


def peer_path(arg: str | None) -> str | None:
    return arg or os.environ.get("TIGRIS_ML") or shutil.which("tigris")


def peer_analyze(peer: str, model: Path, budget: int) -> dict | None:
    """Run `tigris analyze --json`; None when it fails to produce a report."""
    proc = subprocess.run(
        [peer, "analyze", str(model), "-m", str(budget), "--json"],
        capture_output=True, text=True, timeout=600,
    )
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None


def peer_figures(report: dict | None) -> dict:
    if report is None:
        return {"fits": None}
    fast, slow = report["fast"], report["slow"]
    traffic = slow.get("traffic") or {}
    return {
        "fits": fast["verdict"] in ("ok", "fits", "tiled"),
        "peak": fast["scheduled_peak_bytes"],
        "reads": traffic.get("read"),
        "writes": traffic.get("written"),
        "min": fast.get("minimum_for_partition_bytes") or None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", default=",".join(zoo.ZOO))
    ap.add_argument("--budgets", default="32K,64K,128K,256K,512K")
    ap.add_argument("--size", choices=["full", "small"], default="full")
    ap.add_argument("--peer", default=None, help="the reference tool's `tigris` executable")
    args = ap.parse_args()
    peer = peer_path(args.peer)
    budgets = [parse_budget(b) for b in args.budgets.split(",")]
    console = Console(width=200)
    plans = Table(title=f"plans ({args.size} size); peer: {peer or 'not installed'}")
    cols = ["model", "dtype", "budget", "fits", "peak", "slow reads", "slow writes",
            "recomp %", "tiles", "plan s"]
    if peer:
        cols += ["peer fits", "peer peak", "peer reads", "peer writes", "reads ours/peer"]
    for c in cols:
        plans.add_column(c, justify="left" if c in ("model", "dtype") else "right")
    mins = Table(title="smallest budget that fits")
    for c in ["model", "dtype", "ours", "peer", "anchor (peer, ANCHORS.md)", "ours/peer"]:
        mins.add_column(c, justify="left" if c in ("model", "dtype") else "right")
    tmp = Path(tempfile.mkdtemp(prefix="tigris-bench-"))
    for name in args.models.split(","):
        for int8 in (False, True):
            model = zoo.build(name, size=args.size, int8=int8)
            path = tmp / f"{name}{'_int8' if int8 else ''}.onnx"
            path.write_bytes(model.SerializeToString())
            t0 = time.perf_counter()
            imported = import_model(model, origin=name)
            view = build_view(main_func(imported.module))
            import_s = time.perf_counter() - t0
            for b in budgets:
                t0 = time.perf_counter()
                p = plan(view.graph, b)
                plan_s = import_s + time.perf_counter() - t0
                tiles = sum(s.num_tiles for s in p.stages if s.tiled and s.chain is None)
                tiles += sum(c.num_tiles for c in p.chains)
                row = [
                    name, "int8" if int8 else "f32", format_bytes(b),
                    "yes" if p.fits else "no",
                    format_bytes(p.peak) if p.fits else "-",
                    format_bytes(p.slow_reads) if p.fits else "-",
                    format_bytes(p.slow_writes) if p.fits else "-",
                    f"{100 * p.recomputed_macs / max(p.macs, 1):.1f}" if p.fits else "-",
                    str(tiles) if p.fits else "-", f"{plan_s:.2f}",
                ]
                if peer:
                    f = peer_figures(peer_analyze(peer, path, b))
                    ratio = (
                        f"{p.slow_reads / f['reads']:.2f}"
                        if p.fits and f.get("fits") and f.get("reads") else "-"
                    )
                    row += [
                        {True: "yes", False: "no", None: "error"}[f["fits"]],
                        format_bytes(f["peak"]) if f.get("fits") else "-",
                        format_bytes(f["reads"]) if f.get("fits") and f.get("reads") else "-",
                        format_bytes(f["writes"]) if f.get("fits") and f.get("writes") else "-",
                        ratio,
                    ]
                plans.add_row(*row)
            ours_min = min_budget(view.graph)
            peer_min = None
            if peer:
                f = peer_figures(peer_analyze(peer, path, 1024))
                peer_min = f.get("min") if f.get("fits") is False else 1024
            anchor = ANCHOR_MIN.get((name, int8))
            mins.add_row(
                name, "int8" if int8 else "f32", format_bytes(ours_min),
                format_bytes(peer_min) if peer_min else "-",
                f"{anchor} KiB" if anchor else "-",
                f"{ours_min / peer_min:.2f}" if peer_min else "-",
            )
    console.print(plans)
    console.print(mins)


if __name__ == "__main__":
    main()
