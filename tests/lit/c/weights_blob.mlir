// RUN: rm -rf %t && mkdir -p %t/out %t/other
// RUN: tigris-opt %S/../Inputs/conv_bn_gap_gemm.onnx --lower-to-loops=budget=2K --gebp-tile --lower-gebp --plan-arena -t 'c{weights=blob}' -o %t/out/model.c
// RUN: filecheck %s --input-file=%t/out/model.c
// RUN: filecheck %s --check-prefix=HEADER --input-file=%t/out/model.h
// RUN: cd %t/other && cc -std=c99 -Wall -Wextra -Werror -ffp-contract=off -O1 -c %t/out/model.c -o model.o -Wa,-I%t/out
// RUN: not tigris-opt %S/../Inputs/conv_bn_gap_gemm.onnx --lower-to-loops=budget=2K --gebp-tile --lower-gebp --plan-arena -t 'c{weights=blob}' 2>&1 | filecheck %s --check-prefix=STDOUT
// RUN: tigris-opt %S/../Inputs/conv_bn_gap_gemm.onnx --lower-to-loops=budget=2K --gebp-tile --lower-gebp --plan-arena -t c -o %t/out/text.c
// RUN: %python -c "import sys, pathlib; sys.exit(pathlib.Path(sys.argv[1]).exists())" %t/out/text.weights.bin

// `-t 'c{weights=blob}' -o model.c` writes the weights to model.weights.bin
// beside model.c and model.h; the unit includes it with .incbin, found from
// another folder with -Wa,-I. The C target refuses the blob on standard
// output; its default keeps a small model's weights in the C.

// CHECK:      /* ---- weights: [[SIZE:[0-9]+]] bytes in the binary file model.weights.bin ----
// CHECK:      #define TIGRIS_WEIGHTS_FILE "model.weights.bin"
// CHECK:      #define TIGRIS_WEIGHTS_SECTION .rodata
// CHECK:      extern const unsigned char tigris_weights[[[SIZE]]] __asm__("tigris_weights") TIGRIS_ALIGNED;
// CHECK-NEXT: __asm__(".pushsection " TIGRIS_STR(TIGRIS_WEIGHTS_SECTION) "\n"
// CHECK-NEXT:         ".balign 64\n"
// CHECK:              ".incbin " TIGRIS_STR(TIGRIS_WEIGHTS_FILE) "\n"
// CHECK:              ".popsection\n");
// CHECK:      static const float *const {{[A-Za-z_0-9]+}} = (const float *)(tigris_weights + 0);

// HEADER: The large weights are the binary file model.weights.bin

// STDOUT: tigris-opt: error: the weights ({{[0-9]+}} bytes) go in a binary file beside the C file, {{.*}} give -o NAME.c (the weights go to NAME.weights.bin), or print them as C text with -t 'c{weights=c}'
