// RUN: tigris-opt %s --lower-to-loops=budget=2K --plan-arena | filecheck %s

// A transposed convolution in bands of its expanded output (each band of 6
// rows reads 3 input rows), then a nearest resize whose source band follows
// its coordinates (2 output rows from 1 input row), added to the first.
func.func @main(%x: tensor<1x8x8x4xf32>) -> tensor<1x16x16x4xf32> {
  %w = nn.weight "w" : tensor<4x2x2x4xf32>
  %b = nn.weight "b" : tensor<4xf32>
  %y = nn.conv_transpose %x, %w, %b {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>, tensor<4x2x2x4xf32>, tensor<4xf32>) -> tensor<1x16x16x4xf32>
  %u = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric"} : (tensor<1x8x8x4xf32>) -> tensor<1x16x16x4xf32>
  %z = nn.add %y, %u : (tensor<1x16x16x4xf32>, tensor<1x16x16x4xf32>) -> tensor<1x16x16x4xf32>
  func.return %z : tensor<1x16x16x4xf32>
}
// CHECK:      sym_name = "stage0_load_x", type = memref<3x2xindex>, initial_value = dense<{{\[}}[0, 3], [3, 6], [6, 8]]>
// CHECK:      sym_name = "stage0_out_conv_transpose0", type = memref<3x2xindex>, initial_value = dense<{{\[}}[0, 6], [6, 12], [12, 16]]>
// CHECK:      sym_name = "stage1_load_x", type = memref<8x2xindex>, initial_value = dense<{{\[}}[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 6], [6, 7], [7, 8]]>
// CHECK:      sym_name = "stage1_out_resize1", type = memref<8x2xindex>, initial_value = dense<{{\[}}[0, 2], [2, 4], [4, 6], [6, 8], [8, 10], [10, 12], [12, 14], [14, 16]]>
// CHECK:      scf.for %tile = %c0 to %c3 step %c1 {
// CHECK:        loop.band ins(%{{.*}}, %w_w, %w_b : memref<1x?x8x4xf32, {{.*}}) outs(%{{.*}} : memref<1x?x16x4xf32, {{.*}}) bounds(%held_x_lo, %held_x_hi, %out_conv_transpose0_lo, %out_conv_transpose0_hi)
// CHECK-NEXT:   ^bb0
// CHECK-NEXT:     nn.conv_transpose
// CHECK:      } {loop.unit = "stage 0", loop.kind = "expanded"}
// CHECK:      scf.for %tile_1 = %c0 to %c8 step %c1 {
// CHECK:        loop.band ins(%{{.*}} : memref<1x?x8x4xf32, {{.*}}) outs(%{{.*}} : memref<1x?x16x4xf32, {{.*}}) bounds(%held_x_lo_1, %held_x_hi_1, %out_resize1_lo, %out_resize1_hi) cuts [array<i64: 1>, array<i64: 1>]
// CHECK-NEXT:   ^bb0
// CHECK-NEXT:     nn.resize
// CHECK:        loop.band ins(%{{.*}}, %{{.*}} : {{.*}}) outs({{.*}}) bounds(%out_add2_lo, %out_add2_hi, %out_add2_lo, %out_add2_hi, %out_add2_lo, %out_add2_hi)
// CHECK-NEXT:   ^bb0
// CHECK-NEXT:     nn.add
// CHECK:      } {loop.unit = "stage 1", loop.kind = "resize"}
