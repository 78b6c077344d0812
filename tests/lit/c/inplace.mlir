// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --lower-to-loops=budget=2K --gebp-tile --lower-gebp --plan-arena -t c | filecheck %s

// The whole graph fits the fast arena: no slow arena, the input transposed
// from NCHW straight into its fast buffer, every buffer a pointer at its
// planned offset, each band checked against the arena in the bounds build.

// CHECK:      #define TIGRIS_FAST_ARENA_BYTES 2048
// CHECK-NEXT: #define TIGRIS_SLOW_ARENA_BYTES 0
// CHECK:      #define TIGRIS_INPUT0_BYTES 768 /* 'input': float32 1x3x8x8 (nchw) */
// CHECK-NEXT: #define TIGRIS_OUTPUT0_BYTES 1024 /* 'output': float32 1x4x8x8 (nchw) */
// CHECK:      int tigris_run_n(const void *const *inputs, void *const *outputs);
// CHECK-NEXT: int tigris_run(const void *input, void *output);
// CHECK:      static unsigned char tigris_fast_arena[TIGRIS_FAST_ARENA_BYTES] TIGRIS_FAST_SECTION TIGRIS_ALIGNED;
// CHECK-NEXT: #define tigris_slow_arena ((unsigned char *)NULL) /* no slow buffer */
// A weight of 256 bytes or more is printed as its bytes, one string literal per line.
// CHECK:      static const union { unsigned char b[433]; float v[108]; } [[W:[a-z_0-9]+]]_bytes TIGRIS_FLASH TIGRIS_ALIGNED = {
// CHECK-NEXT:     "{{.*}}"
// CHECK:      static const float *const [[W]] = [[W]]_bytes.v;
// Smaller ones as lists of literals.
// CHECK:      static const float {{[a-z_0-9]+}}[{{[0-9]+}}] TIGRIS_FLASH TIGRIS_ALIGNED = {
// CHECK:      int tigris_run_n(const void *const *inputs, void *const *outputs)
// CHECK:        float *input = (float *)(void *)(tigris_fast_arena + [[IN:[0-9]+]]);
// CHECK-NEXT:   TIGRIS_STAT_ALLOC(1, 768, {{[0-9]+}});
// CHECK-NEXT:   /* input 'input': float 1x3x8x8, nchw */
// CHECK:                  input[([[N:[a-z_0-9]+]] * 64 + [[S:[a-z_0-9]+]]) * 3 + [[C:[a-z_0-9]+]]] = inputs_input[([[N]] * 3 + [[C]]) * 64 + [[S]]];
// CHECK:        float *conv0 = (float *)(void *)(tigris_fast_arena + {{[0-9]+}});
// CHECK:        /* loop.band nn.conv -> 'conv_0' */
// CHECK-NEXT:   {
// CHECK-NEXT:       TIGRIS_BOUND(TIGRIS_INSIDE_FAST(input, 192));
// CHECK-NEXT:       TIGRIS_BOUND(TIGRIS_INSIDE_FAST(conv0, 256));
// CHECK:        TIGRIS_STAT_FREE(1, 768);
// CHECK:        /* loop.band nn.relu -> 'relu_1' */
// CHECK:        /* output 'output': float 1x4x8x8, nchw */
// CHECK:        return 0;
// CHECK:      int tigris_run(const void *input, void *output)
// CHECK-NOT:  malloc
