// RUN: tigris-opt %s --gebp-tile=target=avx2 --lower-gebp 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=WARN < %t.err
// RUN: tigris-opt %s --gebp-tile=target=avx2 --lower-gebp | tigris-opt | filecheck %s

// A float32 gemm of 13 x 19 x 9 on AVX2 takes rm4 rn2 lanes8, covered by 12 x 16
// full passes, a column tail of one partial vector (3 of 8 lanes) and a one-row
// band. The graph function becomes a memref function (its result an
// out-parameter) calling one kernel; the kernel is that cover as loops.

// CHECK-LABEL: func.func @f(%a: memref<13x9xf32>, %b: memref<9x19xf32>, %c: memref<19xf32>, %y: memref<13x19xf32>) {
// CHECK-NEXT:    func.call @gebp_13x19x9_f32_rm4rn2l8_c19(%a, %b, %c, %y)
// CHECK-NEXT:    func.return

// CHECK-LABEL: func.func private @gebp_13x19x9_f32_rm4rn2l8_c19(%A: memref<13x9xf32>, %B: memref<9x19xf32>, %C: memref<19xf32>, %Y: memref<13x19xf32>)
// CHECK-SAME:    rtile.geom = #rtile.geom<rm4 rn2 lanes8>, rtile.cover = #rtile.cover<m_full 12 n_full 16 tail [3] band 1>, rtile.target = "avx2"

// Full passes: columns outside, rows inside, the k chain innermost with the
// rm x rn accumulators as iter_args, started from the bias row.
// CHECK:         scf.for %[[J:[a-z0-9_]+]] = %c0 to %c16 step %c16 {
// CHECK-NEXT:      scf.for %[[I:[a-z0-9_]+]] = %c0 to %c12 step %c4 {
// CHECK:             %[[C0:[a-z0-9_]+]] = vector.load %C[%[[J]]] : memref<19xf32>, vector<8xf32>
// CHECK:             %r0c0, %r0c1, %r1c0, %r1c1, %r2c0, %r2c1, %r3c0, %r3c1 = scf.for %[[K:[a-z0-9_]+]] = %c0 to %c9 step %c1 iter_args(%[[R00:[a-z0-9_]+]] = %[[C0]], {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT:          %[[B0:[a-z0-9_]+]] = vector.load %B[%[[K]], %[[J]]] : memref<9x19xf32>, vector<8xf32>
// CHECK-NEXT:          %[[B1:[a-z0-9_]+]] = vector.load %B[%[[K]], %{{.*}}] : memref<9x19xf32>, vector<8xf32>
// CHECK-NEXT:          %[[A0:[a-z0-9_]+]] = memref.load %A[%[[I]], %[[K]]] : memref<13x9xf32>
// CHECK-NEXT:          %[[S0:[a-z0-9_]+]] = vector.broadcast %[[A0]] : f32 to vector<8xf32>
// CHECK-NEXT:          %{{.*}} = vector.fma %[[S0]], %[[B0]], %[[R00]] : vector<8xf32>
// CHECK-NEXT:          %{{.*}} = vector.fma %[[S0]], %[[B1]], %{{.*}} : vector<8xf32>
// CHECK-COUNT-3:       vector.broadcast
// CHECK:               scf.yield
// CHECK-COUNT-8:     vector.store %{{.*}}, %Y[%{{.*}}, %{{.*}}] : memref<13x19xf32>, vector<8xf32>

// Column tail over the full rows: one partial vector, loaded with zeros past
// its 3 lanes and stored by its 3 lanes.
// CHECK:         scf.for %{{.*}} = %c0 to %c12 step %c4 {
// CHECK:           %[[M3:[a-z0-9_]+]] = vector.create_mask %c3 : vector<8xi1>
// CHECK:           %[[Z:[a-z0-9_]+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK:           scf.for %{{.*}} = %c0 to %c9 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT:        vector.maskedload %B[%{{.*}}, %c16], %[[M3]], %[[Z]] : memref<9x19xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK-COUNT-4:   vector.maskedstore %Y[%{{.*}}, %c16], %[[M3]], %{{.*}} : memref<13x19xf32>, vector<8xi1>, vector<8xf32>

// Row band: the 13th row over the full columns, then over the tail.
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c16 {
// CHECK:           scf.for %{{.*}} = %c0 to %c9 step %c1 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>) {
// CHECK:             memref.load %A[%c12, %{{.*}}] : memref<13x9xf32>
// CHECK:         vector.create_mask %c3 : vector<8xi1>
// CHECK:         scf.for %{{.*}} = %c0 to %c9 step %c1 iter_args({{.*}}) -> (vector<8xf32>) {
// CHECK:         vector.maskedstore %Y[%c12, %c16]
// CHECK:         func.return
func.func @f(%a: tensor<13x9xf32>, %b: tensor<9x19xf32>, %c: tensor<19xf32>) -> tensor<13x19xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<13x9xf32>, tensor<9x19xf32>, tensor<19xf32>) -> tensor<13x19xf32>
  func.return %y : tensor<13x19xf32>
}

// int8 x int8 -> int32 (rtile.gebp): k in pairs through rtile.dot_acc, the odd
// last k step alone after the loop, zeros as the start.
// CHECK-LABEL: func.func private @gebp_7x21x5_i8_rm4rn2l8(%A: memref<7x5xi8>, %B: memref<5x21xi8>, %Y: memref<7x21xi32>)
// CHECK:         %[[ZI:[a-z0-9_]+]] = arith.constant dense<0> : vector<8xi32>
// CHECK:         scf.for %[[K2:[a-z0-9_]+]] = %c0 to %c4 step %c2 iter_args(%{{.*}} = %[[ZI]], {{.*}}) -> (vector<8xi32>, {{.*}}) {
// CHECK-NEXT:      %[[K1:[a-z0-9_]+]] = arith.addi %[[K2]], %c1 : index
// CHECK-NEXT:      %[[P0:[a-z0-9_]+]] = vector.load %B[%[[K2]], %{{.*}}] : memref<5x21xi8>, vector<8xi8>
// CHECK-NEXT:      %[[P1:[a-z0-9_]+]] = vector.load %B[%[[K1]], %{{.*}}] : memref<5x21xi8>, vector<8xi8>
// CHECK:           %[[AP:[a-z0-9_]+]] = vector.load %A[%{{.*}}, %[[K2]]] : memref<7x5xi8>, vector<2xi8>
// CHECK-NEXT:      rtile.dot_acc %{{.*}}, %[[AP]], %[[P0]], %[[P1]] : vector<2xi8>, vector<8xi8>, vector<8xi8> into vector<8xi32>
// CHECK:         vector.load %B[%c4, %{{.*}}] : memref<5x21xi8>, vector<8xi8>
// CHECK:         vector.load %A[%{{.*}}, %c4] : memref<7x5xi8>, vector<1xi8>
// CHECK:         rtile.dot_acc %{{.*}}, %{{.*}}, %{{.*}} : vector<1xi8>, vector<8xi8> into vector<8xi32>
// CHECK:         vector.maskedload %B[%{{.*}}, %c16], %{{.*}}, %{{.*}} : memref<5x21xi8>, vector<8xi1>, vector<8xi8> into vector<8xi8>
func.func @g(%a: tensor<7x5xi8>, %b: tensor<5x21xi8>) -> tensor<7x21xi32> {
  %c = rtile.gebp %a, %b geom <rm4 rn2 lanes8> cover <m_full 4 n_full 16 tail [5] band 3> {rtile.target = "avx2"} : tensor<7x5xi8>, tensor<5x21xi8> -> tensor<7x21xi32>
  func.return %c : tensor<7x21xi32>
}

// A function that keeps other graph ops calls the kernel through bufferization
// casts; a site the lowering does not cover stays, with a warning.
// CHECK-LABEL: func.func @mixed
// CHECK:         %[[AM:[a-z0-9_]+]] = bufferization.to_buffer %a read_only : tensor<13x9xf32> to memref<13x9xf32>
// CHECK:         %[[YM:[a-z0-9_]+]] = memref.alloc() : memref<13x19xf32>
// CHECK-NEXT:    func.call @gebp_13x19x9_f32_rm4rn2l8_c19(%[[AM]], %{{.*}}, %{{.*}}, %[[YM]])
// CHECK-NEXT:    %y = bufferization.to_tensor %[[YM]] restrict writable : memref<13x19xf32> to tensor<13x19xf32>
// CHECK-NEXT:    %t = nn.gemm %a, %bt, %c {rtile.geom = #rtile.geom<rm4 rn2 lanes8>, {{.*}}trans_b = 1 : i64}
// CHECK-NEXT:    %s = nn.add %y, %t
// WARN: warning: lower-gebp: 'nn.gemm' %t in @mixed (op 2 of its body): left at tensor level: a transposed gemm is not lowered (transpose B first)
func.func @mixed(%a: tensor<13x9xf32>, %b: tensor<9x19xf32>, %bt: tensor<19x9xf32>, %c: tensor<19xf32>) -> tensor<13x19xf32> {
  %y = nn.gemm %a, %b, %c : (tensor<13x9xf32>, tensor<9x19xf32>, tensor<19xf32>) -> tensor<13x19xf32>
  %t = nn.gemm %a, %bt, %c {trans_b = 1 : i64} : (tensor<13x9xf32>, tensor<19x9xf32>, tensor<19xf32>) -> tensor<13x19xf32>
  %s = nn.add %y, %t : (tensor<13x19xf32>, tensor<13x19xf32>) -> tensor<13x19xf32>
  func.return %s : tensor<13x19xf32>
}
