"""The hostile corpus (tests/hostile/corpus.py) against the three tools, in-process.

Every case ends as it must: a `refuse` case exits 1 with a diagnostic of a few
lines at most whose first line is an error naming the case's file, node or
option, and no traceback or internal error; an `ok` case exits 0 and its check
holds; an `either` case (a truncated or bit-flipped model that may have stayed
valid) is refused so, or exits 0 with its output equal to onnxruntime's
(`--check`). The whole seeded corpus runs by default (a few seconds);
`TIGRIS_HOSTILE_SEEDS=N` runs N corpora of different seeds.
"""

from __future__ import annotations

import os

import pytest
from hostile.corpus import FAMILIES, generate
from hostile.harness import run_case

SEEDS = range(14, 14 + int(os.environ.get("TIGRIS_HOSTILE_SEEDS", "1")))


@pytest.fixture(scope="module", params=list(SEEDS), ids=lambda s: f"seed{s}")
def corpus(request, tmp_path_factory):
    return generate(tmp_path_factory.mktemp(f"hostile{request.param}"), seed=request.param)


def test_corpus_covers_every_family(corpus):
    counts = {f: sum(c.family == f for c in corpus) for f in FAMILIES}
    assert len(corpus) >= 300, counts
    assert all(n >= 25 for n in counts.values()), counts


@pytest.mark.parametrize("family", FAMILIES)
def test_every_case_ends_as_it_must(corpus, family):
    failures = []
    for case in (c for c in corpus if c.family == family):
        out = run_case(case)
        if out.kind not in ("ok", "refused"):
            failures.append(f"{out.kind}: {case.name} {' '.join(case.argv[1:])}: {out.message}")
        elif case.expect == "refuse" and out.kind != "refused":
            failures.append(f"not refused: {case.name}")
        elif case.expect == "ok" and out.kind != "ok":
            failures.append(f"refused a valid case: {case.name}: {out.message}")
    assert not failures, "\n".join(failures)


def test_disable_verify_does_not_outlive_the_run(tmp_path):
    """xdsl-opt's --disable-verify switches attribute verification off for the
    whole process; tigris-opt switches it back on when its run ends, so a
    caller in the same process still has invalid attributes refused."""
    from xdsl.context import Context
    from xdsl.parser import Parser
    from xdsl.utils.exceptions import VerifyException

    from tigris_ir.dialects.rtile import RTile
    from tigris_ir.tools.tigris_opt import main

    ir = tmp_path / "empty.mlir"
    ir.write_text("builtin.module {}\n")
    assert main([str(ir), "--disable-verify", "-o", str(tmp_path / "out.mlir")]) == 0
    ctx = Context()
    ctx.load_dialect(RTile)
    with pytest.raises(VerifyException, match="rm must be at least 1"):
        Parser(ctx, "#rtile.geom<rm0 rn2 lanes8>").parse_attribute()
