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

// CHECK: rtile.dot_acc: a must be vector<1xi8> (one i8 per B row), got vector<2xi8>
func.func @dot_a(%acc: vector<8xi32>, %a: vector<2xi8>, %b0: vector<8xi8>) -> vector<8xi32> {
  %r = rtile.dot_acc %acc, %a, %b0 : vector<2xi8>, vector<8xi8> into vector<8xi32>
  func.return %r : vector<8xi32>
}

// -----

// CHECK: rtile.dot_acc: B row #1 must be vector<8xi8> like the accumulator's 8 lanes, got vector<4xi8>
func.func @dot_b(%acc: vector<8xi32>, %a: vector<2xi8>, %b0: vector<8xi8>, %b1: vector<4xi8>) -> vector<8xi32> {
  %r = rtile.dot_acc %acc, %a, %b0, %b1 : vector<2xi8>, vector<8xi8>, vector<4xi8> into vector<8xi32>
  func.return %r : vector<8xi32>
}

// -----

// CHECK: rtile.dot_acc: the accumulator must be a vector of i32, got vector<8xf32>
func.func @dot_acc_f32(%acc: vector<8xf32>, %a: vector<1xi8>, %b0: vector<8xi8>) -> vector<8xf32> {
  %r = rtile.dot_acc %acc, %a, %b0 : vector<1xi8>, vector<8xi8> into vector<8xf32>
  func.return %r : vector<8xf32>
}
