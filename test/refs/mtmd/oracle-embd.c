// The embeddings llama.cpp's mtmd computes for an audio clip, from the oracle binary itself
// (@fugood/llama.node's index.node exports llama.cpp's and mtmd's C API; loaded with dlopen):
// the text model and projector loaded on the CPU, the clip (16 kHz mono f32 samples, as
// mtmd-helper's decoder gives them) tokenized as "<__media__>", and each audio chunk encoded
// (mtmd_encode_chunk). Writes per chunk: int32 n_tokens, int32 width, then the floats.
// With IMG_W and IMG_H set, the input is an image instead: IMG_W x IMG_H RGB bytes (as
// stb_image gives them), and its image chunks are written.
// With DUMP_DIR set, every F32 graph node of the encoder is also written there (NNN.bin, and
// its name, op and shape on stderr), through the context's eval callback.
//   cc -I LLAMA_CPP/include -I LLAMA_CPP/ggml/include oracle-embd.c -o oracle-embd -ldl
//   [IMG_W=W IMG_H=H] oracle-embd INDEX_NODE MODEL MMPROJ SAMPLES.f32|PIXELS.rgb OUT.bin
// Build 10257's mtmd_context_params (from mtmd_context_params_default's bytes): use_gpu at
// byte 0, print_timings at 1, n_threads (int) at 4, cb_eval at 40; mtmd_input_text has
// text_len after text. The struct is passed through as opaque bytes.
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "llama.h"

typedef struct {
    char b[1024];
} ctx_params;

typedef struct {
    const char * text;
    size_t       text_len;
    bool         add_special;
    bool         parse_special;
} input_text;

static const char * g_dump_dir;
static int          g_node;
static size_t (*p_nbytes)(const struct ggml_tensor *);
static const char * (*p_op_name)(enum ggml_op);

static bool dump_node(struct ggml_tensor * t, bool ask, void * user_data) {
    (void) user_data;
    if (ask || t->type != GGML_TYPE_F32) {
        return true;
    }
    const bool cont = t->nb[0] == 4 && t->nb[1] == t->nb[0] * t->ne[0] && t->nb[2] == t->nb[1] * t->ne[1] &&
                      t->nb[3] == t->nb[2] * t->ne[2];
    fprintf(stderr, "@@NODE %d %s %s [%ld %ld %ld %ld]%s\n", g_node, p_op_name(t->op), t->name, (long) t->ne[0],
            (long) t->ne[1], (long) t->ne[2], (long) t->ne[3], cont ? "" : " (not contiguous: not written)");
    if (cont) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%03d.bin", g_dump_dir, g_node);
        FILE * f = fopen(path, "wb");
        if (f) {
            fwrite(t->data, 1, p_nbytes(t), f);
            fclose(f);
        }
    }
    g_node++;
    return true;
}

#define SYM(name, type)                                      \
    __typeof__(type) name = (__typeof__(type)) dlsym(lib, #name); \
    if (!name) {                                             \
        fprintf(stderr, "%s: no symbol %s\n", argv[1], #name); \
        return 1;                                            \
    }

int main(int argc, char ** argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s INDEX_NODE MODEL MMPROJ SAMPLES.f32 OUT.bin\n", argv[0]);
        return 1;
    }
    void * lib = dlopen(argv[1], RTLD_LAZY | RTLD_GLOBAL);
    if (!lib) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    SYM(llama_backend_init, void (*)(void));
    SYM(llama_model_default_params, struct llama_model_params (*)(void));
    SYM(llama_model_load_from_file, struct llama_model * (*) (const char *, struct llama_model_params));
    SYM(llama_model_n_embd_inp, int32_t (*)(const struct llama_model *));
    SYM(mtmd_context_params_default, ctx_params (*)(void));
    SYM(mtmd_init_from_file, void * (*) (const char *, const struct llama_model *, ctx_params));
    SYM(mtmd_bitmap_init_from_audio, void * (*) (size_t, const float *));
    SYM(mtmd_bitmap_init, void * (*) (uint32_t, uint32_t, const unsigned char *));
    SYM(mtmd_input_chunks_init, void * (*) (void));
    SYM(mtmd_tokenize, int32_t (*)(void *, void *, const input_text *, const void **, size_t));
    SYM(mtmd_input_chunks_size, size_t (*)(void *));
    SYM(mtmd_input_chunks_get, const void * (*) (void *, size_t));
    SYM(mtmd_input_chunk_get_type, int (*)(const void *));
    SYM(mtmd_input_chunk_get_n_tokens, size_t (*)(const void *));
    SYM(mtmd_encode_chunk, int32_t (*)(void *, const void *));
    SYM(mtmd_get_output_embd, float * (*) (void *));
    SYM(ggml_nbytes, size_t (*)(const struct ggml_tensor *));
    SYM(ggml_op_name, const char * (*) (enum ggml_op));
    p_nbytes  = ggml_nbytes;
    p_op_name = ggml_op_name;

    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers              = 0;
    struct llama_model * model   = llama_model_load_from_file(argv[2], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[2]);
        return 2;
    }
    ctx_params p = mtmd_context_params_default();
    p.b[0]       = 0;  // use_gpu
    p.b[1]       = 0;  // print_timings
    const int32_t n_threads = 1;
    memcpy(p.b + 4, &n_threads, sizeof n_threads);
    g_dump_dir = getenv("DUMP_DIR");
    if (g_dump_dir) {
        bool (*cb)(struct ggml_tensor *, bool, void *) = dump_node;
        memcpy(p.b + 40, &cb, sizeof cb);
    }
    void * ctx = mtmd_init_from_file(argv[3], model, p);
    if (!ctx) {
        fprintf(stderr, "cannot load %s\n", argv[3]);
        return 3;
    }
    FILE * in = fopen(argv[4], "rb");
    if (!in) {
        fprintf(stderr, "cannot read %s\n", argv[4]);
        return 4;
    }
    fseek(in, 0, SEEK_END);
    const long n_bytes = ftell(in);
    fseek(in, 0, SEEK_SET);
    float * samples = malloc(n_bytes);  // or the pixels
    if (!samples || fread(samples, 1, n_bytes, in) != (size_t) n_bytes) {
        return 4;
    }
    fclose(in);
    const char * img_w      = getenv("IMG_W");
    const char * img_h      = getenv("IMG_H");
    const void * bitmaps[1] = { img_w && img_h ? mtmd_bitmap_init(atoi(img_w), atoi(img_h), (const unsigned char *) samples) :
                                                 mtmd_bitmap_init_from_audio(n_bytes / sizeof(float), samples) };
    void *       chunks     = mtmd_input_chunks_init();
    input_text   text       = { "<__media__>", strlen("<__media__>"), false, true };
    if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0) {
        fprintf(stderr, "mtmd_tokenize failed\n");
        return 5;
    }
    const int32_t width = llama_model_n_embd_inp(model);
    FILE *        out   = fopen(argv[5], "wb");
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++) {
        const void * chunk = mtmd_input_chunks_get(chunks, i);
        if (mtmd_input_chunk_get_type(chunk) == 0) {  // MTMD_INPUT_CHUNK_TYPE_TEXT
            continue;
        }
        const int32_t n = (int32_t) mtmd_input_chunk_get_n_tokens(chunk);
        if (mtmd_encode_chunk(ctx, chunk) != 0) {
            fprintf(stderr, "mtmd_encode_chunk failed\n");
            return 6;
        }
        fwrite(&n, sizeof n, 1, out);
        fwrite(&width, sizeof width, 1, out);
        fwrite(mtmd_get_output_embd(ctx), sizeof(float), (size_t) n * width, out);
    }
    fclose(out);
    return 0;
}
