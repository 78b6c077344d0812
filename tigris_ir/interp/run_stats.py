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
    stream_rows_by: tuple[int, ...] = ()
    """With a streamed input: the rows asked of each model input, in the
    model's order (0 for an input that is not streamed); () otherwise."""
    out_rows_by: tuple[int, ...] = ()
    """With a streamed output: the rows sent of each model output, in the
    model's order (0 for an output that is not streamed); () otherwise."""

    def lines(self) -> list[str]:
        out = [
            f"fast peak: {self.fast_peak}",
            f"slow peak: {self.slow_peak}",
            f"slow reads: {self.slow_reads}",
            f"slow writes: {self.slow_writes}",
        ]
        if self.stream_rows:
            out.append(f"input rows streamed: {self.stream_rows} ({self.stream_bytes} bytes)")
            if len(self.stream_rows_by) > 1:
                out.append(f"input rows by input: {_by(self.stream_rows_by)}")
        if self.out_rows:
            out.append(f"output rows streamed: {self.out_rows}")
            if len(self.out_rows_by) > 1:
                out.append(f"output rows by output: {_by(self.out_rows_by)}")
        return out


def _by(rows: tuple[int, ...]) -> str:
    return ", ".join(f"#{i} {n}" for i, n in enumerate(rows))


@dataclass(frozen=True)
class RunResult:
    outputs: list[np.ndarray]
    stats: RunStats
