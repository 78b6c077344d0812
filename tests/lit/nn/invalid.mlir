// RUN: tigris-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The structural rules of the nn verifiers, one case per rule: ranks, channel
// counts, groups, bias and kernel shapes, property lengths, result shapes against
// the inferred ones, broadcasting, axes, modes and element types. Under
// --verify-diagnostics xDSL prints the message, then the module in generic form
// with the message under the failing op; each message names the op and the rule.

// conv: the input must be a feature map of rank 3 or 4
// CHECK: Operation does not verify: nn.conv: the input must be a rank-3 (N, W, C) or rank-4 (N, H, W, C) feature map, got rank 5
func.func @conv_rank(%x: tensor<1x2x8x8x3xf32>, %w: tensor<4x3x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x2x6x6x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3, 3>} : (tensor<1x2x8x8x3xf32>, tensor<4x3x3x3x3xf32>, tensor<4xf32>) -> tensor<1x2x6x6x4xf32>
  func.return %0 : tensor<1x2x6x6x4xf32>
}

// -----

// pools share the rank rule
// CHECK: Operation does not verify: nn.max_pool: the input must be a rank-3 (N, W, C) or rank-4 (N, H, W, C) feature map, got rank 2
func.func @pool_rank(%x: tensor<8x3xf32>) -> tensor<7x3xf32> {
  %0 = nn.max_pool %x {kernel = array<i64: 2>} : (tensor<8x3xf32>) -> tensor<7x3xf32>
  func.return %0 : tensor<7x3xf32>
}

// -----

// input channels must equal the weight's Cin/group times group
// CHECK: Operation does not verify: nn.conv: input has 3 channels but the weight expects 3 x group 2 = 6
func.func @conv_channels(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, group = 2 : i64} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
  func.return %0 : tensor<1x6x6x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: Cout 5 is not divisible by group 2
func.func @conv_group_cout(%x: tensor<1x8x8x6xf32>, %w: tensor<5x3x3x3xf32>, %b: tensor<5xf32>) -> tensor<1x6x6x5xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, group = 2 : i64} : (tensor<1x8x8x6xf32>, tensor<5x3x3x3xf32>, tensor<5xf32>) -> tensor<1x6x6x5xf32>
  func.return %0 : tensor<1x6x6x5xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: group must be >= 1, got 0
func.func @conv_group_zero(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, group = 0 : i64} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
  func.return %0 : tensor<1x6x6x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: bias must have shape (4,), got (5,)
func.func @conv_bias(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<5xf32>) -> tensor<1x6x6x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<5xf32>) -> tensor<1x6x6x4xf32>
  func.return %0 : tensor<1x6x6x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: weight kernel (5, 5) does not match kernel (3, 3)
func.func @conv_kernel(%x: tensor<1x8x8x3xf32>, %w: tensor<4x5x5x3xf32>, %b: tensor<4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x8x8x3xf32>, tensor<4x5x5x3xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
  func.return %0 : tensor<1x6x6x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: pads needs 4 values for a rank-4 input, got 2
func.func @conv_pads(%x: tensor<1x8x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x8x8x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, pads = array<i64: 1, 1>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x8x4xf32>
  func.return %0 : tensor<1x8x8x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.average_pool: strides needs 2 values for a rank-4 input, got 1
func.func @pool_strides(%x: tensor<1x8x8x3xf32>) -> tensor<1x4x4x3xf32> {
  %0 = nn.average_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2>} : (tensor<1x8x8x3xf32>) -> tensor<1x4x4x3xf32>
  func.return %0 : tensor<1x4x4x3xf32>
}

// -----

// CHECK: Operation does not verify: nn.max_pool: kernel sizes must be >= 1, got [0, 1]
func.func @pool_kernel_zero(%x: tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32> {
  %0 = nn.max_pool %x {kernel = array<i64: 0, 1>} : (tensor<1x8x8x3xf32>) -> tensor<1x8x8x3xf32>
  func.return %0 : tensor<1x8x8x3xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: spatial axis 0: a window of 3 (kernel 3, dilation 1) does not fit an input of 2 with pads 0,0
func.func @conv_window(%x: tensor<1x2x8x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x1x6x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>} : (tensor<1x2x8x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x1x6x4xf32>
  func.return %0 : tensor<1x1x6x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv: result shape 1x4x4x4 does not match the inferred shape 1x5x5x4
func.func @conv_result(%x: tensor<1x9x9x3xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x4x4xf32> {
  %0 = nn.conv %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x9x9x3xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  func.return %0 : tensor<1x4x4x4xf32>
}

// -----

// with ceil_mode the last partial window counts: 4, not 3
// CHECK: Operation does not verify: nn.max_pool: result shape 1x3x3x3 does not match the inferred shape 1x4x4x3
func.func @pool_result(%x: tensor<1x8x8x3xf32>) -> tensor<1x3x3x3xf32> {
  %0 = nn.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x8x8x3xf32>) -> tensor<1x3x3x3xf32>
  func.return %0 : tensor<1x3x3x3xf32>
}

// -----

// CHECK: Operation does not verify: nn.conv_transpose: output_padding [2, 2] must be >= 0 and smaller than the stride or the dilation
func.func @conv_transpose_output_padding(%x: tensor<1x4x4x2xf32>, %w: tensor<2x3x3x4xf32>, %b: tensor<4xf32>) -> tensor<1x11x11x4xf32> {
  %0 = nn.conv_transpose %x, %w, %b {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, output_padding = array<i64: 2, 2>} : (tensor<1x4x4x2xf32>, tensor<2x3x3x4xf32>, tensor<4xf32>) -> tensor<1x11x11x4xf32>
  func.return %0 : tensor<1x11x11x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.add: result shape 1x4x4x1 does not match the inferred shape 1x4x4x8
func.func @add_result(%x: tensor<1x4x4x8xf32>, %c: tensor<8xf32>) -> tensor<1x4x4x1xf32> {
  %0 = nn.add %x, %c : (tensor<1x4x4x8xf32>, tensor<8xf32>) -> tensor<1x4x4x1xf32>
  func.return %0 : tensor<1x4x4x1xf32>
}

// -----

// CHECK: Operation does not verify: nn.add: operand shapes 1x4x4x8 and 1x4x4x3 do not broadcast
func.func @add_broadcast(%x: tensor<1x4x4x8xf32>, %y: tensor<1x4x4x3xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.add %x, %y : (tensor<1x4x4x8xf32>, tensor<1x4x4x3xf32>) -> tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// -----

// PRelu's slope broadcasts to the input; it may not widen it
// CHECK: Operation does not verify: nn.prelu: the slope 8 must broadcast to the input shape 1x4x4x1
func.func @prelu_slope(%x: tensor<1x4x4x1xf32>, %s: tensor<8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.prelu %x, %s : (tensor<1x4x4x1xf32>, tensor<8xf32>) -> tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.clip: min 6.0 exceeds max 0.0
func.func @clip_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.clip %x {min = 6.0 : f32, max = 0.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: Operation does not verify: nn.gelu: approximate must be "none" or "tanh", got "erf"
func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.gelu %x {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: Operation does not verify: nn.concat: result shape 1x4x4x8 does not match the inferred shape 1x4x4x10
func.func @concat_result(%x: tensor<1x4x4x8xf32>, %y: tensor<1x4x4x2xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.concat %x, %y {axis = -1 : i64} : (tensor<1x4x4x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.concat: inputs differ outside axis 3: 1x4x4x8, 1x4x2x2
func.func @concat_inputs(%x: tensor<1x4x4x8xf32>, %y: tensor<1x4x2x2xf32>) -> tensor<1x4x4x10xf32> {
  %0 = nn.concat %x, %y {axis = 3 : i64} : (tensor<1x4x4x8xf32>, tensor<1x4x2x2xf32>) -> tensor<1x4x4x10xf32>
  func.return %0 : tensor<1x4x4x10xf32>
}

// -----

// CHECK: Operation does not verify: nn.split: sizes [3, 4] do not add up to 8 along axis 3
func.func @split_sizes(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x3xf32> {
  %0:2 = nn.split %x {axis = 3 : i64, sizes = array<i64: 3, 4>} : (tensor<1x4x4x8xf32>) -> (tensor<1x4x4x3xf32>, tensor<1x4x4x4xf32>)
  func.return %0#0 : tensor<1x4x4x3xf32>
}

// -----

// CHECK: Operation does not verify: nn.transpose: result shape 1x8x6x4 does not match the inferred shape 1x8x4x6
func.func @transpose_result(%x: tensor<1x4x6x8xf32>) -> tensor<1x8x6x4xf32> {
  %0 = nn.transpose %x {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x4x6x8xf32>) -> tensor<1x8x6x4xf32>
  func.return %0 : tensor<1x8x6x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.transpose: perm [0, 3, 1, 1] is not a permutation of 4 axes
func.func @transpose_perm(%x: tensor<1x4x6x8xf32>) -> tensor<1x8x4x4xf32> {
  %0 = nn.transpose %x {perm = array<i64: 0, 3, 1, 1>} : (tensor<1x4x6x8xf32>) -> tensor<1x8x4x4xf32>
  func.return %0 : tensor<1x8x4x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.reshape: cannot reshape 1x4x4x8 (128 elements) into 1x100 (100 elements)
func.func @reshape_count(%x: tensor<1x4x4x8xf32>) -> tensor<1x100xf32> {
  %0 = nn.reshape %x : (tensor<1x4x4x8xf32>) -> tensor<1x100xf32>
  func.return %0 : tensor<1x100xf32>
}

// -----

// CHECK: Operation does not verify: nn.flatten: axis 5 is out of range [-4, 4] for rank 4
func.func @flatten_axis(%x: tensor<1x4x4x8xf32>) -> tensor<1x128xf32> {
  %0 = nn.flatten %x {axis = 5 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x128xf32>
  func.return %0 : tensor<1x128xf32>
}

// -----

// CHECK: Operation does not verify: nn.squeeze: axis 1 has size 4, not 1
func.func @squeeze_axis(%x: tensor<1x4x1x8xf32>) -> tensor<1x1x8xf32> {
  %0 = nn.squeeze %x {axes = array<i64: 1>} : (tensor<1x4x1x8xf32>) -> tensor<1x1x8xf32>
  func.return %0 : tensor<1x1x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.unsqueeze: axes [0, -4] name an output axis twice
func.func @unsqueeze_twice(%x: tensor<4x8xf32>) -> tensor<1x4x8x1xf32> {
  %0 = nn.unsqueeze %x {axes = array<i64: 0, -4>} : (tensor<4x8xf32>) -> tensor<1x4x8x1xf32>
  func.return %0 : tensor<1x4x8x1xf32>
}

// -----

// CHECK: Operation does not verify: nn.pad: pads needs 8 values for a rank-4 input, got 4
func.func @pad_length(%x: tensor<1x4x4x8xf32>) -> tensor<1x6x6x8xf32> {
  %0 = nn.pad %x {pads = array<i64: 1, 1, 1, 1>, mode = "constant"} : (tensor<1x4x4x8xf32>) -> tensor<1x6x6x8xf32>
  func.return %0 : tensor<1x6x6x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.resize: mode must be nearest or linear, got cubic
func.func @resize_mode(%x: tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = nn.resize %x {mode = "cubic", coordinate_transformation_mode = "half_pixel"} : (tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.resize: coordinate_transformation_mode must be one of half_pixel, pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn, got tf_crop_and_resize
func.func @resize_coordinates(%x: tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32> {
  %0 = nn.resize %x {mode = "nearest", coordinate_transformation_mode = "tf_crop_and_resize", nearest_mode = "floor"} : (tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32>
  func.return %0 : tensor<1x8x8x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.resize: only the spatial axes may change size, got 1x4x4x8 -> 1x8x8x4
func.func @resize_channels(%x: tensor<1x4x4x8xf32>) -> tensor<1x8x8x4xf32> {
  %0 = nn.resize %x {mode = "linear", coordinate_transformation_mode = "half_pixel"} : (tensor<1x4x4x8xf32>) -> tensor<1x8x8x4xf32>
  func.return %0 : tensor<1x8x8x4xf32>
}

// -----

// CHECK: Operation does not verify: nn.softmax: axis 4 is out of range [-4, 3] for rank 4
func.func @softmax_axis(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %0 = nn.softmax %x {axis = 4 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  func.return %0 : tensor<1x4x4x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.reduce_mean: axes [1, -3] name an axis twice
func.func @reduce_axes(%x: tensor<1x4x4x8xf32>) -> tensor<1x8xf32> {
  %0 = nn.reduce_mean %x {axes = array<i64: 1, -3>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x8xf32>
  func.return %0 : tensor<1x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.reduce_max: result shape 1x1x1x8 does not match the inferred shape 1x8
func.func @reduce_keepdims(%x: tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32> {
  %0 = nn.reduce_max %x {axes = array<i64: 1, 2>, keepdims = 0 : i64} : (tensor<1x4x4x8xf32>) -> tensor<1x1x1x8xf32>
  func.return %0 : tensor<1x1x1x8xf32>
}

// -----

// CHECK: Operation does not verify: nn.batch_norm: parameters must be f32 of shape (3,), got tensor<4xf32>
func.func @batch_norm_params(%x: tensor<1x4x4x3xf32>, %p: tensor<3xf32>, %q: tensor<4xf32>) -> tensor<1x4x4x3xf32> {
  %0 = nn.batch_norm %x, %p, %p, %q, %p {epsilon = 1.0e-05 : f32} : (tensor<1x4x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<1x4x4x3xf32>
  func.return %0 : tensor<1x4x4x3xf32>
}

// -----

// CHECK: Operation does not verify: nn.gemm: inner dimensions differ: op(A) is 3x4, op(B) is 5x6
func.func @gemm_inner(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>, %c: tensor<6xf32>) -> tensor<3x6xf32> {
  %0 = nn.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<5x6xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  func.return %0 : tensor<3x6xf32>
}

// -----

// C broadcasts one way only: to the M x N result
// CHECK: Operation does not verify: nn.gemm: C of shape 2x3x6 does not broadcast to the 3x6 result
func.func @gemm_c(%a: tensor<3x4xf32>, %b: tensor<4x6xf32>, %c: tensor<2x3x6xf32>) -> tensor<3x6xf32> {
  %0 = nn.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x6xf32>, tensor<2x3x6xf32>) -> tensor<3x6xf32>
  func.return %0 : tensor<3x6xf32>
}

// -----

// CHECK: Operation does not verify: nn.matmul: shapes 2x3x4 and 5x6 do not multiply (4 columns against 5 rows)
func.func @matmul_inner(%a: tensor<2x3x4xf32>, %b: tensor<5x6xf32>) -> tensor<2x3x6xf32> {
  %0 = nn.matmul %a, %b : (tensor<2x3x4xf32>, tensor<5x6xf32>) -> tensor<2x3x6xf32>
  func.return %0 : tensor<2x3x6xf32>
}

// -----

// CHECK: Operation does not verify: nn.relu: operand #0 has an unsupported element type f64; supported: f32, i8, ui8, i32, i64, i1
func.func @f64(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = nn.relu %x : (tensor<4xf64>) -> tensor<4xf64>
  func.return %0 : tensor<4xf64>
}

// -----

// CHECK: Operation does not verify: nn.add: operand #1 has an unsupported element type i16; supported: f32, i8, ui8, i32, i64, i1
func.func @i16(%x: tensor<4xi16>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.add %y, %x : (tensor<4xf32>, tensor<4xi16>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: Operation does not verify: nn.where: the condition must be bool, got tensor<4xf32>
func.func @where_float_condition(%c: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = nn.where %c, %x, %x : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// CHECK: Operation does not verify: nn.take: the indices must be int32, int64, got tensor<2xf32>
func.func @take_float_indices(%t: tensor<4x3xf32>, %i: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = nn.take %t, %i {axis = 0} : (tensor<4x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// -----

// CHECK: Operation does not verify: nn.argmax: the result must be int64, got tensor<4xi32>
func.func @argmax_i32(%x: tensor<4x3xf32>) -> tensor<4xi32> {
  %0 = nn.argmax %x {axes = array<i64: 1>, keepdims = 0, select_last_index = 0} : (tensor<4x3xf32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
