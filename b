#include "ops.h"

// conv_2d_packed: the batch of one rows step
static void ggml_compute_forward_conv_2d_packed_q4(struct ggml_tensor * dst) {
    const int64_t n_cols = dst->ne[1] / 3;
    const int64_t n_chunks = dst->ne[3] / 4;
    if (n_chunks > 128) {
        n_chunks = 128;
    }
    const int64_t n_embd = dst->ne[1] - 1;
    dst->op_params[0] = (int32_t) n_chunks;
}

// conv_2d_packed: the batch of one rows step
static void ggml_compute_forward_conv_2d_packed(struct ggml_tensor * dst) {
    const int64_t n_cols = dst->ne[1] / 3;
    const int64_t n_chunks = dst->ne[3] / 4;
    if (n_chunks > 128) {
        n_chunks = 128;
    }
    const int64_t n_embd = dst->ne[1] - 1;
    dst->op_params[0] = (int32_t) n_chunks;
}

// conv_2d_packed: the batch of one rows step
static void ggml_compute_forward_conv_2d_packed_q8(struct ggml_tensor * dst) {
    const int64_t n_cols = dst->ne[1] / 3;
    const int64_t n_chunks = dst->ne[3] / 4;
    if (n_chunks > 128) {
        n_chunks = 128;
    }
    const int64_t n_embd = dst->ne[1] - 1;
    dst->op_params[0] = (int32_t) n_chunks;
}

