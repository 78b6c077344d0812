"""What a run of a plan measured: its outputs, fast and slow peaks, traffic
and tiles, in bytes (the loop machine's or the generated C's own figures,
which the tests hold equal to the plan)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RunStats:
    """What a run measured, in bytes."""

    fast_peak: int
    fast_high: int
    arena_bytes: int
    slow_peak: int
    slow_reads: int
    slow_writes: int
    tiles: int
    stream_rows: int = 0
    """Rows asked of the input stream (a streamed input), and their bytes."""
    stream_bytes: int = 0
    out_rows: int = 0
    """Rows sent to the output stream (a streamed output)."""

    def lines(self) -> list[str]:
        out = [
            f"fast peak: {self.fast_peak}",
            f"slow peak: {self.slow_peak}",
            f"slow reads: {self.slow_reads}",
            f"slow writes: {self.slow_writes}",
        ]
        if self.stream_rows:
            out.append(f"input rows streamed: {self.stream_rows} ({self.stream_bytes} bytes)")
        if self.out_rows:
            out.append(f"output rows streamed: {self.out_rows}")
        return out


@dataclass(frozen=True)
class RunResult:
    outputs: list[np.ndarray]
    stats: RunStats
