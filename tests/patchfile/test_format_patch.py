"""git format-patch, one way: the same mail whatever config the repository or the user has.
(The exact bytes, and a hostile repository config: tests/patchfile/test_characterization.py.)"""

from __future__ import annotations

import pytest

from conftest import git_identity
from patch_samples import HOSTILE_CONFIG, commit_repo
from patchkit import git
from patchkit.patchfile.format_patch import format_commit, join


def test_the_mail_is_message_separator_diff(tmp_path):
    _, commit = commit_repo(tmp_path / "repo")
    message, diff = format_commit(tmp_path / "repo", commit)
    assert message.startswith("From 0000000000000000000000000000000000000000 ") and message.endswith("Forwarded: no")
    assert diff.startswith("diff --git a/a.c b/a.c\n") and diff.endswith("+last\n")
    assert join(message, diff) == f"{message}\n---\n{diff}"


def test_an_empty_commit_has_no_diff(tmp_path):
    repo = tmp_path / "repo"
    commit_repo(repo)
    git.run(["commit", "--quiet", "--allow-empty", "-m", "nothing"], cwd=repo, env=git_identity())
    assert format_commit(repo, "HEAD") == ("", "")
    message, diff = format_commit(repo, "HEAD", allow_empty=True)
    assert message.endswith("Subject: [PATCH] nothing\n") and diff == ""


def test_a_message_without_a_body_keeps_the_empty_line_that_ends_the_header(tmp_path):
    # git format-patch writes one there (before its stat); without it, `---` would be read as a header line.
    import email
    import email.policy

    repo = tmp_path / "repo"
    commit_repo(repo)
    (repo / "a.c").write_text("changed\n")
    git.run(["commit", "--quiet", "-am", "no body"], cwd=repo, env=git_identity())
    mail = join(*format_commit(repo, "HEAD"))
    assert "Subject: [PATCH] no body\n\n---\ndiff --git " in mail
    parsed = email.message_from_string(mail, policy=email.policy.default)
    assert parsed.defects == [] and parsed["Subject"] == "[PATCH] no body"
    assert parsed.get_content().startswith("---\ndiff --git ")


def test_the_users_config_is_not_read_either(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    _, commit = commit_repo(repo)
    clean = format_commit(repo, commit)
    hostile = tmp_path / "gitconfig"
    hostile.write_text("".join(f"[{key.split('.')[0]}]\n\t{key.split('.')[1]} = {value}\n" for key, value in HOSTILE_CONFIG))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(hostile))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert format_commit(repo, commit) == clean


@pytest.mark.parametrize("key,value", HOSTILE_CONFIG)
def test_no_single_repository_setting_changes_the_mail(tmp_path, key, value):
    repo = tmp_path / "repo"
    _, commit = commit_repo(repo)
    clean = format_commit(repo, commit)
    git.run(["config", key, value], cwd=repo)
    assert format_commit(repo, commit) == clean
