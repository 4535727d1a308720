"""Upstream's code and text are untrusted (patchkit.untrusted): a build runs without the runner's
command files and tokens; nothing patchkit prints under GitHub Actions starts a workflow
command; upstream's text in Markdown is text. (A hostile upstream's build: tests/backends/test_build_cmake.py;
a hostile night through `ci summary`: tests/ci/test_summary.py.)"""

from __future__ import annotations

import io
import re

import pytest

from patchkit.untrusted import CommandGuard, environment, md_block, md_code, md_text

PULLS = "https://github.com/ggml-org/llama.cpp/pull/"
# A line GitHub's runner would execute: `::` or `##[` after leading whitespace (it trims \r too).
WORKFLOW_COMMAND = re.compile(r"^[ \t\r]*(::|##\[)", re.M)


def test_the_environment_loses_the_runners_command_files_and_tokens():
    base = {"PATH": "/bin", "HOME": "/h", "CUDAARCHS": "89-real", "GITHUB_ENV": "/e", "GITHUB_OUTPUT": "/o",
            "GITHUB_PATH": "/p", "GITHUB_STATE": "/s", "GITHUB_STEP_SUMMARY": "/m", "ACTIONS_RUNTIME_TOKEN": "t",
            "ACTIONS_ID_TOKEN_REQUEST_URL": "u", "GITHUB_TOKEN": "g", "PATCHKIT_TOKEN": "p", "GITHUB_SHA": "abc"}
    assert environment(base) == {"PATH": "/bin", "HOME": "/h", "CUDAARCHS": "89-real", "GITHUB_SHA": "abc"}



# Credentials by their conventional names, and what a build reads that looks close to them.
CREDENTIALS = {"GH_TOKEN": "1", "GH_ENTERPRISE_TOKEN": "2", "GH_HOST": "3", "AWS_SECRET_ACCESS_KEY": "4",
               "OPENAI_API_KEY": "5", "AZURE_CLIENT_SECRET": "6", "TWINE_PASSWORD": "7", "FTP_PASS": "8",
               "DB_PASSWD": "9", "GOOGLE_APPLICATION_CREDENTIALS": "10", "GITHUB_PAT": "11", "HF_TOKEN": "12",
               "github_token": "13", "Api_Key": "14", "TOKEN": "15", "SECRET": "16", "SSH_AUTH_SOCK": "/s.sock",
               "GPG_AGENT_INFO": "/g.sock", "GPG_PASSPHRASE": "17", "MAVEN_GPG_PASSPHRASE": "18", "OPENAI_APIKEY": "19",
               "DB_PWD": "20", "NPM_CONFIG__AUTH": "21", "GITHUB_TOKEN_RELEASE": "22", "SLACK_WEBHOOK_URL": "23",
               "INPUT_GITHUB-TOKEN": "24"}
BUILD = {"SCCACHE_S3_KEY_PREFIX": "p", "CCACHE_DIR": "/c", "KEYBOARD": "us", "PATH": "/bin", "CUDA_PATH": "/cuda",
         "MONKEY": "m", "PASSES": "2", "RUNNER_TEMP": "/home/runner/work/_temp", "GITHUB_WORKSPACE": "/w",
         "TOKENIZER_DIR": "/t", "VULKAN_SDK": "/v", "PWD": "/w/llama.cpp", "OLDPWD": "/w", "KEY": "k",
         "CMAKE_PREFIX_PATH": "/p", "HIP_PATH": "/opt/rocm"}


def test_the_environment_loses_credentials_by_their_last_word_and_keeps_a_builds_names():
    assert environment({**CREDENTIALS, **BUILD}) == BUILD


@pytest.mark.parametrize("writes", [
    ["::add-mask::secret\n"],
    ["  ::error file=x,line=1::pwned\n"],
    [":", ":stop-commands::tok\n"],  # split across writes
    ["ok\r::warning::", "after a carriage return\n"],
    ["##[group]legacy\n"],
    ["#", "#[error]split\n"],
    [":"],  # the start of a line, flushed as it is
])
def test_the_guard_neutralises_every_workflow_command(writes):
    out = io.StringIO()
    guard = CommandGuard(out)
    for text in writes:
        guard.write(text)
    guard.flush()
    assert not WORKFLOW_COMMAND.search(out.getvalue()), out.getvalue()
    # Only guarded, not lost: the text is all there.
    assert out.getvalue().replace("| ", "") == "".join(writes)


def test_the_guard_leaves_ordinary_lines_alone():
    out = io.StringIO()
    guard = CommandGuard(out)
    for text in ("building ggml::cpu\n", "[3/7] ", "cc -c x.c\n", "std::vector ok\n", "#include <x>\n"):
        guard.write(text)
    guard.flush()
    assert out.getvalue() == "building ggml::cpu\n[3/7] cc -c x.c\nstd::vector ok\n#include <x>\n"


def test_upstreams_text_in_markdown_is_text():
    subject = ('server : fix <img src=x onerror=alert(1)> for @ggerganov, see https://evil.example/x '
               'and www.evil.example [click](javascript:alert) <!-- patchkit:patch=other.patch --> (#12345)')
    shown = md_text(subject, PULLS)
    assert "<" not in shown and "<!--" not in shown and "patchkit:patch" in shown  # as text
    assert "@ggerganov" not in shown and "@\u200bggerganov" in shown
    link = f"[#12345]({PULLS}12345)"  # the one link: upstream's pull request
    assert shown.endswith(f"({link})")
    shown = shown.replace(link, "")
    assert "https://" not in shown and "www." not in shown and "[click](" not in shown
    # Without upstream's pull request page, #N links nowhere (not to the fork's own issue N).
    assert "#12345" not in md_text("fix (#12345)") and "#\u200b12345" in md_text("fix (#12345)")
    assert md_code("a ``b`` c") == "```a ``b`` c```"
    block = md_block("```\n@x <b>\n```")
    assert block.startswith("````\n") and block.endswith("\n````\n")


def test_upstream_text_with_nul_and_a_closing_fence_stays_text():
    from patchkit.untrusted import md_block, md_text

    assert md_text("a \x000\x00 b #1") == "a 0 b #\u200b1"
    block = md_block(" ```\n@someone", "diff")
    assert block.startswith("````diff\n") and block.endswith("\n````\n")
