"""The smoke model: it reads back with llama.cpp's own GGUF reader carrying every key and tensor
the mamba loader requires, in the loader's shapes, a vocabulary the server can tokenize, and the
same bytes for the same seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from patchkit.smoke.model import ModelInfo, write_model  # noqa: E402


def read(path: Path) -> tuple[dict[str, object], dict[str, object]]:
    """The file's metadata (without the reader's GGUF.* pseudo-fields) and tensors, by name."""
    reader = gguf.GGUFReader(path)
    fields = {name: field.contents() for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    return fields, {t.name: t for t in reader.tensors}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> ModelInfo:
    return write_model(tmp_path_factory.mktemp("model") / "target.gguf", seed=1)


def test_metadata_has_every_key_the_mamba_loader_requires(model: ModelInfo) -> None:
    fields, _ = read(model.path)
    assert tuple(fields) == model.keys
    assert fields["general.architecture"] == model.arch == "mamba"
    assert fields["general.name"]
    assert fields["mamba.embedding_length"] == model.n_embd
    assert fields["mamba.block_count"] == model.n_layer
    assert fields["mamba.context_length"] >= 512
    # llama.cpp's mamba loader throws unless d_inner is twice n_embd.
    assert fields["mamba.ssm.inner_size"] == 2 * model.n_embd
    for key in ("mamba.ssm.conv_kernel", "mamba.ssm.state_size", "mamba.ssm.time_step_rank"):
        assert fields[key] > 0
    assert 0 < fields["mamba.attention.layer_norm_rms_epsilon"] < 1e-3


def test_tensors_have_the_loaders_names_and_shapes(model: ModelInfo) -> None:
    fields, tensors = read(model.path)
    n_embd, n_vocab = model.n_embd, model.vocab_size
    d_inner, d_conv = fields["mamba.ssm.inner_size"], fields["mamba.ssm.conv_kernel"]
    d_state, dt_rank = fields["mamba.ssm.state_size"], fields["mamba.ssm.time_step_rank"]
    # ggml's dimension order, as in llama_model_mamba::load_arch_tensors
    expected = {"token_embd.weight": [n_embd, n_vocab], "output_norm.weight": [n_embd],
                "output.weight": [n_embd, n_vocab]}
    for i in range(model.n_layer):
        expected |= {
            f"blk.{i}.attn_norm.weight": [n_embd],
            f"blk.{i}.ssm_in.weight": [n_embd, 2 * d_inner],
            f"blk.{i}.ssm_conv1d.weight": [d_conv, d_inner],
            f"blk.{i}.ssm_conv1d.bias": [d_inner],
            f"blk.{i}.ssm_x.weight": [d_inner, dt_rank + 2 * d_state],
            f"blk.{i}.ssm_dt.weight": [dt_rank, d_inner],
            f"blk.{i}.ssm_dt.bias": [d_inner],
            f"blk.{i}.ssm_a": [d_state, d_inner],
            f"blk.{i}.ssm_d": [d_inner],
            f"blk.{i}.ssm_out.weight": [d_inner, n_embd],
        }
    assert {name: t.shape.tolist() for name, t in tensors.items()} == expected
    assert {t.tensor_type for t in tensors.values()} == {gguf.GGMLQuantizationType.F32}
    assert all(np.isfinite(t.data).all() for t in tensors.values())
    # A decaying recurrent state: every A is negative.
    assert all((tensors[f"blk.{i}.ssm_a"].data < 0).all() for i in range(model.n_layer))


def test_vocabulary_tokenizes_ascii_prompts_and_names_bos_and_eos(model: ModelInfo) -> None:
    fields, _ = read(model.path)
    tokens, types = fields["tokenizer.ggml.tokens"], fields["tokenizer.ggml.token_type"]
    assert fields["tokenizer.ggml.model"] == "llama"
    assert len(tokens) == len(types) == len(fields["tokenizer.ggml.scores"]) == model.vocab_size
    for key, text in (("bos", "<s>"), ("eos", "</s>")):
        token_id = fields[f"tokenizer.ggml.{key}_token_id"]
        assert tokens[token_id] == text
        assert types[token_id] == gguf.TokenType.CONTROL
    # SentencePiece writes a space as "▁" and falls back to "<0xNN>" byte tokens for characters
    # that are not pieces: every ASCII character must be one or the other.
    pieces = set(tokens)
    for char in map(chr, range(128)):
        assert ("▁" if char == " " else char) in pieces or f"<0x{ord(char):02X}>" in pieces, repr(char)
    assert len(pieces) == len(tokens)


def test_a_seed_always_writes_the_same_bytes_and_another_seed_other_weights(tmp_path: Path) -> None:
    first = write_model(tmp_path / "a.gguf", seed=7).path.read_bytes()
    again = write_model(tmp_path / "b.gguf", seed=7).path.read_bytes()
    draft = write_model(tmp_path / "draft.gguf", seed=8)
    assert first == again
    _, target_tensors = read(tmp_path / "a.gguf")
    draft_fields, draft_tensors = read(draft.path)
    assert not np.array_equal(target_tensors["token_embd.weight"].data, draft_tensors["token_embd.weight"].data)
    # The draft must share the target's vocabulary, or the server refuses the pair.
    assert draft_fields["tokenizer.ggml.tokens"] == read(tmp_path / "a.gguf")[0]["tokenizer.ggml.tokens"]


def test_the_file_is_small(model: ModelInfo) -> None:
    assert model.path.stat().st_size < 2 * 1024 * 1024


def test_an_unknown_architecture_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="llama"):
        write_model(tmp_path / "x.gguf", seed=1, arch="llama")
    assert not (tmp_path / "x.gguf").exists()
