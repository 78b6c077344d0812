// RUN: not tigris-opt %s --gebp-tile=target=z80 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not tigris-opt %s --gebp-tile=target=sse,registers=5 2>&1 | filecheck %s --check-prefix=FEW
// RUN: not tigris-opt %s -p 'gebp-tile{target=neon registers=4}' 2>&1 | filecheck %s --check-prefix=FEW4
// RUN: not tigris-opt %s --gebp-tile=geometry=rm4-lanes8 2>&1 | filecheck %s --check-prefix=GEOM
// RUN: not tigris-opt %s --gebp-tile=geometry=rm4-rn2-lanes6 2>&1 | filecheck %s --check-prefix=LANES

// An unknown target, and a register file too small for any rm_cap-row tile
// (resident_floor(rm4 rn1) = 4 + 1 + 1 = 6 registers), fail the pass: exit 1,
// one diagnostic, no traceback.

// A geometry option that names no geometry, or an impossible one, fails too.
// GEOM: gebp-tile: geometry 'rm4-lanes8' is not of the form rm<rows>-rn<vectors>-lanes<lanes> (e.g. geometry=rm4-rn2-lanes8)
// LANES: gebp-tile: geometry 'rm4-rn2-lanes6': #rtile.geom<rm4 rn2 lanes6>: lanes must be a power of two >= 2, got 6

// UNKNOWN: gebp-tile: unknown target 'z80'; known targets: avx512, avx512-vnni, zen4, avx2, sse, neon, cortex-m4, cortex-m7, cortex-m55, host
// UNKNOWN-NOT: Traceback
// FEW: gebp-tile: target 'sse' has 5 vector registers, too few for any register tile: a 4-row tile of one vector column keeps 6 resident
// FEW-NOT: Traceback
// FEW4: gebp-tile: target 'neon' has 4 vector registers, too few for any register tile
func.func @f(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>, %c: tensor<16xf32>) -> tensor<8x16xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<8x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
