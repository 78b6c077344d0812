// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trips of the extended set's elementwise and reduction ops.

// GENERIC: "nn.selu"(%3) <{alpha = 1.500000e+00 : f32, gamma = 5.000000e-01 : f32}>
// GENERIC: "nn.shrink"(%5) <{bias = 0.000000e+00 : f32, lambd = 5.000000e-01 : f32}>
// GENERIC: "nn.reduce_l2"(%9) <{axes = array<i64: 1, 2>, keepdims = 0 : i64}>
// GENERIC: "nn.layer_norm"(%0, %g, %b) <{axis = 3 : i64, epsilon = 1.000000e-05 : f32}>

// CHECK-LABEL: func.func @extra(%x: tensor<1x4x4x8xf32>, %e: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.neg %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %1 = nn.reciprocal %0 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %2 = nn.softplus %1 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %3 = nn.softsign %2 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %4 = nn.selu %3 {alpha = 1.500000e+00 : f32, gamma = 5.000000e-01 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %5 = nn.sign %4 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %6 = nn.shrink %5 {bias = 0.000000e+00 : f32, lambd = 5.000000e-01 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %7 = nn.erf %6 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %8 = nn.mish %7 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %9 = nn.pow %8, %e : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %10 = nn.reduce_min %9 {axes = array<i64: 3>, keepdims = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x1xf32>
// CHECK-NEXT: %11 = nn.reduce_l2 %9 {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT: %12 = nn.reduce_prod %9 {axes = array<i64: 3>, keepdims = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x1xf32>
// CHECK-NEXT: func.return %9 : tensor<1x4x4x8xf32>
// CHECK-NEXT: }

func.func @extra(%x: tensor<1x4x4x8xf32>, %e: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.neg %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %1 = nn.reciprocal %0 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %2 = nn.softplus %1 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %3 = nn.softsign %2 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %4 = nn.selu %3 {alpha = 1.5 : f32, gamma = 0.5 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %5 = nn.sign %4 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %6 = nn.shrink %5 {bias = 0.0 : f32, lambd = 0.5 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %7 = nn.erf %6 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %8 = nn.mish %7 : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %9 = nn.pow %8, %e : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %10 = nn.reduce_min %9 {axes = array<i64: 3>, keepdims = 1} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x1xf32>
  %11 = nn.reduce_l2 %9 {axes = array<i64: 1, 2>, keepdims = 0} : (tensor<1x4x4x8xf32>) -> tensor<1x8xf32>
  %12 = nn.reduce_prod %9 {axes = array<i64: 3>, keepdims = 1} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x1xf32>
  func.return %9 : tensor<1x4x4x8xf32>
}

// CHECK-LABEL: func.func @norms(%x: tensor<1x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.lrn %x {size = 5 : i64, alpha = 1.000000e-04 : f32, beta = 7.500000e-01 : f32, bias = 1.000000e+00 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %1 = nn.layer_norm %0, %g, %b {axis = 3 : i64, epsilon = 1.000000e-05 : f32} : (tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %2 = nn.instance_norm %1, %g, %b {epsilon = 1.000000e-05 : f32} : (tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: func.return %2 : tensor<1x4x4x8xf32>
// CHECK-NEXT: }

func.func @norms(%x: tensor<1x4x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.lrn %x {size = 5, alpha = 1.0e-04 : f32, beta = 0.75 : f32, bias = 1.0 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %1 = nn.layer_norm %0, %g, %b {axis = 3, epsilon = 1.0e-05 : f32} : (tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  %2 = nn.instance_norm %1, %g, %b {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  func.return %2 : tensor<1x4x4x8xf32>
}

// CHECK-LABEL: func.func @selections(%x: tensor<1x4x6x8xf32>) -> tensor<1x2x3x8xf32> {
// CHECK-NEXT: %0 = nn.slice %x {starts = array<i64: 0, 3, 5, 0>, ends = array<i64: 1, -1, -1, 8>, steps = array<i64: 1, -2, -2, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x2x3x8xf32>
// CHECK-NEXT: %1 = nn.tile %0 {repeats = array<i64: 2, 1, 1, 1>} : (tensor<1x2x3x8xf32>) -> tensor<2x2x3x8xf32>
// CHECK-NEXT: %2 = nn.expand %0 {shape = array<i64: 3, 2, 3, 8>} : (tensor<1x2x3x8xf32>) -> tensor<3x2x3x8xf32>
// CHECK-NEXT: %3 = nn.gather %x {axis = 3 : i64, indices = array<i64: 7, 0>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x6x2xf32>
// CHECK-NEXT: func.return %0 : tensor<1x2x3x8xf32>
// CHECK-NEXT: }

func.func @selections(%x: tensor<1x4x6x8xf32>) -> tensor<1x2x3x8xf32> {
  %0 = nn.slice %x {starts = array<i64: 0, 3, 5, 0>, ends = array<i64: 1, -1, -1, 8>, steps = array<i64: 1, -2, -2, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x2x3x8xf32>
  %1 = nn.tile %0 {repeats = array<i64: 2, 1, 1, 1>} : (tensor<1x2x3x8xf32>) -> tensor<2x2x3x8xf32>
  %2 = nn.expand %0 {shape = array<i64: 3, 2, 3, 8>} : (tensor<1x2x3x8xf32>) -> tensor<3x2x3x8xf32>
  %3 = nn.gather %x {axis = 3, indices = array<i64: 7, 0>} : (tensor<1x4x6x8xf32>) -> tensor<1x4x6x2xf32>
  func.return %0 : tensor<1x2x3x8xf32>
}

// CHECK-LABEL: func.func @recurrent(%x: tensor<5x2x3xf32>, %w: tensor<2x16x3xf32>, %r: tensor<2x16x4xf32>, %b: tensor<2x32xf32>, %h: tensor<2x2x4xf32>, %gw: tensor<1x12x3xf32>, %gr: tensor<1x12x4xf32>, %gb: tensor<1x24xf32>, %gh: tensor<1x2x4xf32>) -> tensor<5x2x2x4xf32> {
// CHECK-NEXT: %y, %yh, %yc = nn.lstm %x, %w, %r, %b, %h, %h {hidden_size = 4 : i64, direction = "bidirectional"} : (tensor<5x2x3xf32>, tensor<2x16x3xf32>, tensor<2x16x4xf32>, tensor<2x32xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> (tensor<5x2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT: %gy, %gyh = nn.gru %x, %gw, %gr, %gb, %gh {hidden_size = 4 : i64, direction = "forward", linear_before_reset = 1 : i64} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
// CHECK-NEXT: func.return %y : tensor<5x2x2x4xf32>
// CHECK-NEXT: }

func.func @recurrent(%x: tensor<5x2x3xf32>, %w: tensor<2x16x3xf32>, %r: tensor<2x16x4xf32>, %b: tensor<2x32xf32>, %h: tensor<2x2x4xf32>, %gw: tensor<1x12x3xf32>, %gr: tensor<1x12x4xf32>, %gb: tensor<1x24xf32>, %gh: tensor<1x2x4xf32>) -> tensor<5x2x2x4xf32> {
  %y, %yh, %yc = nn.lstm %x, %w, %r, %b, %h, %h {hidden_size = 4, direction = "bidirectional"} : (tensor<5x2x3xf32>, tensor<2x16x3xf32>, tensor<2x16x4xf32>, tensor<2x32xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> (tensor<5x2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  %gy, %gyh = nn.gru %x, %gw, %gr, %gb, %gh {hidden_size = 4, direction = "forward", linear_before_reset = 1} : (tensor<5x2x3xf32>, tensor<1x12x3xf32>, tensor<1x12x4xf32>, tensor<1x24xf32>, tensor<1x2x4xf32>) -> (tensor<5x1x2x4xf32>, tensor<1x2x4xf32>)
  func.return %y : tensor<5x2x2x4xf32>
}
