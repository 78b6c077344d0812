// RUN: tigris-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// A #nn.q scale is a positive, finite float32: the parser rejects any other with
// the location of the literal (--parsing-diagnostics keeps going past a parse
// error, as --verify-diagnostics does past a verifier error).

// CHECK: invalid_quant_attr.mlir:[[# @LINE + 2]]:40
// CHECK: #nn.q: the scale must be positive and finite, got 0.0
func.func @zero(%x: tensor<4xi8, #nn.q<0.0 : 0>>) {
  func.return
}

// -----

// CHECK: invalid_quant_attr.mlir:[[# @LINE + 2]]:44
// CHECK: #nn.q: the scale must be positive and finite, got -0.5
func.func @negative(%x: tensor<4xi8, #nn.q<-0.5 : 0>>) {
  func.return
}

// -----

// A positive double that rounds to 0 or to infinity in float32 is unusable too.
// CHECK: invalid_quant_attr.mlir:[[# @LINE + 2]]:45
// CHECK: #nn.q: the scale 1e-50 is not representable as a positive finite float32
func.func @underflow(%x: tensor<4xi8, #nn.q<1.0e-50 : 0>>) {
  func.return
}

// -----

// CHECK: invalid_quant_attr.mlir:[[# @LINE + 2]]:44
// CHECK: #nn.q: the scale 1e+39 is not representable as a positive finite float32
func.func @overflow(%x: tensor<4xi8, #nn.q<1.0e+39 : 0>>) {
  func.return
}

// -----

// CHECK: invalid_quant_attr.mlir:[[# @LINE + 2]]:58
// CHECK: Expected integer literal as the #nn.q zero point
func.func @zero_point_float(%x: tensor<4xi8, #nn.q<0.5 : 1.5>>) {
  func.return
}

// -----

// The same rule holds for the attribute outside a tensor type.
// CHECK: invalid_quant_attr.mlir:[[# @LINE + 2]]:46
// CHECK: #nn.q: the scale must be positive and finite, got -2.0
func.func @attribute() attributes {q = #nn.q<-2.0 : 3>} {
  func.return
}
