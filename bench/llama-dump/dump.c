// Dumps every F32/F16 tensor llama.cpp computes for one prompt, through the prebuilt
// libraries node-llama-cpp 3.21.1 ships (its eval callback, cb_eval). Build: build.sh.
//   BINS=<node-llama-cpp's bins dir> [FA=-1|0|1] dump MODEL.gguf OUT.bin TOKEN...
// FA: flash attention auto (-1, llama.cpp's default), off (0) or on (1). One thread,
// n_ctx 256, F16 KV cache. OUT.bin: per tensor a text line
// "name|OP|type|ne0 ne1 ne2 ne3|count", then count float32 values (F16 widened) in
// logical order, then a newline.
#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"
#include <stdio.h>
#include <stdlib.h>

static FILE *out;

static bool on_tensor(struct ggml_tensor *t, bool ask, void *user) {
  (void)user;
  if (ask) return true;
  if (t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16) return true;
  const int64_t n = ggml_nelements(t);
  const size_t nb = ggml_nbytes(t);
  char *raw = malloc(nb);
  float *vals = malloc(n * sizeof(float));
  ggml_backend_tensor_get(t, raw, 0, nb);
  int64_t k = 0;
  for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
    for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
      for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
        for (int64_t i0 = 0; i0 < t->ne[0]; i0++) {
          const size_t off = i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
          vals[k++] = t->type == GGML_TYPE_F32 ? *(float *)(raw + off) : ggml_fp16_to_fp32(*(ggml_fp16_t *)(raw + off));
        }
  fprintf(out, "%s|%s|%s|%lld %lld %lld %lld|%lld\n", t->name, ggml_op_desc(t), ggml_type_name(t->type),
          (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], (long long)n);
  fwrite(vals, sizeof(float), n, out);
  fputc('\n', out);
  free(vals);
  free(raw);
  return true;
}

int main(int argc, char **argv) {
  if (argc < 4 || !getenv("BINS")) {
    fprintf(stderr, "usage: BINS=<libs dir> [FA=-1|0|1] dump MODEL.gguf OUT.bin TOKEN...\n");
    return 2;
  }
  ggml_backend_load_all_from_path(getenv("BINS"));
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  struct llama_model *model = llama_model_load_from_file(argv[1], mp);
  if (!model) return 1;
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;
  cp.n_threads = cp.n_threads_batch = 1;
  cp.n_seq_max = 1;
  if (getenv("FA")) cp.flash_attn_type = atoi(getenv("FA"));
  cp.cb_eval = on_tensor;
  struct llama_context *ctx = llama_init_from_model(model, cp);
  if (!ctx) return 1;
  out = fopen(argv[2], "wb");
  const int n = argc - 3;
  llama_token *tokens = malloc(n * sizeof(llama_token));
  for (int i = 0; i < n; i++) tokens[i] = atoi(argv[3 + i]);
  const int rc = llama_decode(ctx, llama_batch_get_one(tokens, n));
  fclose(out);
  free(tokens);
  llama_free(ctx);
  llama_model_free(model);
  return rc == 0 ? 0 : 1;
}
