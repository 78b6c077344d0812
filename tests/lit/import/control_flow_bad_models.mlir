// Control flow the importer does not take: one diagnostic naming the node (and
// the branch it sits in), exit status 1, no traceback.

// RUN: not tigris-opt %S/../Inputs/control_flow_scan.onnx 2>&1 | filecheck %s --check-prefix=SCAN
// SCAN: control_flow_scan.onnx: node 0 'scanning' (Loop): error: Loop's scan outputs are not supported: the node has 2 outputs for 1 loop-carried value(s); only loop-carried values are supported
// SCAN-NOT: Traceback

// RUN: not tigris-opt %S/../Inputs/control_flow_branch_types.onnx 2>&1 | filecheck %s --check-prefix=TYPES
// TYPES: control_flow_branch_types.onnx: node 2 'shapes' (If): error: output 0 ('y') is tensor<1x8x8x4xf32> in then_branch but tensor<1x4x4x4xf32> in else_branch; both branches must give one static type

// RUN: not tigris-opt %S/../Inputs/control_flow_body_unsupported.onnx 2>&1 | filecheck %s --check-prefix=BODY
// BODY: control_flow_body_unsupported.onnx: node 2 'branch' (If): then_branch: node 0 'the_einsum' (Einsum): error: unsupported operator 'Einsum'
