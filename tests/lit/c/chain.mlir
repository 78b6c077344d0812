// RUN: tigris-opt %S/../Inputs/conv_relu.onnx --lower-to-loops=budget=1K --gebp-tile --lower-gebp --plan-arena -t c | filecheck %s

// A line-buffered chain: the input lives in the slow arena, the per-tile row
// ranges are static const tables indexed by the tile, each tile first moves
// the rows the line buffer keeps to its start (a copy within one buffer),
// loads only the new rows (counted as slow reads), computes each band unless
// it is empty and spills the output rows (counted as slow writes).

// CHECK:      #define TIGRIS_FAST_ARENA_BYTES {{[1-9][0-9]*}}
// CHECK-NEXT: #define TIGRIS_SLOW_ARENA_BYTES {{[1-9][0-9]*}}
// CHECK:      static unsigned char tigris_fast_arena[TIGRIS_FAST_ARENA_BYTES] TIGRIS_FAST_SECTION TIGRIS_ALIGNED;
// CHECK-NEXT: #ifndef TIGRIS_SLOW_ARENA_EXTERN
// CHECK-NEXT: static unsigned char tigris_slow_arena[TIGRIS_SLOW_ARENA_BYTES] TIGRIS_SLOW_SECTION TIGRIS_ALIGNED;
// CHECK:      static const int16_t chain0_keep_input[{{[0-9]+}}] TIGRIS_FLASH = {
// CHECK:        float *input = (float *)(void *)(tigris_slow_arena + {{[0-9]+}});
// CHECK:        float *s_relu1 = (float *)(void *)(tigris_slow_arena + {{[0-9]+}});
// CHECK:      /* chain 0: chain, line-buffered, tiles */
// CHECK-NEXT: for (ptrdiff_t tile = 0; tile < {{[0-9]+}}; ++tile) {
// CHECK-NEXT:   TIGRIS_STAT_TILE();
// CHECK-NEXT:   const ptrdiff_t keep_input_n = (ptrdiff_t)chain0_keep_input[tile * 2 + 1];
// CHECK-NEXT:   const ptrdiff_t keep_input_src = (ptrdiff_t)chain0_keep_input[tile * 2];
// CHECK:        float *[[KEPT:v[_0-9]*]] = input_1 + keep_input_src * 24;
// CHECK:        float *[[START:v[_0-9]*]] = input_1;
// CHECK:          memmove([[START]], [[KEPT]], (size_t)(24 * keep_input_n) * sizeof(float));
// CHECK:          TIGRIS_STAT_READ((((load_input_hi - load_input_lo) * 8) * 3) * (sizeof(float)));
// CHECK-NEXT:     memmove({{v[_0-9]*}}, {{v[_0-9]*}}, (size_t)(24 * (load_input_hi - load_input_lo)) * sizeof(float));
// CHECK:        /* loop.band nn.conv -> 'conv_0' */
// CHECK-NEXT:   if (out_conv0_hi > out_conv0_lo) {
// CHECK:        /* loop.band nn.relu -> {{.*}} */
// CHECK-NEXT:   if (out_relu1_hi > out_relu1_lo) {
// CHECK:          TIGRIS_STAT_WRITE((((spill_relu1_hi - spill_relu1_lo) * 8) * 4) * (sizeof(float)));
// CHECK-NEXT:     memmove({{v[_0-9]*}}, {{v[_0-9]*}}, (size_t)(32 * (spill_relu1_hi - spill_relu1_lo)) * sizeof(float));
// CHECK:      /* output 'output': float 1x4x8x8, nchw */
// CHECK:        outputs_output[({{.*}} * 4 + {{.*}}) * 64 + {{.*}}] = s_relu1[({{.*}} * 64 + {{.*}}) * 4 + {{.*}}];
