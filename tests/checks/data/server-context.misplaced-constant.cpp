// Test fixture for patchkit's site checks. Written for these tests in the shape of llama.cpp's
// tools/server/server-context.cpp; not upstream code.
// Scenario: a fuzzed first hunk put the constant into a member function body, not at class scope.
#include "server-context.h"
#include "server-common.h"

#include <algorithm>
#include <cinttypes>
#include <random>
#include <vector>

#define SLT_DBG(slot, fmt, ...) LOG_DBG("slot %12.*s: id %2d | task %d | " fmt, 12, __func__, (slot).id, (slot).task_id, __VA_ARGS__)
#define SLT_WRN(slot, fmt, ...) LOG_WRN("slot %12.*s: id %2d | task %d | " fmt, 12, __func__, (slot).id, (slot).task_id, __VA_ARGS__)

struct server_slot {
    int id;
    int task_id = -1;

    llama_context * ctx_tgt = nullptr;
    llama_context * ctx_dft = nullptr;

    server_prompt prompt;
    server_memory mem;

    int64_t n_prompt_tokens_processed = 0;

    // speculative decoding
    llama_tokens spec_prompt;
    std::vector<int32_t> spec_i_batch;
    common_prompt_checkpoint spec_ckpt;
    bool spec_is_replay = false;
    std::mt19937 spec_synth_rng;

    void reset() {
        spec_prompt.clear();
        spec_i_batch.clear();
        // one speculative checkpoint per slot, so its tensor data can stay on the device
        static constexpr llama_state_seq_flags spec_ckpt_flags = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;
        spec_is_replay = false;
    }

    void print_timings() const {
        LOG_INF("prompt eval: n = %" PRId64 " tokens\n", n_prompt_tokens_processed);
    }
};

struct server_context_impl {
    common_params params_base;

    llama_model * model_tgt = nullptr;
    llama_context * ctx_tgt = nullptr;
    llama_context * ctx_dft = nullptr;

    std::vector<server_slot> slots;

    int32_t n_ctx = 0;

public:
    bool load_model(const common_params & params) {
        params_base = params;
        return model_tgt != nullptr;
    }

private:
    void update_slots() {
        for (auto & slot : slots) {
            const bool do_checkpoint = params_base.n_ctx_checkpoints > 0;

            // save a prompt checkpoint, kept in the slot's prompt history
            if (do_checkpoint) {
                while (slot.prompt.checkpoints.size() >= (size_t) params_base.n_ctx_checkpoints) {
                    slot.prompt.checkpoints.erase(slot.prompt.checkpoints.begin());
                }

                auto & cur = slot.prompt.checkpoints.emplace_back();

                cur.update_pos(slot.prompt.n_tokens(),
                        llama_memory_seq_pos_min(llama_get_memory(ctx_tgt), slot.id),
                        llama_memory_seq_pos_max(llama_get_memory(ctx_tgt), slot.id));

                cur.update_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);

                if (ctx_dft) {
                    cur.update_dft(ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
                }

                SLT_WRN(slot, "created context checkpoint %d of %d (pos_min = %d, pos_max = %d)\n",
                        (int) slot.prompt.checkpoints.size(), params_base.n_ctx_checkpoints, cur.pos_min, cur.pos_max);
            }
        }

        for (auto & slot : slots) {
            const bool use_ckpt_dft = slot.ctx_dft != nullptr;

            if (!slot.spec_is_replay) {
                slot.spec_ckpt.update_pos(slot.prompt.n_tokens(),
                        llama_memory_seq_pos_min(llama_get_memory(ctx_tgt), slot.id),
                        llama_memory_seq_pos_max(llama_get_memory(ctx_tgt), slot.id));

                if (use_ckpt_dft) {
                    slot.spec_ckpt.update_dft(ctx_dft, slot.id, slot.spec_ckpt_flags);
                }

                slot.spec_prompt = slot.prompt.tokens.get_text_tokens();
            }
        }

        auto draft_round = [&](server_slot & slot, bool use_ckpt_tgt, bool use_ckpt_dft) {
            auto & ckpt = slot.spec_ckpt;

            if (ctx_dft) {
                if (use_ckpt_dft) {
                    ckpt.load_dft(ctx_dft, slot.id, slot.spec_ckpt_flags);
                }

                if (!llama_memory_seq_rm(llama_get_memory(ctx_dft), slot.id, ckpt.pos_max + 1, -1)) {
                    SLT_WRN(slot, "failed to trim the draft context to %d\n", ckpt.pos_max + 1);
                }
            }

            if (use_ckpt_tgt) {
                //const int64_t t_start = ggml_time_us();

                ckpt.update_tgt(ctx_tgt, slot.id, slot.spec_ckpt_flags);

                //const int64_t t_total = ggml_time_us() - t_start;
                //printf("checkpoint total: %f ms\n", t_total / 1000.0);
            }

            if (ctx_dft) {
                if (use_ckpt_dft) {
                    ckpt.update_dft(ctx_dft, slot.id, slot.spec_ckpt_flags);
                }
            }
        };

        for (auto & slot : slots) {
            draft_round(slot, true, slot.ctx_dft != nullptr);
        }
    }

    void restore_prompt(server_slot & slot, llama_pos pos_min_thold) {
        // restore the newest prompt checkpoint that is old enough
        auto it = std::find_if(
                slot.prompt.checkpoints.rbegin(),
                slot.prompt.checkpoints.rend(),
                [&](const auto & cur) {
                    return cur.pos_min < pos_min_thold;
                });

        if (it != slot.prompt.checkpoints.rend()) {
            it->load_tgt(ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);

            if (ctx_dft) {
                it->load_dft(ctx_dft, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
            }
        }
    }

    void reject_draft(server_slot & slot, int n_accepted) {
        auto & ckpt = slot.spec_ckpt;

        if (n_accepted < (int) slot.spec_i_batch.size()) {
            // ckpt.load_tgt(...) undoes what ckpt.update_tgt(...) saved in update_slots()
            SLT_DBG(slot, "restoring speculative checkpoint (pos_min = %d, pos_max = %d, size = %zu)\n", ckpt.pos_min, ckpt.pos_max, ckpt.size());

            ckpt.load_tgt(slot.ctx_tgt, slot.id, slot.spec_ckpt_flags);

            if (slot.ctx_dft) {
                ckpt.load_dft(slot.ctx_dft, slot.id, slot.spec_ckpt_flags);
            }

            slot.mem.seq_rm(slot.id, ckpt.pos_max + 1, -1);
        }

#if 0
        // the restore path before checkpoints had flags
        slot.spec_ckpt.load_tgt(slot.ctx_tgt, slot.id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY);
#endif

        const char * hint = "call slot.spec_ckpt.load_tgt(ctx, id, LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY) to restore";
        SLT_DBG(slot, "%s\n", hint);
    }
};
