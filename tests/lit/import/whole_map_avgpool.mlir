// RUN: tigris-opt %S/../Inputs/whole_map_avgpool.onnx | filecheck %s
// RUN: tigris-run %S/../Inputs/whole_map_avgpool.onnx --random-input 0 --check | filecheck %s --check-prefix=ORT

// An AveragePool whose window is the whole map is a global average: it tiles
// as accumulated bands of rows instead of needing all rows at once.
// CHECK:     nn.global_average_pool %x : (tensor<1x5x3x4xf32>) -> tensor<1x1x1x4xf32>
// CHECK-NOT: nn.average_pool
// ORT: output 'y': ok
