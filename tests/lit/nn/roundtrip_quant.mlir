// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trips of quantized tensors: the #nn.q<scale : zero_point> encoding of
// i8 and ui8 activations, nn.quantize / nn.dequantize, and the quantized forms
// of conv, gemm, matmul, add, max_pool and concat.

// The optional fourth operand needs no segment sizes in the generic form.
// GENERIC: "nn.conv"(%x, %w, %b, %s) <{kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}> : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<4x3x3x8xi8>, tensor<4xi32>, tensor<4xf32>) -> tensor<1x4x4x4xui8, #nn.q<0.1 : 128>>
// GENERIC: "nn.matmul"(%x, %w, %s) : (tensor<2x3x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8>, tensor<5xf32>)
// GENERIC: "nn.matmul"(%x, %y) : (tensor<2x3x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8, #nn.q<0.04 : 1>>)

// Quantize into i8 and ui8 and back; the scale prints as the shortest float32.
// CHECK-LABEL: func.func @quantize(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.quantize %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xi8, #nn.q<0.0235 : -3>>
// CHECK-NEXT: %1 = nn.quantize %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xui8, #nn.q<0.33333334 : 128>>
// CHECK-NEXT: %2 = nn.dequantize %1 : (tensor<1x4x4x8xui8, #nn.q<0.33333334 : 128>>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: func.return %2 : tensor<1x4x4x8xf32>
func.func @quantize(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.quantize %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xi8, #nn.q<0.0235 : -3>>
  %1 = nn.quantize %x : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xui8, #nn.q<0.333333333 : 128>>
  %2 = nn.dequantize %1 : (tensor<1x4x4x8xui8, #nn.q<0.33333334 : 128>>) -> tensor<1x4x4x8xf32>
  func.return %2 : tensor<1x4x4x8xf32>
}

// Scales at the ends of float32: 1e-10, the smallest subnormal, the largest
// finite value, and an integer literal; zero points at the ends of i8 and ui8.
// CHECK-LABEL: func.func @scales(
// CHECK-SAME: %a: tensor<4xi8, #nn.q<1.0e-10 : -128>>, %b: tensor<4xi8, #nn.q<1.0e-45 : 127>>, %c: tensor<4xui8, #nn.q<3.4028235e+38 : 255>>, %d: tensor<4xui8, #nn.q<2.0 : 0>>) -> tensor<4xi8, #nn.q<1.0e-10 : -128>> attributes {q = #nn.q<1.5e-07 : 7>} {
// CHECK-NEXT: %0 = nn.identity %a : (tensor<4xi8, #nn.q<1.0e-10 : -128>>) -> tensor<4xi8, #nn.q<1.0e-10 : -128>>
// CHECK-NEXT: %1 = nn.relu %b : (tensor<4xi8, #nn.q<1.0e-45 : 127>>) -> tensor<4xi8, #nn.q<1.0e-45 : 127>>
// CHECK-NEXT: %2 = nn.relu %c : (tensor<4xui8, #nn.q<3.4028235e+38 : 255>>) -> tensor<4xui8, #nn.q<3.4028235e+38 : 255>>
// CHECK-NEXT: %3 = nn.relu %d : (tensor<4xui8, #nn.q<2.0 : 0>>) -> tensor<4xui8, #nn.q<2.0 : 0>>
// CHECK-NEXT: func.return %0 : tensor<4xi8, #nn.q<1.0e-10 : -128>>
func.func @scales(%a: tensor<4xi8, #nn.q<1.0e-10 : -128>>, %b: tensor<4xi8, #nn.q<1.0e-45 : 127>>, %c: tensor<4xui8, #nn.q<3.4028235e+38 : 255>>, %d: tensor<4xui8, #nn.q<2 : 0>>) -> tensor<4xi8, #nn.q<1.0e-10 : -128>> attributes {q = #nn.q<1.5e-07 : 7>} {
  %0 = nn.identity %a : (tensor<4xi8, #nn.q<1.0e-10 : -128>>) -> tensor<4xi8, #nn.q<1.0e-10 : -128>>
  %1 = nn.relu %b : (tensor<4xi8, #nn.q<1.0e-45 : 127>>) -> tensor<4xi8, #nn.q<1.0e-45 : 127>>
  %2 = nn.relu %c : (tensor<4xui8, #nn.q<3.4028235e+38 : 255>>) -> tensor<4xui8, #nn.q<3.4028235e+38 : 255>>
  %3 = nn.relu %d : (tensor<4xui8, #nn.q<2.0 : 0>>) -> tensor<4xui8, #nn.q<2.0 : 0>>
  func.return %0 : tensor<4xi8, #nn.q<1.0e-10 : -128>>
}

// A quantized conv: i8 OHWI weights, i32 bias, per-channel f32 weight scales as
// a fourth operand; the result may be ui8.
// CHECK-LABEL: func.func @conv(
// CHECK-SAME: %x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>) -> tensor<1x4x4x4xui8, #nn.q<0.1 : 128>> {
// CHECK-NEXT: %w = nn.weight "w" : tensor<4x3x3x8xi8>
// CHECK-NEXT: %b = nn.weight "b" : tensor<4xi32>
// CHECK-NEXT: %s = nn.weight "s" : tensor<4xf32>
// CHECK-NEXT: %0 = nn.conv %x, %w, %b, %s {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<4x3x3x8xi8>, tensor<4xi32>, tensor<4xf32>) -> tensor<1x4x4x4xui8, #nn.q<0.1 : 128>>
// CHECK-NEXT: func.return %0 : tensor<1x4x4x4xui8, #nn.q<0.1 : 128>>
func.func @conv(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>) -> tensor<1x4x4x4xui8, #nn.q<0.1 : 128>> {
  %w = nn.weight "w" : tensor<4x3x3x8xi8>
  %b = nn.weight "b" : tensor<4xi32>
  %s = nn.weight "s" : tensor<4xf32>
  %0 = nn.conv %x, %w, %b, %s {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<4x3x3x8xi8>, tensor<4xi32>, tensor<4xf32>) -> tensor<1x4x4x4xui8, #nn.q<0.1 : 128>>
  func.return %0 : tensor<1x4x4x4xui8, #nn.q<0.1 : 128>>
}

// A quantized gemm (i8 B with per-column scales, i32 C) and both quantized
// matmuls: against i8 weights with scales, and against a quantized activation.
// CHECK-LABEL: func.func @matrix(
// CHECK-SAME: %a: tensor<2x8xi8, #nn.q<0.02 : 0>>, %x: tensor<2x3x8xi8, #nn.q<0.02 : 0>>, %y: tensor<8x5xi8, #nn.q<0.04 : 1>>) -> tensor<2x5xi8, #nn.q<0.1 : -1>> {
// CHECK-NEXT: %b = nn.weight "fc.w" : tensor<5x8xi8>
// CHECK-NEXT: %c = nn.weight "fc.b" : tensor<5xi32>
// CHECK-NEXT: %s = nn.weight "fc.s" : tensor<5xf32>
// CHECK-NEXT: %0 = nn.gemm %a, %b, %c, %s {trans_b = 1 : i64} : (tensor<2x8xi8, #nn.q<0.02 : 0>>, tensor<5x8xi8>, tensor<5xi32>, tensor<5xf32>) -> tensor<2x5xi8, #nn.q<0.1 : -1>>
// CHECK-NEXT: %w = nn.weight "mm.w" : tensor<8x5xi8>
// CHECK-NEXT: %1 = nn.matmul %x, %w, %s : (tensor<2x3x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8>, tensor<5xf32>) -> tensor<2x3x5xi8, #nn.q<0.1 : 0>>
// CHECK-NEXT: %2 = nn.matmul %x, %y : (tensor<2x3x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8, #nn.q<0.04 : 1>>) -> tensor<2x3x5xi8, #nn.q<0.1 : 0>>
// CHECK-NEXT: func.return %0 : tensor<2x5xi8, #nn.q<0.1 : -1>>
func.func @matrix(%a: tensor<2x8xi8, #nn.q<0.02 : 0>>, %x: tensor<2x3x8xi8, #nn.q<0.02 : 0>>, %y: tensor<8x5xi8, #nn.q<0.04 : 1>>) -> tensor<2x5xi8, #nn.q<0.1 : -1>> {
  %b = nn.weight "fc.w" : tensor<5x8xi8>
  %c = nn.weight "fc.b" : tensor<5xi32>
  %s = nn.weight "fc.s" : tensor<5xf32>
  %0 = nn.gemm %a, %b, %c, %s {trans_b = 1 : i64} : (tensor<2x8xi8, #nn.q<0.02 : 0>>, tensor<5x8xi8>, tensor<5xi32>, tensor<5xf32>) -> tensor<2x5xi8, #nn.q<0.1 : -1>>
  %w = nn.weight "mm.w" : tensor<8x5xi8>
  %1 = nn.matmul %x, %w, %s : (tensor<2x3x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8>, tensor<5xf32>) -> tensor<2x3x5xi8, #nn.q<0.1 : 0>>
  %2 = nn.matmul %x, %y : (tensor<2x3x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8, #nn.q<0.04 : 1>>) -> tensor<2x3x5xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<2x5xi8, #nn.q<0.1 : -1>>
}

// Quantized add (operand scales differ from the result's), max_pool and concat.
// CHECK-LABEL: func.func @activations(
// CHECK-SAME: %x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, %y: tensor<1x4x4x8xi8, #nn.q<0.07 : 2>>) -> tensor<1x4x4x16xi8, #nn.q<0.05 : -3>> {
// CHECK-NEXT: %0 = nn.add %x, %y : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<1x4x4x8xi8, #nn.q<0.07 : 2>>) -> tensor<1x4x4x8xi8, #nn.q<0.1 : 0>>
// CHECK-NEXT: %1 = nn.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>) -> tensor<1x2x2x8xi8, #nn.q<0.05 : -3>>
// CHECK-NEXT: %2 = nn.concat %x, %x {axis = 3 : i64} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>) -> tensor<1x4x4x16xi8, #nn.q<0.05 : -3>>
// CHECK-NEXT: func.return %2 : tensor<1x4x4x16xi8, #nn.q<0.05 : -3>>
func.func @activations(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, %y: tensor<1x4x4x8xi8, #nn.q<0.07 : 2>>) -> tensor<1x4x4x16xi8, #nn.q<0.05 : -3>> {
  %0 = nn.add %x, %y : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<1x4x4x8xi8, #nn.q<0.07 : 2>>) -> tensor<1x4x4x8xi8, #nn.q<0.1 : 0>>
  %1 = nn.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>) -> tensor<1x2x2x8xi8, #nn.q<0.05 : -3>>
  %2 = nn.concat %x, %x {axis = 3 : i64} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>) -> tensor<1x4x4x16xi8, #nn.q<0.05 : -3>>
  func.return %2 : tensor<1x4x4x16xi8, #nn.q<0.05 : -3>>
}
