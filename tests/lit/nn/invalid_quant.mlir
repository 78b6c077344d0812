// RUN: tigris-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The verifier rules of quantized tensors: a quantized conv, gemm or matmul has
// its integer operands and weight scales; an i8 activation carries #nn.q; #nn.q
// sits on i8 or ui8 with a zero point of that type; ops that move values keep
// the quantization.

// a quantized conv needs its per-channel weight scales
// CHECK: Operation does not verify: nn.conv: a quantized conv needs f32 per-channel weight scales of shape (4,), got none
func.func @conv_no_scales(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, %w: tensor<4x1x1x8xi8>, %b: tensor<4xi32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 1, 1>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<4x1x1x8xi8>, tensor<4xi32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.conv: a quantized conv needs f32 per-channel weight scales of shape (4,), got tensor<3xf32>
func.func @conv_scale_shape(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, %w: tensor<4x1x1x8xi8>, %b: tensor<4xi32>, %s: tensor<3xf32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>> {
  %0 = nn.conv %x, %w, %b, %s {kernel = array<i64: 1, 1>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<4x1x1x8xi8>, tensor<4xi32>, tensor<3xf32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
}

// -----

// an i8 input without #nn.q makes the conv neither float nor quantized
// CHECK: Operation does not verify: nn.conv: a quantized conv needs quantized input and result
func.func @conv_plain_i8(%x: tensor<1x4x4x8xi8>, %w: tensor<4x1x1x8xi8>, %b: tensor<4xi32>, %s: tensor<4xf32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>> {
  %0 = nn.conv %x, %w, %b, %s {kernel = array<i64: 1, 1>} : (tensor<1x4x4x8xi8>, tensor<4x1x1x8xi8>, tensor<4xi32>, tensor<4xf32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.conv: a quantized conv needs i8 weights and an i32 bias
func.func @conv_f32_bias(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, %w: tensor<4x1x1x8xi8>, %b: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>> {
  %0 = nn.conv %x, %w, %b, %s {kernel = array<i64: 1, 1>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : -3>>, tensor<4x1x1x8xi8>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<1x4x4x4xi8, #nn.q<0.1 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.conv: weight scales need a quantized conv
func.func @float_conv_scales(%x: tensor<1x4x4x8xf32>, %w: tensor<4x1x1x8xf32>, %b: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = nn.conv %x, %w, %b, %s {kernel = array<i64: 1, 1>} : (tensor<1x4x4x8xf32>, tensor<4x1x1x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  func.return %0 : tensor<1x4x4x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv_transpose: a quantized transposed conv needs f32 per-channel weight scales of shape (4,), got none
func.func @conv_transpose_no_scales(%x: tensor<1x4x4x2xi8, #nn.q<0.05 : 0>>, %w: tensor<2x2x2x4xi8>, %b: tensor<4xi32>) -> tensor<1x8x8x4xi8, #nn.q<0.1 : 0>> {
  %0 = nn.conv_transpose %x, %w, %b {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x2xi8, #nn.q<0.05 : 0>>, tensor<2x2x2x4xi8>, tensor<4xi32>) -> tensor<1x8x8x4xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<1x8x8x4xi8, #nn.q<0.1 : 0>>
}

// -----

// i8 activations carry their quantization; a bare i8 is rejected
// CHECK: Operation does not verify: nn.add: the lhs must be f32, or i8/ui8 with a #nn.q quantization, got tensor<1x4x4x8xi8>
func.func @add_plain_i8(%x: tensor<1x4x4x8xi8>, %y: tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>) -> tensor<1x4x4x8xi8, #nn.q<0.05 : 0>> {
  %0 = nn.add %x, %y : (tensor<1x4x4x8xi8>, tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>) -> tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>
  func.return %0 : tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.max_pool: the result must be f32, or i8/ui8 with a #nn.q quantization, got tensor<1x2x2x8xi8>
func.func @pool_plain_result(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>) -> tensor<1x2x2x8xi8> {
  %0 = nn.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>) -> tensor<1x2x2x8xi8>
  func.return %0 : tensor<1x2x2x8xi8>
}

// -----

// CHECK: Operation does not verify: nn.concat: operand #1 must be f32, or i8/ui8 with a #nn.q quantization, got tensor<1x4x4x8xi8>
func.func @concat_plain_i8(%x: tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>, %y: tensor<1x4x4x8xi8>) -> tensor<1x4x4x16xi8, #nn.q<0.05 : 0>> {
  %0 = nn.concat %x, %y {axis = 3 : i64} : (tensor<1x4x4x8xi8, #nn.q<0.05 : 0>>, tensor<1x4x4x8xi8>) -> tensor<1x4x4x16xi8, #nn.q<0.05 : 0>>
  func.return %0 : tensor<1x4x4x16xi8, #nn.q<0.05 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.gemm: a quantized gemm needs a quantized A and result
func.func @gemm_plain_a(%a: tensor<2x8xf32>, %b: tensor<8x5xi8>, %c: tensor<5xi32>, %s: tensor<5xf32>) -> tensor<2x5xi8, #nn.q<0.1 : 0>> {
  %0 = nn.gemm %a, %b, %c, %s : (tensor<2x8xf32>, tensor<8x5xi8>, tensor<5xi32>, tensor<5xf32>) -> tensor<2x5xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<2x5xi8, #nn.q<0.1 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.matmul: a quantized matmul needs a quantized B or i8 weights with scales
func.func @matmul_no_scales(%a: tensor<2x8xi8, #nn.q<0.02 : 0>>, %b: tensor<8x5xi8>) -> tensor<2x5xi8, #nn.q<0.1 : 0>> {
  %0 = nn.matmul %a, %b : (tensor<2x8xi8, #nn.q<0.02 : 0>>, tensor<8x5xi8>) -> tensor<2x5xi8, #nn.q<0.1 : 0>>
  func.return %0 : tensor<2x5xi8, #nn.q<0.1 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.quantize: the result type needs a #nn.q quantization
func.func @quantize_plain(%x: tensor<4xf32>) -> tensor<4xi8> {
  %0 = nn.quantize %x : (tensor<4xf32>) -> tensor<4xi8>
  func.return %0 : tensor<4xi8>
}

// -----

// CHECK: Operation does not verify: nn.dequantize: the input type needs a #nn.q quantization
func.func @dequantize_plain(%x: tensor<4xi8>) -> tensor<4xf32> {
  %0 = nn.dequantize %x : (tensor<4xi8>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// #nn.q belongs on i8 and ui8 tensors only
// CHECK: Operation does not verify: nn.relu: operand #0 carries #nn.q on f32; quantized tensors are i8 or ui8
func.func @quant_on_f32(%x: tensor<4xf32, #nn.q<0.5 : 0>>) -> tensor<4xf32, #nn.q<0.5 : 0>> {
  %0 = nn.relu %x : (tensor<4xf32, #nn.q<0.5 : 0>>) -> tensor<4xf32, #nn.q<0.5 : 0>>
  func.return %0 : tensor<4xf32, #nn.q<0.5 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.quantize: result #0 carries #nn.q on i32; quantized tensors are i8 or ui8
func.func @quant_on_i32(%x: tensor<4xf32>) -> tensor<4xi32, #nn.q<0.5 : 0>> {
  %0 = nn.quantize %x : (tensor<4xf32>) -> tensor<4xi32, #nn.q<0.5 : 0>>
  func.return %0 : tensor<4xi32, #nn.q<0.5 : 0>>
}

// -----

// the zero point is a value of the element type
// CHECK: Operation does not verify: nn.quantize: result #0 has zero point 128, outside the i8 range [-128, 127]
func.func @zero_point_i8(%x: tensor<4xf32>) -> tensor<4xi8, #nn.q<0.5 : 128>> {
  %0 = nn.quantize %x : (tensor<4xf32>) -> tensor<4xi8, #nn.q<0.5 : 128>>
  func.return %0 : tensor<4xi8, #nn.q<0.5 : 128>>
}

// -----

// CHECK: Operation does not verify: nn.dequantize: operand #0 has zero point -1, outside the ui8 range [0, 255]
func.func @zero_point_ui8(%x: tensor<4xui8, #nn.q<0.5 : -1>>) -> tensor<4xf32> {
  %0 = nn.dequantize %x : (tensor<4xui8, #nn.q<0.5 : -1>>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: Operation does not verify: nn.relu: operand #0 has the encoding "nchw"; only #nn.q is supported
func.func @foreign_encoding(%x: tensor<4xf32, "nchw">) -> tensor<4xf32> {
  %0 = nn.relu %x : (tensor<4xf32, "nchw">) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// reshapes keep the element type and the quantization
// CHECK: Operation does not verify: nn.reshape: input and result element types must agree, got tensor<2x4xi8, #nn.q<0.5 : 0>> and tensor<8xi8, #nn.q<0.25 : 0>>
func.func @reshape_requantize(%x: tensor<2x4xi8, #nn.q<0.5 : 0>>) -> tensor<8xi8, #nn.q<0.25 : 0>> {
  %0 = nn.reshape %x : (tensor<2x4xi8, #nn.q<0.5 : 0>>) -> tensor<8xi8, #nn.q<0.25 : 0>>
  func.return %0 : tensor<8xi8, #nn.q<0.25 : 0>>
}

// -----

// CHECK: Operation does not verify: nn.softmax: operand #0 must be f32, or i8/ui8 with a #nn.q quantization, got tensor<2x4xi32>
func.func @softmax_i32(%x: tensor<2x4xi32>) -> tensor<2x4xi32> {
  %0 = nn.softmax %x {axis = 1 : i64} : (tensor<2x4xi32>) -> tensor<2x4xi32>
  func.return %0 : tensor<2x4xi32>
}
