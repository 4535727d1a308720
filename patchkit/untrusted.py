"""Upstream's code and text are untrusted input: in CI, patchkit holds a write token next to them.

- `environment()`: what upstream's code (its CMake files, compilers, llama-server) runs with: the
  runner's command files (GITHUB_ENV, GITHUB_OUTPUT, ...: a line written there sets a variable,
  a PATH entry or an output of the job) and credentials taken out.
- `CommandGuard`: GitHub's runner executes any output line that starts with `::` or `##[` (after
  leading whitespace) as a workflow command (`::add-mask::`, `::stop-commands::`, `::error`).
  patchkit makes none of its own, so under GitHub Actions every such line it prints (a compiler's
  message, a commit subject, a server's error) is shown with `| ` before it, as text.
- `md_text`, `md_code`, `md_block`: upstream's text in Markdown (step summary, report.md, issues,
  the pull request) shown as text: no HTML (so no `<!-- patchkit:... -->` marker of ours either),
  no `@mention` (which notifies under the token owner's name), no autolink, and `#N` linked to
  upstream's pull request rather than the fork's own issue N. Every other issue reference
  (`org/repo#N`, `GH-N`) is broken: GitHub would link it and mark the issue it names as mentioned.
"""

from __future__ import annotations

import io
import os
import re
from typing import Mapping, TextIO

# The runner's files a step appends to, to set the job's environment, PATH, outputs, state and summary.
_COMMAND_FILES = {"GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"}
_AGENTS = {"SSH_AUTH_SOCK", "GPG_AGENT_INFO"}  # a key by reach, through the agent's socket; no build needs one
# ACTIONS_RUNTIME_TOKEN, ACTIONS_ID_TOKEN_REQUEST_*, ACTIONS_CACHE_URL, ...: the runner's own services;
# GH_*: the gh command's (GH_TOKEN, GH_ENTERPRISE_TOKEN, GH_HOST, ...).
_CREDENTIAL_PREFIXES = ("ACTIONS_", "GH_")
# A credential's conventional words. Anywhere in the name (split at `_` and `-`: a workflow input's
# INPUT_GITHUB-TOKEN keeps its hyphen): GITHUB_TOKEN, GITHUB_TOKEN_RELEASE, AZURE_CLIENT_SECRET,
# TWINE_PASSWORD, GPG_PASSPHRASE, GOOGLE_APPLICATION_CREDENTIALS, OPENAI_APIKEY, SLACK_WEBHOOK_URL.
# As the last word only, where the word alone names other things too: AWS_SECRET_ACCESS_KEY,
# OPENAI_API_KEY, FTP_PASS, GITHUB_PAT, NPM_CONFIG__AUTH, DB_PWD (the shell's own PWD stays). No
# variable a build of llama.cpp reads has one (CMake's, the compilers', CUDA's, Vulkan's, oneAPI's,
# ccache's and sccache's do not: SCCACHE_S3_KEY_PREFIX ends in PREFIX), and a recipe's `environment:`
# is set after this, so a build that needs one names it there.
_CREDENTIAL_WORDS = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIALS", "APIKEY", "WEBHOOK"}
_CREDENTIAL_LAST_WORDS = {"KEY", "PASS", "PAT", "AUTH", "PWD"}


def is_credential(name: str) -> bool:
    """Whether NAME is a runner command file's, an ssh or gpg agent's, the runner's services',
    gh's, or a credential's by its words (any case: Windows reads names so, and `github_token` is
    one too)."""
    upper = name.upper()
    words = [word for word in re.split(r"[_-]", upper) if word]
    return (upper in _COMMAND_FILES or upper in _AGENTS or upper.startswith(_CREDENTIAL_PREFIXES)
            or not _CREDENTIAL_WORDS.isdisjoint(words)
            or (len(words) > 1 and words[-1] in _CREDENTIAL_LAST_WORDS))


def environment(base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """BASE without what upstream's code must not reach (`is_credential`): a build needs none.

    RUNNER_TEMP stays. The runner's command files live in RUNNER_TEMP/_runner_file_commands, but
    taking the name away hides nothing: the folder is a fixed path beside the workspace the build
    runs in (/home/runner/work/_temp on a hosted runner), and setup actions and tools use
    RUNNER_TEMP as their scratch space. The fence there is the workflow's: a command file changes
    only its own job, and the jobs that run upstream's code hold no token (patchkit/ci/workflow.py)."""
    return {name: value for name, value in base.items() if not is_credential(name)}


_COMMAND_START = ("::", "##[")
_GUARD = "| "


def neutralise(line: str) -> str:
    """LINE, with `| ` before it where the runner would take it for a workflow command."""
    return _GUARD + line if line.lstrip().startswith(_COMMAND_START) else line


class CommandGuard(io.TextIOBase):
    """A text stream that writes to STREAM every line neutralised. The start of a line is held
    back while it could still become `::` or `##[` (a write may end inside it)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self._stream = stream
        self._head: str | None = ""  # the current line's start, not written yet; None once written

    def write(self, text: str) -> int:
        out = []
        # \r starts a line for the runner too: it trims it away before looking for `::`.
        for piece in re.split(r"(?<=[\r\n])", text):
            if not piece:
                continue
            if self._head is None:
                out.append(piece)
            else:
                head = self._head + piece
                undecided = head.lstrip(" \t")
                if not head.endswith(("\r", "\n")) and any(start.startswith(undecided) for start in _COMMAND_START):
                    self._head = head
                    continue
                out.append(neutralise(head))
                self._head = None
            if piece.endswith(("\r", "\n")):
                self._head = ""
        self._stream.write("".join(out))
        return len(text)

    def flush(self) -> None:
        if self._head:  # a line's start, written now: guarded, since the rest could make it a command
            self._stream.write(_GUARD + self._head)
            self._head = None
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding

    def writable(self) -> bool:
        return True


def guard_streams(environ: Mapping[str, str] = os.environ) -> None:
    """Under GitHub Actions, sys.stdout and sys.stderr through a CommandGuard."""
    import sys

    if environ.get("GITHUB_ACTIONS") == "true":
        sys.stdout = CommandGuard(sys.stdout)
        sys.stderr = CommandGuard(sys.stderr)


# -- Markdown ---------------------------------------------------------------------------------

# What makes inline Markdown of text (emphasis, code, links, strikethrough); `|` is md_table's.
_ESCAPED = re.compile(r"([\\`*_\[\]~])")
# A heading, quote, list or rule where a line starts (`0001-fix.patch` starts none).
_BLOCK_START = re.compile(r"^(\d+[.)]|[#>+=-])")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"(?<![\w/])#(\d+)\b")
# The references left once the `#N` are placeholders: `org/repo#N`, `org#N`, and `GH-N` (any case).
_OTHER_REFERENCE = re.compile(r"(#|(?i:\bgh-))(?=\d)")
_ZWSP = "\u200b"  # a zero-width space: breaks a mention or an autolink, shows nothing


def md_text(text: str, pulls: str | None = None) -> str:
    """TEXT as inline Markdown text. PULLS: upstream's pull request URL prefix
    (`https://github.com/ORG/REPO/pull/`), where a `#N` in it links; without one, `#N` links nowhere."""
    # One line (a table cell, a list item); NUL is the placeholders' delimiter below.
    text = " ".join(str(text).replace("\x00", "").split())
    refs: list[str] = []

    def reference(m: re.Match[str]) -> str:
        refs.append(f"[#{m.group(1)}]({pulls}{m.group(1)})" if pulls else f"#{_ZWSP}{m.group(1)}")
        return f"\x00{len(refs) - 1}\x00"

    text = _REFERENCE.sub(reference, text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _BLOCK_START.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], _ESCAPED.sub(r"\\\1", text))
    text = _MENTION.sub("@" + _ZWSP, text)
    text = _OTHER_REFERENCE.sub(lambda m: m.group(1) + _ZWSP, text)
    # Autolinks: GitHub links bare URLs and www. names; a zero-width space after the scheme stops it.
    text = re.sub(r"(?i)\b(https?|ftp|mailto|file)(:)", lambda m: m.group(1) + _ZWSP + m.group(2), text)
    text = re.sub(r"(?i)\bwww\.", "www" + _ZWSP + ".", text)
    return re.sub("\x00(\\d+)\x00", lambda m: refs[int(m.group(1))], text)


def md_code(text: str) -> str:
    """TEXT as an inline code span (on one line): nothing in it renders."""
    text = " ".join(str(text).split())
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_block(text: str, language: str = "") -> str:
    """TEXT as a fenced code block, whose fence no line in it can close."""
    longest = max((len(run) for run in re.findall(r"^\s*(`{3,}|~{3,})", text, re.M)), default=2)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}\n"
