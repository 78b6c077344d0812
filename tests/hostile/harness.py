"""Run corpus cases in-process and sort each outcome into one of five kinds.

* `ok`: an `ok` or `either` case that exits 0 (and its check holds);
* `refused`: exit 1 with a diagnostic: at most a few lines, the first one an
  error naming the case's `where` strings, no traceback;
* `bad-diagnostic`: exit 1 with a message that lacks the location, that runs
  over many lines (a dumped module), or that names internal `nn.` ops for an
  ONNX model;
* `internal`: the catch-all internal error, a traceback, an escaped exception,
  a timeout or exhausted memory;
* `accepted`: a `refuse` case that exits 0 (or an `ok` case whose check fails).

A case runs under a time limit (SIGALRM) and an address-space limit, so that a
model planned or allocated until memory runs out fails here, not the machine.

    python tests/hostile/harness.py [--all] [--family F] [-v]
"""

from __future__ import annotations

import contextlib
import io
import os
import resource
import signal
import sys
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ONNX_TERMS = ("truncated", "bitflip", "semantic")
"""Families whose diagnostics must speak ONNX (no internal `nn.` op names)."""
KINDS = ("ok", "refused", "bad-diagnostic", "internal", "accepted")
MAX_DIAGNOSTIC_LINES = 6
TIME_LIMIT_S = 60
MEMORY_LIMIT = 6 << 30


class CaseTimeout(BaseException):
    """Raised in the case by SIGALRM."""


@dataclass
class Outcome:
    kind: str
    code: int | None
    message: str
    """The diagnostic's first line, or what went wrong."""


def _mains() -> dict[str, tuple[str, Callable[[], int]]]:
    from tigris_ir.tools import tigris_analyze, tigris_opt, tigris_run

    return {
        "opt": ("tigris-opt", tigris_opt.main),
        "run": ("tigris-run", tigris_run.main),
        "analyze": ("tigris-analyze", tigris_analyze.main),
    }


def invoke(tool: str, argv: tuple[str, ...]) -> tuple[int | None, str, str, str | None]:
    """(exit code, stdout, stderr, escaped traceback) of one command, in-process."""
    prog, main = _mains()[tool]
    out, err = io.StringIO(), io.StringIO()
    old_argv = sys.argv
    escaped: str | None = None
    code: int | None = None

    def alarm(signum, frame):
        raise CaseTimeout()

    old_handler = signal.signal(signal.SIGALRM, alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        signal.alarm(TIME_LIMIT_S)
        sys.argv = [prog, *argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main()
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    except CaseTimeout:
        escaped = f"timeout after {TIME_LIMIT_S} s"
    except BaseException:  # what a tool lets escape is the finding
        escaped = traceback.format_exc()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old_handler)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        sys.argv = old_argv
    return code, out.getvalue(), err.getvalue(), escaped


def classify(case, code, stdout: str, stderr: str, escaped: str | None) -> Outcome:
    if escaped is not None:
        return Outcome("internal", code, escaped.strip().splitlines()[-1])
    text = stdout if case.stream == "stdout" else stderr
    if "Traceback (most recent call last)" in stderr + stdout or "internal error" in stderr:
        line = next((ln for ln in stderr.splitlines() if "internal error" in ln), stderr[-300:])
        return Outcome("internal", code, line.strip())
    if code == 0:
        if case.expect == "refuse":
            return Outcome("accepted", 0, "exit 0")
        problem = case.check() if case.check is not None else None
        return Outcome("accepted", 0, problem) if problem else Outcome("ok", 0, "")
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return Outcome("bad-diagnostic", code, "exit 1 with nothing printed")
    first = next((ln for ln in lines if "error" in ln or "does not fit" in ln), lines[0])
    if code != 1:
        return Outcome("bad-diagnostic", code, f"exit {code}: {first}")
    if case.stream == "stderr" and len(lines) > MAX_DIAGNOSTIC_LINES:
        return Outcome("bad-diagnostic", code, f"{len(lines)} lines: {first[:200]}")
    if case.family in ONNX_TERMS and "nn." in first:
        return Outcome("bad-diagnostic", code, f"names the internal IR: {first[:200]}")
    missing = [w for w in case.where if w not in text]
    if missing or ("error" not in first and case.stream == "stderr"):
        return Outcome("bad-diagnostic", code, f"missing {missing}: {first[:200]}")
    return Outcome("refused", code, first.strip())


def run_case(case) -> Outcome:
    return classify(case, *invoke(case.tool, case.argv))


def counts_table(results) -> str:
    from hostile.corpus import FAMILIES

    by: dict[str, Counter[str]] = {f: Counter() for f in FAMILIES}
    for case, out in results:
        by[case.family][out.kind] += 1
    head = f"{'family':<10}" + "".join(f"{k:>16}" for k in KINDS) + f"{'total':>8}"
    rows = [head]
    total: Counter[str] = Counter()
    for fam, cnt in by.items():
        total.update(cnt)
        rows.append(
            f"{fam:<10}" + "".join(f"{cnt[k]:>16}" for k in KINDS) + f"{sum(cnt.values()):>8}"
        )
    rows.append(
        f"{'all':<10}" + "".join(f"{total[k]:>16}" for k in KINDS) + f"{sum(total.values()):>8}"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from hostile.corpus import generate, sample

    p = argparse.ArgumentParser(description="run the hostile corpus and count the outcomes")
    p.add_argument("--all", action="store_true", help="every case (default: a sample of 80)")
    p.add_argument("--family", help="only this family")
    p.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    p.add_argument("--show", type=int, default=0, help="print this many sample diagnostics")
    args = p.parse_args(argv)
    os.environ.setdefault("COLUMNS", "100")
    with tempfile.TemporaryDirectory() as tmp:
        cases = generate(Path(tmp))
        chosen = cases if args.all else sample(cases, 80)
        if args.family:
            chosen = [c for c in chosen if c.family == args.family]
        results = []
        for case in chosen:
            out = run_case(case)
            results.append((case, out))
            if args.verbose or (out.kind not in ("ok", "refused")):
                print(f"{out.kind:<15} {case.family:<10} {case.name:<34} {out.message[:160]}")
        print(counts_table(results))
        shown = 0
        for case, out in results:
            if shown >= args.show:
                break
            if out.kind == "refused":
                print(f"  {case.name}: {out.message}")
                shown += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
