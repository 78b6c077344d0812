// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trips of the window ops (conv, conv_transpose, pools), batch_norm and the
// matrix products. Feature maps are channels-last; conv weights are OHWI.

// GENERIC: "nn.conv"(%x, %w, %b) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64}> : (tensor<1x9x9x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x5x5x8xf32>
// GENERIC: "nn.conv_transpose"(%x, %w, %b) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>}>
// GENERIC: "nn.max_pool"(%x) <{kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64}>
// GENERIC: "nn.gemm"(%a, %b, %c) <{alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32, trans_a = 1 : i64, trans_b = 1 : i64}>

// A 3x3 conv with every window property; the defaults are omitted when absent.
// CHECK-LABEL: func.func @conv2d(
// CHECK-SAME: %x: tensor<1x9x9x3xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x5x5x8xf32> {
// CHECK-NEXT: %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x9x9x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x5x5x8xf32>
// CHECK-NEXT: %1 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x9x9x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x7x7x8xf32>
// CHECK-NEXT: func.return %0 : tensor<1x5x5x8xf32>
func.func @conv2d(%x: tensor<1x9x9x3xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x5x5x8xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1 : i64} : (tensor<1x9x9x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x5x5x8xf32>
  %1 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x9x9x3xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x7x7x8xf32>
  func.return %0 : tensor<1x5x5x8xf32>
}

// Depthwise (group = channels) and a dilated 1D conv on an (N, W, C) map.
// CHECK-LABEL: func.func @depthwise_1d(
// CHECK-SAME: %x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x1xf32>, %b: tensor<4xf32>, %s: tensor<1x16x4xf32>, %w1: tensor<6x3x4xf32>, %b1: tensor<6xf32>) -> tensor<1x12x6xf32> {
// CHECK-NEXT: %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, group = 4 : i64} : (tensor<1x8x8x4xf32>, tensor<4x3x3x1xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
// CHECK-NEXT: %1 = nn.conv %s, %w1, %b1 {kernel = array<i64: 3>, dilations = array<i64: 2>} : (tensor<1x16x4xf32>, tensor<6x3x4xf32>, tensor<6xf32>) -> tensor<1x12x6xf32>
// CHECK-NEXT: func.return %1 : tensor<1x12x6xf32>
func.func @depthwise_1d(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x1xf32>, %b: tensor<4xf32>, %s: tensor<1x16x4xf32>, %w1: tensor<6x3x4xf32>, %b1: tensor<6xf32>) -> tensor<1x12x6xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, group = 4 : i64} : (tensor<1x8x8x4xf32>, tensor<4x3x3x1xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  %1 = nn.conv %s, %w1, %b1 {kernel = array<i64: 3>, dilations = array<i64: 2>} : (tensor<1x16x4xf32>, tensor<6x3x4xf32>, tensor<6xf32>) -> tensor<1x12x6xf32>
  func.return %1 : tensor<1x12x6xf32>
}

// A transposed conv doubling the map: weights (Cin, kh, kw, Cout / group).
// CHECK-LABEL: func.func @conv_transpose(
// CHECK-SAME: %x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x6xf32>, %b: tensor<6xf32>) -> tensor<1x16x16x6xf32> {
// CHECK-NEXT: %0 = nn.conv_transpose %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x6xf32>, tensor<6xf32>) -> tensor<1x16x16x6xf32>
// CHECK-NEXT: func.return %0 : tensor<1x16x16x6xf32>
func.func @conv_transpose(%x: tensor<1x8x8x4xf32>, %w: tensor<4x3x3x6xf32>, %b: tensor<6xf32>) -> tensor<1x16x16x6xf32> {
  %0 = nn.conv_transpose %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>} : (tensor<1x8x8x4xf32>, tensor<4x3x3x6xf32>, tensor<6xf32>) -> tensor<1x16x16x6xf32>
  func.return %0 : tensor<1x16x16x6xf32>
}

// Pools: ceil_mode, dilations (max only), count_include_pad (average only), 1D.
// CHECK-LABEL: func.func @pools(
// CHECK-SAME: %x: tensor<1x8x8x4xf32>, %s: tensor<1x10x4xf32>) -> tensor<1x4x4x4xf32> {
// CHECK-NEXT: %0 = nn.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %1 = nn.max_pool %x {kernel = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x6x6x4xf32>
// CHECK-NEXT: %2 = nn.average_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (tensor<1x8x8x4xf32>) -> tensor<1x5x5x4xf32>
// CHECK-NEXT: %3 = nn.average_pool %s {kernel = array<i64: 3>, strides = array<i64: 3>} : (tensor<1x10x4xf32>) -> tensor<1x3x4xf32>
// CHECK-NEXT: %4 = nn.global_average_pool %x : (tensor<1x8x8x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NEXT: %5 = nn.global_average_pool %s : (tensor<1x10x4xf32>) -> tensor<1x1x4xf32>
// CHECK-NEXT: func.return %0 : tensor<1x4x4x4xf32>
func.func @pools(%x: tensor<1x8x8x4xf32>, %s: tensor<1x10x4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = nn.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x8x8x4xf32>) -> tensor<1x4x4x4xf32>
  %1 = nn.max_pool %x {kernel = array<i64: 2, 2>, dilations = array<i64: 2, 2>} : (tensor<1x8x8x4xf32>) -> tensor<1x6x6x4xf32>
  %2 = nn.average_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (tensor<1x8x8x4xf32>) -> tensor<1x5x5x4xf32>
  %3 = nn.average_pool %s {kernel = array<i64: 3>, strides = array<i64: 3>} : (tensor<1x10x4xf32>) -> tensor<1x3x4xf32>
  %4 = nn.global_average_pool %x : (tensor<1x8x8x4xf32>) -> tensor<1x1x1x4xf32>
  %5 = nn.global_average_pool %s : (tensor<1x10x4xf32>) -> tensor<1x1x4xf32>
  func.return %0 : tensor<1x4x4x4xf32>
}

// An unfolded batch normalisation over the channel axis.
// CHECK-LABEL: func.func @batch_norm(
// CHECK-SAME: %x: tensor<1x4x4x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x4x4x3xf32> {
// CHECK-NEXT: %0 = nn.batch_norm %x, %g, %b, %m, %v {epsilon = 1.000000e-05 : f32} : (tensor<1x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NEXT: func.return %0 : tensor<1x4x4x3xf32>
func.func @batch_norm(%x: tensor<1x4x4x3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<1x4x4x3xf32> {
  %0 = nn.batch_norm %x, %g, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x4x4x3xf32>
  func.return %0 : tensor<1x4x4x3xf32>
}

// Gemm with both transposes and scalars; matmul with broadcast batch axes.
// CHECK-LABEL: func.func @matrix(
// CHECK-SAME: %a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<1x5xf32>, %x: tensor<2x1x3x4xf32>, %y: tensor<5x4x6xf32>) -> tensor<3x5xf32> {
// CHECK-NEXT: %0 = nn.gemm %a, %b, %c {alpha = 2.000000e+00 : f32, beta = 5.000000e-01 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: %1 = nn.matmul %x, %y : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
// CHECK-NEXT: func.return %0 : tensor<3x5xf32>
func.func @matrix(%a: tensor<4x3xf32>, %b: tensor<5x4xf32>, %c: tensor<1x5xf32>, %x: tensor<2x1x3x4xf32>, %y: tensor<5x4x6xf32>) -> tensor<3x5xf32> {
  %0 = nn.gemm %a, %b, %c {alpha = 2.0 : f32, beta = 0.5 : f32, trans_a = 1 : i64, trans_b = 1 : i64} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
  %1 = nn.matmul %x, %y : (tensor<2x1x3x4xf32>, tensor<5x4x6xf32>) -> tensor<2x5x3x6xf32>
  func.return %0 : tensor<3x5xf32>
}
