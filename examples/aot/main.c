/* Runs the ahead-of-time compiled classifier without Python:
 *   ./classify INPUT.bin    (INPUT.bin: model_arg_bytes[0] bytes of f32, row-major)
 * prints each row's class probabilities and the most likely class. */
#include <stdio.h>
#include <stdlib.h>
#include "model.h"

int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: %s INPUT.bin\n", argv[0]); return 2; }
  /* malloc returns memory aligned for any scalar type, enough for the buffers;
   * the temp arena needs 64 bytes. */
  float* x = malloc(model_arg_bytes[0]);
  float* probs = malloc(model_result_bytes[0]);
  void* temp = aligned_alloc(64, (model_temp_bytes + 63) / 64 * 64 + 64);
  FILE* f = fopen(argv[1], "rb");
  if (!x || !probs || !temp || !f) { perror("setup"); return 2; }
  if (fread(x, 1, model_arg_bytes[0], f) != model_arg_bytes[0]) {
    fprintf(stderr, "%s: expected %zu bytes\n", argv[1], model_arg_bytes[0]);
    return 2;
  }
  fclose(f);
  const void* args[MODEL_NUM_ARGS] = {x};
  void* results[MODEL_NUM_RESULTS] = {probs};
  int code = model_run(args, results, temp);
  if (code != 0) { fprintf(stderr, "%s\n", model_error_message(code)); return 1; }
  size_t classes = 10, rows = model_result_bytes[0] / sizeof(float) / classes;
  for (size_t r = 0; r < rows; ++r) {
    size_t best = 0;
    for (size_t c = 0; c < classes; ++c) {
      printf("%.6f ", probs[r * classes + c]);
      if (probs[r * classes + c] > probs[r * classes + best]) best = c;
    }
    printf(" -> class %zu\n", best);
  }
  free(x); free(probs); free(temp);
  return 0;
}
