// RUN: tigris-opt %S/../Inputs/conv_bn_gap_gemm.onnx | filecheck %s

// BatchNormalization folds into the conv before it; auto_pad SAME_UPPER becomes
// explicit pads; Flatten sees ONNX's layout through a copy-free reshape (only unit
// axes move); Gemm's transposed constant B is stored as K x N.
// CHECK:       func.func @main(%x: tensor<1x9x9x3xf32>) -> tensor<1x5xf32>
// CHECK-SAME:  nn.output_layouts = ["plain"]
// CHECK-NOT:   batch_norm
// CHECK:       nn.conv %x, %{{.*}}, %{{.*}} {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} {{.*}} -> tensor<1x5x5x4xf32>
// CHECK-NEXT:  %[[G:.*]] = nn.global_average_pool {{.*}} -> tensor<1x1x1x4xf32>
// CHECK-NEXT:  %[[R:.*]] = nn.reshape %[[G]] : (tensor<1x1x1x4xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:  %[[F:.*]] = nn.flatten %[[R]] {axis = 1 : i64} : (tensor<1x4x1x1xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:  %[[W:.*]] = nn.weight "fc.weight" : tensor<4x5xf32>
// CHECK-NEXT:  %[[B:.*]] = nn.weight "fc.bias" : tensor<5xf32>
// CHECK-NEXT:  nn.gemm %[[F]], %[[W]], %[[B]] : (tensor<1x4xf32>, tensor<4x5xf32>, tensor<5xf32>) -> tensor<1x5xf32>
// CHECK-NOT:   trans_b
