// RUN: rm -rf %t && mkdir -p %t
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --weights-out %t/w.npz -o %t/m.mlir
// RUN: filecheck %s < %t/m.mlir
// RUN: tigris-run %t/m.mlir --random-input 3 -o %t/y_mlir.npy -q
// RUN: tigris-run %S/../Inputs/conv_relu.onnx --random-input 3 -o %t/y_onnx.npy --check | filecheck %s --check-prefix=ORT
// RUN: %python -c "import numpy as n, sys; a, b = n.load(sys.argv[1]), n.load(sys.argv[2]); sys.exit(0 if a.shape == (1, 4, 8, 8) and n.array_equal(a, b) else 1)" %t/y_mlir.npy %t/y_onnx.npy

// The side file holds the weights; the IR plus that file run without the model.
// CHECK: builtin.module attributes {nn.weights = "{{.*}}w.npz"}
// ORT: output 'output': ok: worst {{.*}} relative (limit 1.00e-04)
