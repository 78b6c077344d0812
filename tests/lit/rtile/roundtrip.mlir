// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s

// The geometry prints in the model's display form; the cover is the
// decomposition register_tile.cover gives: full passes, a column tail whose
// last vector is partial (3 of 8 lanes) and a one-row band.

// CHECK-LABEL: func.func @gebp_f32
// CHECK: %{{.*}} = rtile.gebp %a, %b geom <rm4 rn3 lanes8> cover <m_full 96 n_full 72 tail [8, 3] band 1> : tensor<97x61xf32>, tensor<61x83xf32> -> tensor<97x83xf32>
func.func @gebp_f32(%a: tensor<97x61xf32>, %b: tensor<61x83xf32>) -> tensor<97x83xf32> {
  %c = rtile.gebp %a, %b geom <rm4 rn3 lanes8> cover <m_full 96 n_full 72 tail [8, 3] band 1> : tensor<97x61xf32>, tensor<61x83xf32> -> tensor<97x83xf32>
  func.return %c : tensor<97x83xf32>
}

// The generic form parses to the same op.
// CHECK-LABEL: func.func @generic
// CHECK: rtile.gebp %a, %b geom <rm4 rn1 lanes16> cover <m_full 3136 n_full 16 tail [8] band 0> : tensor<3136x144xf32>, tensor<144x24xf32> -> tensor<3136x24xf32>
func.func @generic(%a: tensor<3136x144xf32>, %b: tensor<144x24xf32>) -> tensor<3136x24xf32> {
  %c = "rtile.gebp"(%a, %b) <{geom = #rtile.geom<rm4 rn1 lanes16>, cover = #rtile.cover<m_full 3136 n_full 16 tail [8] band 0>}> : (tensor<3136x144xf32>, tensor<144x24xf32>) -> tensor<3136x24xf32>
  func.return %c : tensor<3136x24xf32>
}

// int8 operands accumulate into i32; a tail-free site has an empty tail.
// CHECK-LABEL: func.func @gebp_i8
// CHECK: rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 784 n_full 32 tail [] band 0> : tensor<784x192xi8>, tensor<192x32xi8> -> tensor<784x32xi32>
func.func @gebp_i8(%a: tensor<784x192xi8>, %b: tensor<192x32xi8>) -> tensor<784x32xi32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 784 n_full 32 tail [] band 0> : tensor<784x192xi8>, tensor<192x32xi8> -> tensor<784x32xi32>
  func.return %c : tensor<784x32xi32>
}

// The attributes stand alone too.
// CHECK-LABEL: func.func @attrs
// CHECK-SAME: rtile.geom = #rtile.geom<rm1 rn6 lanes16>
// CHECK-SAME: rtile.cover = #rtile.cover<m_full 1 n_full 960 tail [16, 16, 8] band 0>
func.func @attrs() attributes {rtile.geom = #rtile.geom<rm1 rn6 lanes16>, rtile.cover = #rtile.cover<m_full 1 n_full 960 tail [16, 16, 8] band 0>} {
  func.return
}

// The int8 multiply-accumulate of the lowered kernels: two k steps (an int16
// pair) or one, widened to i32.
// CHECK-LABEL: func.func @dot_acc
// CHECK: %r = rtile.dot_acc %acc, %a, %b0, %b1 : vector<2xi8>, vector<8xi8>, vector<8xi8> into vector<8xi32>
// CHECK: %s = rtile.dot_acc %r, %a1, %b0 : vector<1xi8>, vector<8xi8> into vector<8xi32>
func.func @dot_acc(%acc: vector<8xi32>, %a: vector<2xi8>, %a1: vector<1xi8>, %b0: vector<8xi8>, %b1: vector<8xi8>) -> vector<8xi32> {
  %r = rtile.dot_acc %acc, %a, %b0, %b1 : vector<2xi8>, vector<8xi8>, vector<8xi8> into vector<8xi32>
  %s = "rtile.dot_acc"(%r, %a1, %b0) : (vector<8xi32>, vector<1xi8>, vector<8xi8>) -> vector<8xi32>
  func.return %s : vector<8xi32>
}
