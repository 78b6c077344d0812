// RUN: tigris-opt %S/../Inputs/resize_concat.onnx | filecheck %s

// Two inputs; ONNX's channel axis 1 becomes the last axis, scales apply to H and W.
// CHECK:      func.func @main(%x: tensor<1x4x4x2xf32>, %s: tensor<1x8x8x3xf32>) -> tensor<1x8x8x5xf32>
// CHECK-NEXT: %[[U:.*]] = nn.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x4x4x2xf32>) -> tensor<1x8x8x2xf32>
// CHECK-NEXT: nn.concat %[[U]], %s {axis = 3 : i64}
