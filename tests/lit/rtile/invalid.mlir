// RUN: tigris-opt %s --verify-diagnostics --split-input-file | filecheck %s

// CHECK: #rtile.geom<rm0 rn2 lanes8>: rm must be at least 1, got 0
func.func @rm0(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %c = rtile.gebp %a, %b geom <rm0 rn2 lanes8> cover <m_full 0 n_full 16 tail [] band 8> : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}

// -----

// CHECK: #rtile.geom<rm4 rn2 lanes3>: lanes must be a power of two >= 2, got 3
func.func @lanes3() attributes {g = #rtile.geom<rm4 rn2 lanes3>} {
  func.return
}

// -----

// CHECK: #rtile.geom<rm4 rn0 lanes8>: rn must be at least 1, got 0
func.func @rn0() attributes {g = #rtile.geom<rm4 rn0 lanes8>} {
  func.return
}

// -----

// CHECK: rtile.gebp: cover #rtile.cover<m_full 8 n_full 0 tail [8, 8] band 0> does not match rm4 rn2 lanes8 on 8x16, expected #rtile.cover<m_full 8 n_full 16 tail [] band 0>
func.func @wrong_cover(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 8 n_full 0 tail [8, 8] band 0> : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}

// -----

// CHECK: rtile.gebp: contraction mismatch, lhs has 4 columns and rhs 5 rows
func.func @k_mismatch(%a: tensor<8x4xf32>, %b: tensor<5x16xf32>) -> tensor<8x16xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 8 n_full 16 tail [] band 0> : tensor<8x4xf32>, tensor<5x16xf32> -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}

// -----

// CHECK: rtile.gebp: result must be 8x16, got 8x15
func.func @bad_result(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x15xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn1 lanes8> cover <m_full 8 n_full 8 tail [7] band 0> : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x15xf32>
  func.return %c : tensor<8x15xf32>
}

// -----

// CHECK: rtile.gebp: rows-fit: rm=4 exceeds the row extent m=3
func.func @rows_fit(%a: tensor<3x4xf32>, %b: tensor<4x16xf32>) -> tensor<3x16xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 0 n_full 16 tail [] band 3> : tensor<3x4xf32>, tensor<4x16xf32> -> tensor<3x16xf32>
  func.return %c : tensor<3x16xf32>
}

// -----

// CHECK: rtile.gebp: columns-fit: rn*lanes=24 exceeds the column extent n=16
func.func @columns_fit(%a: tensor<8x4xf32>, %b: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn3 lanes8> cover <m_full 8 n_full 0 tail [8, 8] band 0> : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}

// -----

// CHECK: rtile.gebp: i8 x i8 must accumulate into i32, got i8
func.func @i8_result(%a: tensor<8x4xi8>, %b: tensor<4x16xi8>) -> tensor<8x16xi8> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 8 n_full 16 tail [] band 0> : tensor<8x4xi8>, tensor<4x16xi8> -> tensor<8x16xi8>
  func.return %c : tensor<8x16xi8>
}

// -----

// CHECK: rtile.gebp: lhs and rhs element types differ
func.func @mixed(%a: tensor<8x4xf32>, %b: tensor<4x16xi8>) -> tensor<8x16xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 8 n_full 16 tail [] band 0> : tensor<8x4xf32>, tensor<4x16xi8> -> tensor<8x16xf32>
  func.return %c : tensor<8x16xf32>
}

// -----

// CHECK: rtile.kernel: unknown multiply-accumulate 'fmac' (one of fma, vpdpbusd, pmaddwd, smlad, vmladava, none)
func.func @dot(%y: tensor<4x16xf32>) {
  rtile.kernel %y dot "fmac" k 4 n 16 groups 1 : tensor<4x16xf32> {
    rtile.row_blocks rows 64 {
      rtile.k_blocks k 4 step 4 {
        rtile.panels cols 0 to 16 width 16 {
          rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
        }
      }
    }
    rtile.epilogue "bias"
  }
  func.return
}

// -----

// CHECK: rtile.kernel: the body holds rtile.row_blocks then rtile.epilogue, got rtile.epilogue
func.func @no_blocks(%y: tensor<4x16xf32>) {
  rtile.kernel %y dot "fma" k 4 n 16 groups 1 : tensor<4x16xf32> {
    rtile.epilogue "bias"
  }
  func.return
}

// -----

// CHECK: rtile.panels: panels of 16 columns swept by rm4 rn1 lanes8 (8)
func.func @width(%y: tensor<4x16xf32>) {
  rtile.panels cols 0 to 16 width 16 {
    rtile.micro <rm4 rn1 lanes8> last 8 edges [1, 2, 3] unroll 4
  }
  func.return
}

// -----

// CHECK: rtile.micro: edge tiles take 1 to 3 rows, got [4]
func.func @edges() {
  rtile.micro <rm4 rn1 lanes8> last 8 edges [4] unroll 4
  func.return
}

// -----

// CHECK: rtile.micro: last must be 1 to 8 lanes, got 9
func.func @last() {
  rtile.micro <rm4 rn1 lanes8> last 9 edges [] unroll 1
  func.return
}

// -----

// CHECK: rtile.pack_a: kind is rows, im2col, window or winograd, got 'cols'
func.func @pack() {
  rtile.pack_a "cols" kp 4 into f32 scratch 64
  func.return
}

// -----

// CHECK: rtile.row_blocks: merge must be at least 1, got 0
func.func @merge0(%y: tensor<1x5x5x16xf32>) {
  rtile.kernel %y dot "fma" k 16 n 16 groups 1 : tensor<1x5x5x16xf32> {
    rtile.row_blocks rows 64 merge 0 {
      rtile.k_blocks k 16 step 16 {
        rtile.panels cols 0 to 16 width 16 {
          rtile.micro <rm4 rn2 lanes8> last 8 edges [1, 2, 3] unroll 4
        }
      }
    }
    rtile.epilogue "bias"
  }
  func.return
}
