// RUN: tigris-opt %S/../Inputs/conv1d_pool.onnx | filecheck %s

// Rank-3 feature maps are (N, W, C) inside; 1D conv and pool keep one spatial axis.
// CHECK:      func.func @main(%x: tensor<1x16x2xf32>) -> tensor<1x8x4xf32>
// CHECK-SAME: nn.input_layouts = ["ncw"]
// CHECK:      nn.weight "conv1d.weight" : tensor<4x5x2xf32>
// CHECK:      nn.conv %x, {{.*}} {kernel = array<i64: 5>, pads = array<i64: 2, 2>} {{.*}} -> tensor<1x16x4xf32>
// CHECK-NEXT: nn.max_pool {{.*}} {kernel = array<i64: 2>, strides = array<i64: 2>} : (tensor<1x16x4xf32>) -> tensor<1x8x4xf32>
