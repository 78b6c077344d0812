"""Pictures of a plan for `tigris-analyze --plot FILE.png|.svg` (matplotlib, the
optional extra `pip install .[plot]`).

The memory over the schedule: one column per unit (a stage run whole, a tiled
stage or a chain, in order), the unit's own fast buffers and, stacked on them,
the tensors resident while it runs (in a single-arena plan they are in the
fast arena; otherwise the bars beside show the slow memory holding them), the
largest resident tensor named; the budgets as lines. With a frontier, a second
panel: recomputed MACs and slow traffic against the budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tigris_ir.plan.graph import PlanGraph
from tigris_ir.plan.planner import Plan, Residents
from tigris_ir.plan.tiling import GraphTables
from tigris_ir.tools.cli import UserError


class PlotError(UserError):
    """matplotlib missing, or a file it cannot write."""


def _units(p: Plan, res: Residents) -> list[tuple[str, int, int, int, int]]:
    """(label, start, stop, own fast bytes, bytes held across units) per unit,
    in order: in a single arena the plan's resident bytes, else what slow
    memory holds while the unit runs."""
    out: list[tuple[str, int, int, int, int]] = []
    seen: set[int] = set()
    for s in p.stages:
        if s.chain is None:
            held = s.resident if p.single_arena else 0 if p.in_place else res.of(s.start, s.stop)
            out.append((f"s{s.index}", s.start, s.stop, s.peak, held))
            continue
        if s.chain in seen:
            continue
        seen.add(s.chain)
        c = p.chains[s.chain]
        held = c.resident if p.single_arena else res.of(c.start, c.stop)
        out.append((f"c{c.index}", c.start, c.stop, c.peak, held))
    return out


def plot_plan(
    path: Path,
    graph: PlanGraph,
    p: Plan,
    frontier: list[dict[str, Any]] | None = None,
    title: str = "",
) -> None:
    """Draw the plan (and the frontier rows of `tigris-analyze --json`) to `path`."""
    if path.suffix.lower() not in (".png", ".svg"):
        raise PlotError(f"--plot '{path}': the picture is a .png or .svg file")
    try:
        import matplotlib  # pyright: ignore[reportMissingImports]  (the optional extra [plot])

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # pyright: ignore[reportMissingImports]
    except ImportError:
        raise PlotError(
            "--plot needs matplotlib, the optional extra of this package: pip install '.[plot]'"
        ) from None
    tables = GraphTables(graph)
    streamed = frozenset(graph.inputs) if p.stream_input else frozenset()
    res = Residents(graph, tables, streamed)
    units = _units(p, res)
    kib = 1024.0
    own = [u[3] / kib for u in units]
    held = [u[4] / kib for u in units]
    panels = 2 if frontier else 1
    fig, axes = plt.subplots(panels, 1, figsize=(max(8.0, 0.35 * len(units) + 4), 4.5 * panels))
    ax = axes[0] if panels == 2 else axes
    xs = list(range(len(units)))
    ax.bar(xs, own, color="#3b75af", label="own buffers (fast)")
    if p.single_arena:
        ax.bar(xs, held, bottom=own, color="#ef8636", label="resident across units (fast)")
    else:
        ax.bar(
            [x + 0.4 for x in xs],
            held,
            width=0.4,
            color="#999999",
            label="held across units (slow memory)",
        )
    ax.axhline(p.budget / kib, color="#c03d3e", linestyle="--", label="fast budget")
    for x, u in zip(xs, units):
        big = res.largest(u[1], u[2])
        if big is not None:
            top = own[x] + (held[x] if p.single_arena else 0)
            ax.annotate(big[0], (x, top), fontsize=6, rotation=90, va="bottom", ha="center")
    ax.set_xticks(xs, [u[0] for u in units], rotation=90, fontsize=7)
    ax.set_ylabel("KiB")
    kind = "one arena" if p.single_arena else "fast + slow"
    stream = ", input streamed" if p.stream_input else ""
    if p.reread_input:
        stream += " (read again)"
    ax.set_title(
        f"{title}: {kind}{stream}, peak {p.peak / kib:.1f} KiB, "
        f"slow peak {p.slow_peak / kib:.1f} KiB"
    )
    ax.legend(fontsize=7)
    if frontier:
        fx = axes[1]
        b = [r["budget_bytes"] / kib for r in frontier]
        fx.plot(b, [r["recompute_percent"] for r in frontier], "o-", label="recomputed MACs (%)")
        fx.set_xlabel("fast budget (KiB)")
        fx.set_ylabel("recomputed MACs (%)")
        tx = fx.twinx()
        tx.plot(
            b,
            [r["slow_traffic_bytes"] / kib for r in frontier],
            "s--",
            color="#999999",
            label="slow traffic (KiB)",
        )
        tx.set_ylabel("slow traffic (KiB)")
        fx.set_title("memory against recomputed MACs and slow traffic")
        fx.legend(loc="upper left", fontsize=7)
        tx.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as e:
        raise PlotError(f"--plot '{path}': {e.strerror or e}") from None
    finally:
        plt.close(fig)
