"""Static placement of buffers with lifetimes (`tigris_ir.plan.arena.place`):
every placement is checked for overlaps and for the top it reports; the
buffers of one single-arena plan that the search in order of birth could not
place within their live peak are placed there now."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tigris_ir.plan.arena import Interval, _search, live_peak, place
from tigris_ir.plan.memory import ALIGN

SQUEEZENET_1200K = [
    (602112, 0, 50), (193600, 7, 107), (142080, 8, 57), (28160, 9, 51), (14080, 10, 52),
    (14080, 11, 53), (14080, 12, 54), (10560, 13, 55), (142080, 14, 56), (93312, 58, 151),
    (13824, 59, 99), (55296, 60, 100), (253440, 61, 101), (126720, 62, 102), (126720, 63, 103),
    (126720, 64, 104), (38720, 65, 105), (126720, 66, 106), (93312, 108, 164),
    (373248, 109, 186), (103680, 110, 150), (165888, 111, 145), (82944, 112, 146),
    (82944, 113, 147), (82944, 114, 148), (82944, 115, 149), (373248, 152, 187),
    (193536, 153, 163), (32448, 165, 283), (12480, 166, 183), (66560, 167, 184),
    (304128, 168, 185), (173056, 188, 317), (173056, 189, 318), (129792, 190, 196),
    (129792, 194, 206), (129792, 197, 203), (129792, 201, 207), (259584, 204, 212),
    (32448, 208, 215), (32448, 213, 227), (129792, 216, 222), (129792, 220, 233),
    (129792, 223, 230), (129792, 228, 234), (259584, 231, 239), (43264, 235, 242),
    (43264, 240, 254), (173056, 243, 249), (173056, 247, 260), (173056, 250, 257),
    (173056, 255, 261), (346112, 258, 266), (43264, 262, 269), (43264, 267, 280),
    (173056, 270, 275), (173056, 276, 282), (4000, 284, 321), (260000, 285, 310),
    (260000, 286, 311), (133120, 287, 312), (66560, 288, 313), (66560, 289, 314),
    (4000, 290, 315), (8000, 291, 316), (4000, 319, 323),
]  # fmt: skip
"""The fast buffers (bytes, first and last step) of the onnx wheel's
`light_squeezenet.onnx` lowered at `-m 1200000 --slow-budget 0`: one arena,
the input and the activations resident across units."""


def _check(items: list[Interval], offsets: dict[str, int], top: int) -> None:
    """Every buffer placed, aligned, inside `top`, none overlapping a buffer
    live at the same step; `top` the highest byte used."""
    assert set(offsets) == {i.key for i in items}
    assert top == max((offsets[i.key] + i.size for i in items), default=0)
    for a in items:
        assert offsets[a.key] % ALIGN == 0 and offsets[a.key] >= 0
        for b in items:
            if a.key < b.key and a.first <= b.last and b.first <= a.last:
                oa, ob = offsets[a.key], offsets[b.key]
                assert oa + a.size <= ob or ob + b.size <= oa, (a, b)


def test_the_buffers_of_a_single_arena_fit_their_live_peak() -> None:
    items = [Interval(f"b{k}", s, f, la) for k, (s, f, la) in enumerate(SQUEEZENET_1200K)]
    peak = live_peak(items)
    assert peak == 1162112
    assert _search(items, peak) is None  # in order of birth it does not
    offsets, top = place(items, peak)
    _check(items, offsets, top)
    assert top == peak


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.integers(0, 20), st.integers(0, 6)),
        min_size=1,
        max_size=14,
    ),
    st.integers(0, 3),
)
def test_every_placement_is_sound(raw: list[tuple[int, int, int]], slack: int) -> None:
    """Random buffers at their live peak plus a little: no two live buffers
    share a byte, and a placement reported within the capacity is one."""
    items = [Interval(f"b{k}", s * ALIGN, f, f + d) for k, (s, f, d) in enumerate(raw)]
    peak = live_peak(items)
    capacity = peak + slack * ALIGN
    offsets, top = place(items, capacity)
    _check(items, offsets, top)
    assert top >= peak
