"""The actions the workflow uses, pinned to full commit ids: a tag can be moved to other code by
whoever controls the action's repository, a commit id cannot. The tag stays beside it in a
comment, for people and for Dependabot.

Pins as of 2026-07, read from each action's own repository (upload-artifact and download-artifact
are the ones llama.cpp's October workflows pin too).
"""

from __future__ import annotations

# action -> (commit, tag)
PINS: dict[str, tuple[str, str]] = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/cache/restore": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/cache/save": ("27d5ce7f107fe9357f9df03efb73ab90386fccae", "v5.0.5"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c", "v8.0.1"),
}
# Written after each pinned `uses:` line; the YAML writer cannot place comments itself.
TAG_COMMENT = "  # {}"


def uses(action: str) -> str:
    """The `uses:` value for ACTION: its pinned commit."""
    commit, _ = PINS[action]
    return f"{action}@{commit}"


def with_tags(text: str) -> str:
    """TEXT (the workflow's YAML) with each pinned action's tag in a comment after its line."""
    lines = []
    for line in text.splitlines(keepends=True):
        for action, (commit, tag) in PINS.items():
            if line.rstrip("\n").endswith(f"uses: {action}@{commit}"):
                line = line.rstrip("\n") + TAG_COMMENT.format(tag) + "\n"
                break
        lines.append(line)
    return "".join(lines)
