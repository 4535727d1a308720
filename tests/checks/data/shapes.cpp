// Test fixture for patchkit's site checks: the code shapes the analysis must see through.
// Written for these tests; each site's expected verdict is in the comment above it.
#include <algorithm>
#include <vector>

#define SPEC_FLAGS (LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_ON_DEVICE)
#define HOST_FLAGS LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY

llama_state_seq_flags checkpoint_place(const llama_context * ctx);

struct server_slot {
    int id;
    server_prompt prompt;
    common_prompt_checkpoint spec_ckpt;
    static constexpr llama_state_seq_flags spec_ckpt_flags = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;
    llama_state_seq_flags spec_ckpt_flags_now = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY;
};

struct server_context_impl {
    // the same kind of constant, but in another struct: slot.spec_dft_flags cannot mean this one
    static constexpr llama_state_seq_flags spec_dft_flags = LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;

    std::vector<server_slot> slots;
    llama_context * ctx_tgt = nullptr;

    void shapes(server_slot & slot) {
        // ok: split over lines, comments inside
        slot.spec_ckpt.update_tgt(ctx_tgt,
                                  slot.id, /* the sequence */
                                  // the flags:
                                  slot.spec_ckpt_flags);

        auto & a = slot.spec_ckpt;
        auto & b = a;
        // ok: a chain of references, flags from a #define
        b.load_tgt(ctx_tgt, slot.id, SPEC_FLAGS);

        auto * p = &slot.spec_ckpt;
        // ok: a pointer, a cast around parentheses
        p->load_dft(ctx_tgt, slot.id, (llama_state_seq_flags) (SPEC_FLAGS));

        constexpr llama_state_seq_flags both = LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY | LLAMA_STATE_SEQ_FLAGS_ON_DEVICE;
        // ok: dereferenced pointer, static_cast of a local constexpr
        (*p).update_dft(ctx_tgt, slot.id, static_cast<llama_state_seq_flags>(both));

        auto run = [&](int n) {
            for (int i = 0; i < n; ++i) {
                {
                    // missing-flag: inside a lambda and nested blocks
                    b.update_tgt(ctx_tgt, slot.id, HOST_FLAGS);
                }
            }
        };
        run(1);

        // dynamic: a non-constant member, in a macro argument
        GGML_ASSERT(a.load_tgt(ctx_tgt, slot.id, slot.spec_ckpt_flags_now) > 0);

        // dynamic: a run-time function
        slot.spec_ckpt.load_dft(ctx_tgt, slot.id, checkpoint_place(ctx_tgt));

        llama_state_seq_flags mutable_flags = SPEC_FLAGS;
        // dynamic: a variable, not a constant
        slot.spec_ckpt.load_dft(ctx_tgt, slot.id, mutable_flags);

        // unresolved: spec_dft_flags is declared in server_context_impl, not in server_slot
        slot.spec_ckpt.update_dft(ctx_tgt, slot.id, slot.spec_dft_flags);

        for (auto it = slot.prompt.checkpoints.begin(); it != slot.prompt.checkpoints.end(); ++it) {
            // prompt-cache ok: an iterator into the prompt checkpoints
            it->load_tgt(ctx_tgt, slot.id, HOST_FLAGS);
        }

        for (auto & cp : slot.prompt.checkpoints) {
            // prompt-cache forbidden-flag: a range-for element given the on-device flags
            cp.load_dft(ctx_tgt, slot.id, SPEC_FLAGS);
        }

        // prompt-cache ok: an element accessor
        slot.prompt.checkpoints.back().update_tgt(ctx_tgt, slot.id, 0);

        // not sites: slot.spec_ckpt.load_tgt(ctx_tgt, slot.id, 0);
        const char * text = "slot.spec_ckpt.load_tgt(ctx_tgt, slot.id, 0)";
        LOG_DBG("%s\n", text);
#if 0
        slot.spec_ckpt.load_tgt(ctx_tgt, slot.id, 0);
#endif
#if 1
        slot.spec_ckpt.update_tgt(ctx_tgt, slot.id, slot.spec_ckpt_flags); // ok: the live branch
#else
        slot.spec_ckpt.update_tgt(ctx_tgt, slot.id, 0);
#endif
    }

    void save(common_prompt_checkpoint & ckpt, server_slot & slot) {
        // unresolved for both rules: a parameter, bound by whoever calls save()
        ckpt.update_tgt(ctx_tgt, slot.id, slot.spec_ckpt_flags);
    }
};
