// RUN: tigris-opt %S/../Inputs/qdq_conv.onnx | filecheck %s
// RUN: tigris-opt %S/../Inputs/qdq_conv.onnx | tigris-opt --print-op-generic | tigris-opt | filecheck %s

// DequantizeLinear -> Conv -> (Relu folded into the range) -> QuantizeLinear becomes
// one quantized conv: i8 activations with their #nn.q encoding, i8 OHWI weights,
// an i32 bias and per-channel weight scales.
// CHECK:      %[[Q:.*]] = nn.quantize %input : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xi8, #nn.q<{{.*}} : {{-?[0-9]+}}>>
// CHECK-NEXT: %[[W:.*]] = nn.weight "conv1.weight" : tensor<4x3x3x3xi8>
// CHECK-NEXT: %[[B:.*]] = nn.weight "conv1.bias" : tensor<4xi32>
// CHECK-NEXT: %[[S:.*]] = nn.weight "conv1.weight_scale" : tensor<4xf32>
// CHECK-NEXT: %[[C:.*]] = nn.conv %[[Q]], %[[W]], %[[B]], %[[S]] {{.*}} -> tensor<1x8x8x4xi8, #nn.q<{{.*}}>>
// CHECK-NEXT: %[[D:.*]] = nn.dequantize %[[C]]
// CHECK-NEXT: func.return %[[D]] : tensor<1x8x8x4xf32>
