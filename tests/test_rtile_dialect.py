"""The rtile dialect: round trips, verifiers, and the lit files through pytest."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    Builtin,
    Float32Type,
    IntegerType,
    ModuleOp,
    TensorType,
    i8,
)
from xdsl.dialects.func import Func
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from tigris_ir.dialects.rtile import CoverAttr, GebpOp, GeomAttr, RTile
from tigris_ir.rtile import model as rt
from tigris_ir.rtile.targets import avx2, avx512

LIT = Path(__file__).parent / "lit" / "rtile"


def context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Arith, Func, RTile):
        ctx.load_dialect(dialect)
    return ctx


def parse(text: str) -> ModuleOp:
    module = Parser(context(), text).parse_module()
    module.verify()
    return module


def show(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def check_lines(text: str) -> list[str]:
    return [
        m.group(1).strip() for m in re.finditer(r"//\s*CHECK(?:-LABEL|-SAME|-NEXT)?:(.*)", text)
    ]


def assert_in_order(patterns: list[str], output: str) -> None:
    pos = 0
    for pat in patterns:
        regex = ".*?".join(re.escape(p) for p in re.split(r"\{\{.*?\}\}", pat))
        found = re.compile(regex).search(output, pos)
        assert found is not None, f"{pat!r} not found after offset {pos}"
        pos = found.start()


# ---------------------------------------------------------------- attributes


def test_geom_prints_the_display_form_and_parses_back():
    attr = GeomAttr(4, 2, 8)
    out = io.StringIO()
    Printer(stream=out).print_attribute(attr)
    assert out.getvalue() == "#rtile.geom<rm4 rn2 lanes8>"
    parsed = Parser(context(), out.getvalue()).parse_attribute()
    assert parsed == attr
    assert attr.geometry == rt.Geometry(4, 2, 8)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#rtile.geom<rm0 rn2 lanes8>", "rm must be at least 1, got 0"),
        ("#rtile.geom<rm4 rn0 lanes8>", "rn must be at least 1"),
        ("#rtile.geom<rm4 rn2 lanes3>", "lanes must be a power of two >= 2, got 3"),
        ("#rtile.geom<rm4 rn2 lanes1>", "lanes must be a power of two >= 2, got 1"),
    ],
)
def test_geom_verify_rejects(text: str, message: str):
    with pytest.raises(VerifyException, match=re.escape(message)):
        Parser(context(), text).parse_attribute()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("#rtile.geom<rm4 rx2 lanes8>", "expected 'rn' followed by a count, got 'rx2'"),
        ("#rtile.geom<rm4 rn2>", "lanes"),
        ("#rtile.geom<rm4 rnx lanes8>", "got 'rnx'"),
    ],
)
def test_geom_parse_errors(text: str, message: str):
    with pytest.raises(ParseError, match=re.escape(message)):
        Parser(context(), text).parse_attribute()


def test_cover_attr_round_trip():
    cover = rt.cover(rt.Geometry(4, 3, 8), 97, 83)
    attr = CoverAttr.from_cover(cover)
    out = io.StringIO()
    Printer(stream=out).print_attribute(attr)
    assert out.getvalue() == "#rtile.cover<m_full 96 n_full 72 tail [8, 3] band 1>"
    assert Parser(context(), out.getvalue()).parse_attribute() == attr
    assert attr.cover == cover


def test_cover_attr_rejects_empty_tail_vector():
    with pytest.raises(VerifyException, match="no lanes"):
        CoverAttr(0, 0, [8, 0], 0)


# ---------------------------------------------------------------- the op


def _operands(m: int, k: int, n: int, elt=None):
    elt = elt or Float32Type()
    a = xdsl_test.TestOp(result_types=[TensorType(elt, [m, k])]).results[0]
    b = xdsl_test.TestOp(result_types=[TensorType(elt, [k, n])]).results[0]
    return a, b


@pytest.mark.parametrize("target", [avx2, avx512], ids=lambda t: t.name)
@pytest.mark.parametrize(("m", "k", "n"), [(97, 61, 83), (3136, 144, 24), (1, 1280, 1000)])
def test_a_pass_builds_the_op_from_the_model(target, m: int, k: int, n: int):
    g = rt.default(target, m, n)
    assert g is not None and rt.check(target, m, n, g) is None
    a, b = _operands(m, k, n)
    op = GebpOp(a, b, g)
    op.verify()
    assert op.geom.geometry == g
    assert op.cover.cover == rt.cover(g, m, n)
    assert op.result.type == TensorType(Float32Type(), [m, n])


def test_int8_op_accumulates_into_i32():
    a, b = _operands(16, 8, 24, i8)
    op = GebpOp(a, b, rt.Geometry(4, 3, 8))
    op.verify()
    assert isinstance(op.result.type, TensorType)
    assert op.result.type.get_element_type() == IntegerType(32)


def test_op_verifier_checks_cover_against_geometry():
    a, b = _operands(8, 4, 16)
    op = GebpOp(a, b, rt.Geometry(4, 2, 8))
    op.properties["cover"] = CoverAttr(8, 0, [8, 8], 0)
    with pytest.raises(VerifyException, match="does not match rm4 rn2 lanes8"):
        op.verify()


# ---------------------------------------------------------------- lit files


def test_lit_round_trip_file_through_parser_and_printer():
    text = (LIT / "roundtrip.mlir").read_text()
    printed = show(parse(text))
    assert show(parse(printed)) == printed  # stable
    assert_in_order(check_lines(text), printed)


def _chunks(path: Path) -> list[str]:
    return path.read_text().split("// -----")


@pytest.mark.parametrize("index", range(len(_chunks(LIT / "invalid.mlir"))))
def test_lit_invalid_file_chunks(index: int):
    chunk = _chunks(LIT / "invalid.mlir")[index]
    expected = check_lines(chunk)
    assert len(expected) == 1
    with pytest.raises((DiagnosticException, ParseError)) as info:
        parse(chunk)
    assert expected[0] in str(info.value)
