// RUN: tigris-opt %S/../Inputs/conv_relu.onnx | filecheck %s
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx | tigris-opt | filecheck %s
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx | tigris-opt --print-op-generic | tigris-opt | filecheck %s

// Feature maps become channels-last; the boundary layout is recorded.
// CHECK:      builtin.module attributes {nn.weights = "{{.*}}conv_relu.onnx"}
// CHECK:      func.func @main(%input: tensor<1x8x8x3xf32>) -> tensor<1x8x8x4xf32>
// CHECK-SAME: nn.input_layouts = ["nchw"]
// CHECK-SAME: nn.output_layouts = ["nchw"]
// Weights are referenced by name, OHWI, never printed.
// CHECK-NEXT: %[[W:.*]] = nn.weight "conv1.weight" : tensor<4x3x3x3xf32>
// CHECK-NEXT: %[[B:.*]] = nn.weight "conv1.bias" : tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = nn.conv %input, %[[W]], %[[B]] {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT: %[[R:.*]] = nn.relu %[[C]]
// CHECK-NEXT: func.return %[[R]] : tensor<1x8x8x4xf32>
