// RUN: tigris-opt %S/../Inputs/symbolic.onnx --input-shape x:2x3x4x4 | filecheck %s
// RUN: not tigris-opt %S/../Inputs/symbolic.onnx 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not tigris-opt %S/../Inputs/symbolic.onnx --input-shape x:2x5x4x4 2>&1 | filecheck %s --check-prefix=CONFLICT

// CHECK: func.func @main(%x: tensor<2x4x4x3xf32>) -> tensor<2x4x4x3xf32>
// MISSING: symbolic.onnx: input 'x': error: symbolic dimension 'N' in shape ?x3x4x4; give the shape with --input-shape x:1x3x4x4
// CONFLICT: symbolic.onnx: input 'x': error: --input-shape 2x5x4x4 does not match the model's ?x3x4x4
