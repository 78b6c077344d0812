// RUN: rm -rf %t && mkdir -p %t
// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --lower-to-loops=budget=2K --gebp-tile --lower-gebp --plan-arena -t c -o %t/model.c
// RUN: filecheck %s --input-file=%t/model.h
// RUN: %python -c "import sys; sys.exit(open(sys.argv[2]).read() not in open(sys.argv[1]).read())" %t/model.c %t/model.h
// RUN: cc -std=c99 -Wall -Wextra -Werror -ffp-contract=off -O1 -march=native -c %t/model.c -o %t/model.o
// RUN: cc -std=c99 -Wall -Wextra -Werror -ffp-contract=off -O1 -DTIGRIS_PORTABLE -DTIGRIS_BOUNDS_CHECK -DTIGRIS_STATS -DTIGRIS_SLOW_ARENA_EXTERN -c %t/model.c -o %t/checked.o

// `-t c -o model.c` writes model.h beside it; the unit repeats the header
// (it compiles alone) and compiles warning-free with every macro.

// CHECK:      #ifndef TIGRIS_H_
// CHECK:      #define TIGRIS_FAST_ARENA_BYTES 2048
// CHECK-NEXT: #define TIGRIS_SLOW_ARENA_BYTES 0
// CHECK-NEXT: #define TIGRIS_ARENA_ALIGN 64
// CHECK-NEXT: #define TIGRIS_STACK_SCRATCH_BYTES {{[0-9]+}}
// CHECK-NEXT: #define TIGRIS_NUM_INPUTS 1
// CHECK-NEXT: #define TIGRIS_NUM_OUTPUTS 1
// CHECK:      } tigris_stats_t;
// CHECK:      int tigris_run_n(const void *const *inputs, void *const *outputs);
// CHECK-NEXT: int tigris_run(const void *input, void *output);
// CHECK:      int tigris_stats(tigris_stats_t *out);
// CHECK:      #endif /* TIGRIS_H_ */
