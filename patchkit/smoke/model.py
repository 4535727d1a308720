"""The model the runtime smoke test serves: a tiny random-weight GGUF patchkit writes itself.

llama-server only takes speculative checkpoints when the model's memory cannot roll back part of
a sequence, so the model is recurrent (mamba). The same function with another seed writes the
draft model: same vocabulary, different weights, so most drafts are rejected and the restore
paths run. Nothing is downloaded; a seed always gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

ARCHITECTURES = ("mamba",)

# Small enough that a 2-core CPU decodes hundreds of tokens a second and the file stays far
# below 2 MB; d_inner = 2 * n_embd because llama.cpp's mamba loader accepts no other expansion.
_N_EMBD = 64
_N_LAYER = 2
_D_INNER = 2 * _N_EMBD
_D_CONV = 4
_D_STATE = 16
_DT_RANK = _N_EMBD // 16  # mamba's own rule: ceil(n_embd / 16)
_N_CTX_TRAIN = 4096
_RMS_EPS = 1e-5
_WEIGHT_STD = 0.02  # small random weights keep activations, and so the logits, finite

_UNK, _BOS, _EOS = 0, 1, 2


@dataclass(frozen=True)
class ModelInfo:
    path: Path
    arch: str
    seed: int
    vocab_size: int
    n_layer: int
    n_embd: int
    keys: tuple[str, ...]  # the metadata keys written, in file order


def write_model(path: Path, *, seed: int, arch: str = "mamba") -> ModelInfo:
    """Write a random-weight model of `arch` to `path`; the same seed writes the same bytes."""
    if arch not in ARCHITECTURES:
        raise ValueError(f"no smoke model for architecture {arch!r} (known: {', '.join(ARCHITECTURES)})")
    tokens, types = _vocabulary()
    writer = gguf.GGUFWriter(path, arch)
    writer.add_name(f"patchkit smoke {arch} seed {seed}")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(_N_CTX_TRAIN)
    writer.add_embedding_length(_N_EMBD)
    writer.add_block_count(_N_LAYER)
    writer.add_ssm_conv_kernel(_D_CONV)
    writer.add_ssm_inner_size(_D_INNER)
    writer.add_ssm_state_size(_D_STATE)
    writer.add_ssm_time_step_rank(_DT_RANK)
    writer.add_layer_norm_rms_eps(_RMS_EPS)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types(types)
    writer.add_unk_token_id(_UNK)
    writer.add_bos_token_id(_BOS)
    writer.add_eos_token_id(_EOS)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    for name, array in _mamba_tensors(np.random.default_rng(seed), len(tokens)):
        writer.add_tensor(name, array)
    keys = tuple(writer.kv_data[0])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return ModelInfo(path=path, arch=arch, seed=seed, vocab_size=len(tokens), n_layer=_N_LAYER,
                     n_embd=_N_EMBD, keys=keys)


def _vocabulary() -> tuple[list[str], list[int]]:
    """A SentencePiece ("llama") vocabulary in which every ASCII text tokenizes.

    Printable characters are tokens of their own, "▁" stands for the space (SentencePiece
    escapes spaces), and the other ASCII bytes are byte tokens; with no multi-character pieces
    there is nothing to merge, so the scores are all equal. Every piece the model can generate
    is ASCII, so the server's output is always valid UTF-8.
    """
    tokens = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for byte in range(128):
        if byte == 0x20:
            tokens.append("▁")
            types.append(gguf.TokenType.NORMAL)
        elif chr(byte).isprintable():
            tokens.append(chr(byte))
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(f"<0x{byte:02X}>")
            types.append(gguf.TokenType.BYTE)
    return tokens, [int(t) for t in types]


def _mamba_tensors(rng: np.random.Generator, n_vocab: int) -> list[tuple[str, np.ndarray]]:
    """Every tensor llama.cpp's mamba loader requires, F32; numpy shapes are ggml's reversed.

    The output projection is a tensor of its own: with weights this small the hidden state is
    mostly the current token's embedding, so a projection tied to the embedding would make every
    seed repeat its input token, and the draft would agree with the target on every token.
    """

    def random(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * _WEIGHT_STD).astype(np.float32)

    def name(tensor: gguf.MODEL_TENSOR, suffix: str | None, layer: int | None = None) -> str:
        base = gguf.TENSOR_NAMES[tensor].format(bid=layer)
        return f"{base}.{suffix}" if suffix else base

    ones = np.ones(_N_EMBD, dtype=np.float32)
    tensors = [
        (name(gguf.MODEL_TENSOR.TOKEN_EMBD, "weight"), random(n_vocab, _N_EMBD)),
        (name(gguf.MODEL_TENSOR.OUTPUT_NORM, "weight"), ones),
        (name(gguf.MODEL_TENSOR.OUTPUT, "weight"), random(n_vocab, _N_EMBD)),
    ]
    # Mamba's own initialisation of A (stored as -exp(A_log)): every state decays, at rates
    # 1..d_state, so the recurrent state stays bounded however long the sequence.
    ssm_a = -np.tile(np.arange(1, _D_STATE + 1, dtype=np.float32), (_D_INNER, 1))
    for i in range(_N_LAYER):
        tensors += [
            (name(gguf.MODEL_TENSOR.ATTN_NORM, "weight", i), ones),
            (name(gguf.MODEL_TENSOR.SSM_IN, "weight", i), random(2 * _D_INNER, _N_EMBD)),
            (name(gguf.MODEL_TENSOR.SSM_CONV1D, "weight", i), random(_D_INNER, _D_CONV)),
            (name(gguf.MODEL_TENSOR.SSM_CONV1D, "bias", i), random(_D_INNER)),
            (name(gguf.MODEL_TENSOR.SSM_X, "weight", i), random(_DT_RANK + 2 * _D_STATE, _D_INNER)),
            (name(gguf.MODEL_TENSOR.SSM_DT, "weight", i), random(_D_INNER, _DT_RANK)),
            (name(gguf.MODEL_TENSOR.SSM_DT, "bias", i), random(_D_INNER)),
            (name(gguf.MODEL_TENSOR.SSM_A, None, i), ssm_a),
            (name(gguf.MODEL_TENSOR.SSM_D, None, i), np.ones(_D_INNER, dtype=np.float32)),
            (name(gguf.MODEL_TENSOR.SSM_OUT, "weight", i), random(_N_EMBD, _D_INNER)),
        ]
    return tensors
