// The plan runs at the loop level and measures what the planner planned: the
// planner's figures (tigris-analyze --json) and the run's (--stats) are
// matched by FileCheck variables. --check compares with the untiled reference.

// RUN: tigris-analyze %S/../Inputs/conv_relu.onnx -m 160 --json > %t.grid
// RUN: tigris-run %S/../Inputs/conv_relu.onnx -m 160 --random-input 1 --stats --check >> %t.grid
// RUN: filecheck %s --check-prefixes=EQ,GRID < %t.grid
// RUN: tigris-analyze %S/../Inputs/conv_relu.onnx -m 288 --json > %t.bands
// RUN: tigris-run %S/../Inputs/conv_relu.onnx -m 288 --random-input 1 --stats --check >> %t.bands
// RUN: filecheck %s --check-prefixes=EQ,BANDS < %t.bands
// RUN: tigris-analyze %S/../Inputs/conv_relu.onnx -m 1K --json > %t.chain
// RUN: tigris-run %S/../Inputs/conv_relu.onnx -m 1K --random-input 1 --stats --check >> %t.chain
// RUN: filecheck %s --check-prefixes=EQ,CHAIN < %t.chain
// RUN: tigris-analyze %S/../Inputs/qdq_conv.onnx -m 512 --json > %t.qdq
// RUN: tigris-run %S/../Inputs/qdq_conv.onnx -m 512 --random-input 2 --stats --check >> %t.qdq
// RUN: filecheck %s --check-prefixes=EQ,CHAIN < %t.qdq
// RUN: tigris-analyze %S/../Inputs/resize_concat.onnx -m 1K --json > %t.resize
// RUN: tigris-run %S/../Inputs/resize_concat.onnx -m 1K --random-input 3 --stats --check >> %t.resize
// RUN: filecheck %s --check-prefixes=EQ,RESIZE < %t.resize
// RUN: tigris-analyze %S/../Inputs/conv_bn_gap_gemm.onnx -m 1K --json > %t.normal
// RUN: tigris-run %S/../Inputs/conv_bn_gap_gemm.onnx -m 1K --random-input 4 --stats --check >> %t.normal
// RUN: filecheck %s --check-prefixes=EQ,NORMAL < %t.normal
// RUN: tigris-analyze %S/../Inputs/conv_relu.onnx -m 4K --json > %t.inplace
// RUN: tigris-run %S/../Inputs/conv_relu.onnx -m 4K --random-input 1 --stats --check >> %t.inplace
// RUN: filecheck %s --check-prefixes=EQ,INPLACE < %t.inplace
// EQ:        "peak_bytes": [[PEAK:[0-9]+]],
// EQ-NEXT:   "slow_peak_bytes": [[SLOW:[0-9]+]],
// EQ-NEXT:   "slow_read_bytes": [[READS:[0-9]+]],
// EQ-NEXT:   "slow_write_bytes": [[WRITES:[0-9]+]],
// GRID:      "strategy": "grid"
// CHAIN:     "line_buffered": true
// BANDS:     "line_buffered": true
// BANDS:     "column_bands": 2,
// BANDS-NEXT: "band_width": 4,
// RESIZE:    "strategy": "resize"
// NORMAL:    "strategy": "strips"
// NORMAL:    "strategy": "normal"
// INPLACE:   "in_place": true
// EQ:        output '{{.*}}': float32
// EQ:        fast peak: [[PEAK]]
// EQ-NEXT:   slow peak: [[SLOW]]
// EQ-NEXT:   slow reads: [[READS]]
// EQ-NEXT:   slow writes: [[WRITES]]
// EQ-NEXT:   output '{{.*}}': equals the untiled reference

// A plan printed by tigris-opt runs the same.
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --tile-stages=budget=1K --fuse-chains --backprop-heights --lower-to-loops --plan-arena -o %t.plan.mlir
// RUN: tigris-run %t.plan.mlir --random-input 1 --stats --check | filecheck %s --check-prefix=PLAN
// PLAN:      fast peak: 864
// PLAN:      output 'output': equals the untiled reference

// Nothing runs on a plan that fails verification: two live buffers moved
// onto each other, a tile table that loads fewer rows than a band reads, a
// budget below the arena.
// RUN: sed -e 's/loop.tensor = "conv_0", loop.offset = [0-9]*/loop.tensor = "conv_0", loop.offset = 0/' %t.plan.mlir > %t.overlap.mlir
// RUN: not tigris-run %t.overlap.mlir --random-input 1 2>&1 | filecheck %s --check-prefix=OVERLAP
// OVERLAP:   tigris-run: error: the plan does not verify, nothing runs:
// OVERLAP:   fast buffers 'conv_0' [0, 384) and 'input' [0, 480) overlap while both are live
// RUN: sed -e 's/sym_name = "chain0_load_input", type = memref<3x2xindex>, initial_value = dense<\[\[0, 4\]/sym_name = "chain0_load_input", type = memref<3x2xindex>, initial_value = dense<[[0, 3]/' %t.plan.mlir > %t.short.mlir
// RUN: not tigris-run %t.short.mlir --random-input 1 2>&1 | filecheck %s --check-prefix=SHORT
// SHORT:     tigris-run: error: the plan does not verify, nothing runs:
// SHORT:     chain 0 tile 0: loop.band of 'conv_0' operand #0 reads 'input' at (0, 3, 0, 0) of its band {1: (0, 4)}, which was never loaded or computed
// RUN: not tigris-run %t.plan.mlir -m 512 --random-input 1 2>&1 | filecheck %s --check-prefix=BUDGET
// BUDGET:    the fast arena of 864 bytes exceeds the budget of 512

// A wrong input is refused before anything runs.
// RUN: %python -c "import numpy as np; np.save('%t.bad.npy', np.zeros((1, 3, 9, 9), np.float32))"
// RUN: not tigris-run %S/../Inputs/conv_relu.onnx -m 1K --input %t.bad.npy 2>&1 | filecheck %s --check-prefix=INPUT
// INPUT:     tigris-run: error: input '{{.*}}' must be float32 of shape 1x{{[0-9x]+}}, got float32 of shape 1x3x9x9
