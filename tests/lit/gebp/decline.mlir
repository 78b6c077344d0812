// RUN: tigris-opt %s --gebp-tile=target=avx2 -o %t 2>&1 | filecheck %s
// RUN: filecheck %s --check-prefix=IR < %t

// A requested geometry the model's check rejects is declined with a warning that
// names the op and its location, quotes the violated rule, and falls back to
// the default. One site per rule a request can reach on AVX2 (16 registers of
// 32 bytes: widths 8, 4 and 2 f32 lanes, a budget of 19 live registers).

// CHECK: warning: gebp-tile: 'nn.gemm' %lanes in @lanes (op 1 of its body) at decline.mlir:12:3: declined the requested geometry rm4 rn1 lanes16 of this gemm (97x83x61): renderable-lanes: rm4 rn1 lanes16 on 97x83 (avx2): lanes=16 is not a width a 32-byte vector file renders at 4-byte elements (8/4/2); falls back to the default rm4 rn3 lanes8
func.func @lanes(%a: tensor<97x61xf32>, %b: tensor<61x83xf32>, %c: tensor<83xf32>) -> tensor<97x83xf32> {
  %lanes = nn.gemm %a, %b, %c {rtile.request = #rtile.geom<rm4 rn1 lanes16>} : (tensor<97x61xf32>, tensor<61x83xf32>, tensor<83xf32>) -> tensor<97x83xf32> loc("decline.mlir":12:3)
  func.return %lanes : tensor<97x83xf32>
}

// CHECK: warning: gebp-tile: 'nn.matmul' %narrow in @narrow (op 1 of its body): declined the requested geometry rm4 rn1 lanes8 of this matmul (40x6x9): n-fills-lanes: rm4 rn1 lanes8 on 40x6 (avx2): n=6 is below the vector width lanes=8; no default tile fits the site either; it keeps no register tile
func.func @narrow(%a: tensor<40x9xf32>, %b: tensor<9x6xf32>) -> tensor<40x6xf32> {
  %narrow = nn.matmul %a, %b {rtile.request = #rtile.geom<rm4 rn1 lanes8>} : (tensor<40x9xf32>, tensor<9x6xf32>) -> tensor<40x6xf32>
  func.return %narrow : tensor<40x6xf32>
}

// CHECK: warning: gebp-tile: 'nn.gemm' %rows in @rows (op 1 of its body): declined the requested geometry rm4 rn2 lanes8 of this gemm (3x83x9): rows-fit: rm4 rn2 lanes8 on 3x83 (avx2): rm=4 exceeds the row extent m=3; falls back to the default rm3 rn3 lanes8
func.func @rows(%a: tensor<3x9xf32>, %b: tensor<9x83xf32>, %c: tensor<83xf32>) -> tensor<3x83xf32> {
  %rows = nn.gemm %a, %b, %c {rtile.request = #rtile.geom<rm4 rn2 lanes8>} : (tensor<3x9xf32>, tensor<9x83xf32>, tensor<83xf32>) -> tensor<3x83xf32>
  func.return %rows : tensor<3x83xf32>
}

// CHECK: warning: gebp-tile: 'nn.conv' %cols in @cols (op 1 of its body): declined the requested geometry rm4 rn3 lanes8 of this 1x1 conv (64x20x16): columns-fit: rm4 rn3 lanes8 on 64x20 (avx2): rn*lanes=24 exceeds the column extent n=20; falls back to the default rm4 rn2 lanes8
func.func @cols(%x: tensor<1x8x8x16xf32>, %w: tensor<20x1x1x16xf32>, %b: tensor<20xf32>) -> tensor<1x8x8x20xf32> {
  %cols = nn.conv %x, %w, %b {kernel = array<i64: 1, 1>, rtile.request = #rtile.geom<rm4 rn3 lanes8>} : (tensor<1x8x8x16xf32>, tensor<20x1x1x16xf32>, tensor<20xf32>) -> tensor<1x8x8x20xf32>
  func.return %cols : tensor<1x8x8x20xf32>
}

// CHECK: warning: gebp-tile: 'nn.gemm' %budget in @budget (op 1 of its body): declined the requested geometry rm4 rn4 lanes8 of this gemm (97x83x61): register-budget: rm4 rn4 lanes8 on 97x83 (avx2): 24 live registers (rm*rn + rm + rn) exceed the budget of 19 of a 16-register file; falls back to the default rm4 rn3 lanes8
func.func @budget(%a: tensor<97x61xf32>, %b: tensor<61x83xf32>, %c: tensor<83xf32>) -> tensor<97x83xf32> {
  %budget = nn.gemm %a, %b, %c {rtile.request = #rtile.geom<rm4 rn4 lanes8>} : (tensor<97x61xf32>, tensor<61x83xf32>, tensor<83xf32>) -> tensor<97x83xf32>
  func.return %budget : tensor<97x83xf32>
}

// An accepted request is honoured silently: the narrower rm2 x 5.
// CHECK-NOT: warning
func.func @honoured(%a: tensor<97x61xf32>, %b: tensor<61x83xf32>, %c: tensor<83xf32>) -> tensor<97x83xf32> {
  %ok = nn.gemm %a, %b, %c {rtile.request = #rtile.geom<rm2 rn5 lanes8>} : (tensor<97x61xf32>, tensor<61x83xf32>, tensor<83xf32>) -> tensor<97x83xf32>
  func.return %ok : tensor<97x83xf32>
}

// IR-LABEL: func.func @lanes
// IR: rtile.geom = #rtile.geom<rm4 rn3 lanes8>
// IR-LABEL: func.func @narrow
// IR-NOT: rtile.geom =
// IR-LABEL: func.func @rows
// IR: rtile.geom = #rtile.geom<rm3 rn3 lanes8>
// IR-LABEL: func.func @cols
// IR: rtile.geom = #rtile.geom<rm4 rn2 lanes8>
// IR-LABEL: func.func @budget
// IR: rtile.geom = #rtile.geom<rm4 rn3 lanes8>
// IR-LABEL: func.func @honoured
// IR: rtile.request = #rtile.geom<rm2 rn5 lanes8>, rtile.geom = #rtile.geom<rm2 rn5 lanes8>
