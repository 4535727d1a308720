"""An upstream commit as a maintainer reads it in a finding: id, subject, author, date, and its
web and pull request links. The nightly's bisect and the drift blame name commits this way."""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchkit import git
from patchkit.upstream import Mirror

_PULL = re.compile(r"\(#(\d+)\)\s*$")
_WEB = re.compile(r"^https://([^/@]+)/([^/]+)/([^/]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class Culprit:
    commit: str  # full id
    subject: str
    author: str  # "Name <email>"
    date: str  # committer date, ISO 8601: when it entered upstream's history
    pull: int | None  # from a "(#NNNN)" at the end of the subject
    url: str | None  # <upstream web url>/commit/<id>; None when upstream is not a web host
    pull_url: str | None  # <upstream web url>/pull/NNNN

    @property
    def pulls(self) -> str | None:
        """Upstream's pull request URLs without the number, for a `#N` in its subject."""
        return self.url.rsplit("/commit/", 1)[0] + "/pull/" if self.url else None


def read(mirror: Mirror, commit: str) -> Culprit:
    fields = git.run(["show", "-s", "--format=%H%x00%s%x00%an <%ae>%x00%cI", commit], cwd=mirror.path)
    full, subject, author, date = fields.split("\0")
    match = _PULL.search(subject)
    pull = int(match.group(1)) if match else None
    web = web_url(mirror.url)
    return Culprit(full, subject, author, date, pull, f"{web}/commit/{full}" if web else None,
                   f"{web}/pull/{pull}" if web and pull else None)


def web_url(url: str) -> str | None:
    """The web page of an upstream fetched over https from a host/owner/repo URL (GitHub,
    GitHub Enterprise, Gitea, Forgejo): the URL without `.git`; None for paths, ssh and others."""
    match = _WEB.match(url)
    return f"https://{match.group(1)}/{match.group(2)}/{match.group(3)}" if match else None
