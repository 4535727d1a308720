"""The server runs and requests of the smoke test: bounded, deterministic, one per path to reach.

Speculative checkpoints are taken when a draft is proposed for a model whose memory cannot roll
back (the tiny recurrent models), and restored when the target rejects part of the draft; the
prompt-cache checkpoint is taken a few tokens before the end of a prompt and restored when the
next prompt shares a prefix that ends before the cached tokens do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServerRun:
    """One llama-server process: its extra arguments and the /completion bodies sent, in order."""

    name: str
    args: tuple[str, ...]
    requests: tuple[dict, ...]


# One slot, so every request lands in the same cache; a small context and a fixed seed.
_COMMON = ("-np", "1", "-c", "512", "-t", "2", "--seed", "42", "--no-warmup")

# Token ids, not text: the requests do not depend on the tokenizer the model writer chose (ids
# above the usual special tokens, below any vocabulary of 32 or more).
_PERIOD = tuple(range(10, 18))
_REPEATED = _PERIOD * 6  # repetition makes the n-gram lookup propose drafts
# Same prefix, other last two tokens: the cached sequence cannot be cut back to the common
# prefix, so the checkpoint taken four tokens before the end of the first prompt is restored.
_DIVERGING = _REPEATED[:-2] + (20, 21)


def _completion(prompt: tuple[int, ...]) -> dict:
    # Greedy and seeded; ignore_eos so a random model that samples EOS still makes every step.
    return {"prompt": list(prompt), "n_predict": 32, "ignore_eos": True, "cache_prompt": True,
            "id_slot": 0, "seed": 42, "temperature": 0.0, "top_k": 1}


_REQUESTS = tuple(_completion(p) for p in (_REPEATED, _DIVERGING, _REPEATED))


def scenario(draft: Path) -> list[ServerRun]:
    """The runs: n-gram drafts (no draft context), then DRAFT as the draft model (other weights
    than the target's, so its drafts are rejected and the draft context restored too). The
    target model is not an argument of a run: the driver passes it as `-m`."""
    return [
        ServerRun("ngram", _COMMON + ("--spec-type", "ngram-simple",
                                      "--spec-ngram-simple-size-n", "1",
                                      "--spec-ngram-simple-size-m", "4"), _REQUESTS),
        ServerRun("draft", _COMMON + ("--spec-type", "draft-simple", "--model-draft", str(draft),
                                      "--spec-draft-n-max", "4", "--spec-draft-n-min", "0"),
                  _REQUESTS),
    ]
