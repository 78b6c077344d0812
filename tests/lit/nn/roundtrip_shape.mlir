// RUN: tigris-opt %s | filecheck %s
// RUN: tigris-opt %s | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | tigris-opt | filecheck %s
// RUN: tigris-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trips of the shape and layout ops, resize, the normalisations along an
// axis and the reductions. Results of variadic ops print as separate names.

// GENERIC: %2, %3, %4 = "nn.split"(%0) <{axis = -1 : i64, sizes = array<i64: 4, 4, 2>}>
// GENERIC: "nn.flatten"(%x) <{axis = -1 : i64}> : (tensor<1x4x4x8xf32>) -> tensor<16x8xf32>
// GENERIC: "nn.pad"(%x) <{pads = array<i64: 0, 1, 2, 0, 0, 1, 0, 0>, mode = "constant", value = -1.500000e+00 : f32}>
// GENERIC: "nn.resize"(%x) <{mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"}>
// GENERIC: "nn.reduce_sum"(%x) <{axes = array<i64>, keepdims = 0 : i64}> : (tensor<1x4x4x8xf32>) -> tensor<f32>

// Concat along the channel axis and along H; a split with a negative axis.
// CHECK-LABEL: func.func @concat_split(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>, %y: tensor<1x4x4x2xf32>, %z: tensor<1x2x4x8xf32>) -> tensor<1x4x4x10xf32> {
// CHECK-NEXT: %0 = nn.concat %x, %y {axis = 3 : i64} : (tensor<1x4x4x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x10xf32>
// CHECK-NEXT: %1 = nn.concat %x, %z, %x {axis = 1 : i64} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x10x4x8xf32>
// CHECK-NEXT: %2, %3, %4 = nn.split %0 {axis = -1 : i64, sizes = array<i64: 4, 4, 2>} : (tensor<1x4x4x10xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32>)
// CHECK-NEXT: func.return %0 : tensor<1x4x4x10xf32>
func.func @concat_split(%x: tensor<1x4x4x8xf32>, %y: tensor<1x4x4x2xf32>, %z: tensor<1x2x4x8xf32>) -> tensor<1x4x4x10xf32> {
  %0 = nn.concat %x, %y {axis = 3 : i64} : (tensor<1x4x4x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x10xf32>
  %1 = nn.concat %x, %z, %x {axis = 1 : i64} : (tensor<1x4x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x10x4x8xf32>
  %2:3 = nn.split %0 {axis = -1 : i64, sizes = array<i64: 4, 4, 2>} : (tensor<1x4x4x10xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>, tensor<1x4x4x2xf32>)
  func.return %0 : tensor<1x4x4x10xf32>
}

// The reshape family; flatten and unsqueeze take negative axes as ONNX does.
// CHECK-LABEL: func.func @reshapes(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>) -> tensor<16x8xf32> {
// CHECK-NEXT: %0 = nn.reshape %x : (tensor<1x4x4x8xf32>) -> tensor<1x16x8xf32>
// CHECK-NEXT: %1 = nn.flatten %x {axis = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x128xf32>
// CHECK-NEXT: %2 = nn.flatten %x {axis = -1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<16x8xf32>
// CHECK-NEXT: %3 = nn.flatten %x {axis = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x128xf32>
// CHECK-NEXT: %4 = nn.unsqueeze %2 {axes = array<i64: 0, -1>} : (tensor<16x8xf32>) -> tensor<1x16x8x1xf32>
// CHECK-NEXT: %5 = nn.squeeze %4 {axes = array<i64: 0, -1>} : (tensor<1x16x8x1xf32>) -> tensor<16x8xf32>
// CHECK-NEXT: func.return %5 : tensor<16x8xf32>
func.func @reshapes(%x: tensor<1x4x4x8xf32>) -> tensor<16x8xf32> {
  %0 = nn.reshape %x : (tensor<1x4x4x8xf32>) -> tensor<1x16x8xf32>
  %1 = nn.flatten %x {axis = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x128xf32>
  %2 = nn.flatten %x {axis = -1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<16x8xf32>
  %3 = nn.flatten %x {axis = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x128xf32>
  %4 = nn.unsqueeze %2 {axes = array<i64: 0, -1>} : (tensor<16x8xf32>) -> tensor<1x16x8x1xf32>
  %5 = nn.squeeze %4 {axes = array<i64: 0, -1>} : (tensor<1x16x8x1xf32>) -> tensor<16x8xf32>
  func.return %5 : tensor<16x8xf32>
}

// Transpose to NCHW; the three pad modes (value only with constant).
// CHECK-LABEL: func.func @layout(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
// CHECK-NEXT: %0 = nn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT: %1 = nn.pad %x {pads = array<i64: 0, 1, 2, 0, 0, 1, 0, 0>, mode = "constant", value = -1.500000e+00 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT: %2 = nn.pad %x {pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>, mode = "reflect"} : (tensor<1x4x4x8xf32>) -> tensor<1x6x6x8xf32>
// CHECK-NEXT: %3 = nn.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 0>, mode = "edge"} : (tensor<1x4x4x8xf32>) -> tensor<1x4x6x8xf32>
// CHECK-NEXT: func.return %0 : tensor<1x8x4x4xf32>
func.func @layout(%x: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
  %0 = nn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32>
  %1 = nn.pad %x {pads = array<i64: 0, 1, 2, 0, 0, 1, 0, 0>, mode = "constant", value = -1.5 : f32} : (tensor<1x4x4x8xf32>) -> tensor<1x6x6x8xf32>
  %2 = nn.pad %x {pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>, mode = "reflect"} : (tensor<1x4x4x8xf32>) -> tensor<1x6x6x8xf32>
  %3 = nn.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 0, 1, 0>, mode = "edge"} : (tensor<1x4x4x8xf32>) -> tensor<1x4x6x8xf32>
  func.return %0 : tensor<1x8x4x4xf32>
}

// Resize: nearest with its rounding mode, linear without one, 1D.
// CHECK-LABEL: func.func @resize(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>, %s: tensor<1x5x2xf32>) -> tensor<1x8x8x8xf32> {
// CHECK-NEXT: %0 = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32>
// CHECK-NEXT: %1 = nn.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x4x4x8xf32>) -> tensor<1x6x3x8xf32>
// CHECK-NEXT: %2 = nn.resize %s {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x5x2xf32>) -> tensor<1x9x2xf32>
// CHECK-NEXT: func.return %0 : tensor<1x8x8x8xf32>
func.func @resize(%x: tensor<1x4x4x8xf32>, %s: tensor<1x5x2xf32>) -> tensor<1x8x8x8xf32> {
  %0 = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor"} : (tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32>
  %1 = nn.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x4x4x8xf32>) -> tensor<1x6x3x8xf32>
  %2 = nn.resize %s {mode = "linear", coordinate_transformation_mode = "align_corners"} : (tensor<1x5x2xf32>) -> tensor<1x9x2xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}

// Softmax and log-softmax along one axis; reductions with keepdims 1 and 0.
// CHECK-LABEL: func.func @rows(
// CHECK-SAME: %x: tensor<1x4x4x8xf32>, %v: tensor<2x10xf32>) -> tensor<1x4x4x8xf32> {
// CHECK-NEXT: %0 = nn.softmax %x {axis = -1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
// CHECK-NEXT: %1 = nn.log_softmax %v {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
// CHECK-NEXT: %2 = nn.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32>
// CHECK-NEXT: %3 = nn.reduce_max %x {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4xf32>
// CHECK-NEXT: %4 = nn.reduce_sum %x {axes = array<i64>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<f32>
// CHECK-NEXT: %5 = nn.reduce_sum %v {axes = array<i64>, keepdims = 1 : i64} : (tensor<2x10xf32>) -> tensor<1x1xf32>
// CHECK-NEXT: func.return %0 : tensor<1x4x4x8xf32>
func.func @rows(%x: tensor<1x4x4x8xf32>, %v: tensor<2x10xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.softmax %x {axis = -1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %1 = nn.log_softmax %v {axis = 1 : i64} : (tensor<2x10xf32>) -> tensor<2x10xf32>
  %2 = nn.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = 1 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32>
  %3 = nn.reduce_max %x {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4xf32>
  %4 = nn.reduce_sum %x {axes = array<i64>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<f32>
  %5 = nn.reduce_sum %v {axes = array<i64>, keepdims = 1 : i64} : (tensor<2x10xf32>) -> tensor<1x1xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}
