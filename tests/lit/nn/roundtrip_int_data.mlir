// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s

// Round trips of the integer and boolean data ops.

// CHECK-LABEL: func.func @data(%x: tensor<1x4x4x8xi32>, %m: tensor<1x4x4x1xi1>, %ids: tensor<2x3xi64>, %t: tensor<10x8xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.cast %x : (tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %1 = nn.not %m : (tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
// CHECK-NEXT: %2 = nn.and %m, %1 : (tensor<1x4x4x1xi1>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
// CHECK-NEXT: %3 = nn.or %m, %2 : (tensor<1x4x4x1xi1>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
// CHECK-NEXT: %4 = nn.xor %m, %3 : (tensor<1x4x4x1xi1>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
// CHECK-NEXT: %5 = nn.where %4, %0, %0 : (tensor<1x4x4x1xi1>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %6 = nn.argmax %5 {axes = array<i64: 3>, keepdims = 0 : i64, select_last_index = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4xi64>
// CHECK-NEXT: %7 = nn.argmin %5 {axes = array<i64: 1>, keepdims = 1 : i64, select_last_index = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x1x4x8xi64>
// CHECK-NEXT: %8 = nn.take %t, %ids {axis = 0 : i64} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
// CHECK-NEXT: %9 = nn.top_k_values %5 {axis = 3 : i64, k = 3 : i64, largest = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NEXT: %10 = nn.top_k_indices %5 {axis = 3 : i64, k = 3 : i64, largest = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x3xi64>
// CHECK-NEXT: func.return %5 : tensor<1x4x4x8xf32>
// CHECK-NEXT: }

func.func @data(%x: tensor<1x4x4x8xi32>, %m: tensor<1x4x4x1xi1>, %ids: tensor<2x3xi64>, %t: tensor<10x8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.cast %x : (tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xf32>
  %1 = nn.not %m : (tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
  %2 = nn.and %m, %1 : (tensor<1x4x4x1xi1>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
  %3 = nn.or %m, %2 : (tensor<1x4x4x1xi1>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
  %4 = nn.xor %m, %3 : (tensor<1x4x4x1xi1>, tensor<1x4x4x1xi1>) -> tensor<1x4x4x1xi1>
  %5 = nn.where %4, %0, %0 : (tensor<1x4x4x1xi1>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %6 = nn.argmax %5 {axes = array<i64: 3>, keepdims = 0, select_last_index = 0} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4xi64>
  %7 = nn.argmin %5 {axes = array<i64: 1>, keepdims = 1, select_last_index = 1} : (tensor<1x4x4x8xf32>) -> tensor<1x1x4x8xi64>
  %8 = nn.take %t, %ids {axis = 0} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
  %9 = nn.top_k_values %5 {axis = 3, k = 3, largest = 1} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x3xf32>
  %10 = nn.top_k_indices %5 {axis = 3, k = 3, largest = 0} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x3xi64>
  func.return %5 : tensor<1x4x4x8xf32>
}

// CHECK-LABEL: func.func @linear_quant(%x: tensor<1x4x4x8xf32>, %s: tensor<8xf32>, %z: tensor<8xi8>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.quantize_linear %x, %s, %z : (tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xi8>) -> tensor<1x4x4x8xi8>
// CHECK-NEXT: %1 = nn.dequantize_linear %0, %s, %z : (tensor<1x4x4x8xi8>, tensor<8xf32>, tensor<8xi8>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: func.return %1 : tensor<1x4x4x8xf32>
// CHECK-NEXT: }

func.func @linear_quant(%x: tensor<1x4x4x8xf32>, %s: tensor<8xf32>, %z: tensor<8xi8>) -> tensor<1x4x4x8xf32> {
  %0 = nn.quantize_linear %x, %s, %z : (tensor<1x4x4x8xf32>, tensor<8xf32>, tensor<8xi8>) -> tensor<1x4x4x8xi8>
  %1 = nn.dequantize_linear %0, %s, %z : (tensor<1x4x4x8xi8>, tensor<8xf32>, tensor<8xi8>) -> tensor<1x4x4x8xf32>
  func.return %1 : tensor<1x4x4x8xf32>
}

// CHECK-LABEL: func.func @integer_products(%x: tensor<1x6x6x4xui8>, %w: tensor<8x3x3x4xi32>, %a: tensor<5x4xi8>, %b: tensor<4x3xi32>) -> tensor<1x4x4x8xi32> {
// CHECK-NEXT: %0 = nn.conv_integer %x, %w {kernel = array<i64: 3, 3>, x_zero_point = 128 : i64} : (tensor<1x6x6x4xui8>, tensor<8x3x3x4xi32>) -> tensor<1x4x4x8xi32>
// CHECK-NEXT: %1 = nn.matmul_integer %a, %b {a_zero_point = -2 : i64} : (tensor<5x4xi8>, tensor<4x3xi32>) -> tensor<5x3xi32>
// CHECK-NEXT: func.return %0 : tensor<1x4x4x8xi32>
// CHECK-NEXT: }

func.func @integer_products(%x: tensor<1x6x6x4xui8>, %w: tensor<8x3x3x4xi32>, %a: tensor<5x4xi8>, %b: tensor<4x3xi32>) -> tensor<1x4x4x8xi32> {
  %0 = nn.conv_integer %x, %w {kernel = array<i64: 3, 3>, x_zero_point = 128} : (tensor<1x6x6x4xui8>, tensor<8x3x3x4xi32>) -> tensor<1x4x4x8xi32>
  %1 = nn.matmul_integer %a, %b {a_zero_point = -2} : (tensor<5x4xi8>, tensor<4x3xi32>) -> tensor<5x3xi32>
  func.return %0 : tensor<1x4x4x8xi32>
}
