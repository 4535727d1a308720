"""The inputs the patch-format tests read: mails, headers and diffs with the shapes that each
reader of the patch format has to agree on (one set, so that two readers can be compared), and
the small format-patch mails the mail and import tests build."""

from __future__ import annotations

HEADER = """\
From 11bb66ecd9b5954a064ada8c51e46961fc9de4ab Mon Sep 17 00:00:00 2001
From: Ada Lovelace <ada@example.org>
Date: Mon, 28 Sep 2026 14:50:20 +0200
Subject: [PATCH] fix the thing
"""

# Five files: a plain change, a binary file, a quoted path, a hunk whose blank context line a
# mailer ate (no space left), a "\\ No newline" in the middle of a hunk and one at its end.
DIFF = """\
diff --git a/a.c b/a.c
index de980441c3ab03a8c07dda1ad27b8a11f39deb1e..7be73ce3c1b1cdaea86e8168dfee8575175953bf 100644
--- a/a.c
+++ b/a.c
@@ -1,3 +1,3 @@ int main()
 a
-b
+B
 c
diff --git a/b.bin b/b.bin
new file mode 100644
index 0000000000000000000000000000000000000000..eaf36c1daccfdf325514461cd1a2ffbc139b5464
GIT binary patch
literal 4
LcmZQzWMT#Y01f~L

literal 0
HcmV?d00001

diff --git "a/caf\\303\\251.md" "b/caf\\303\\251.md"
new file mode 100644
index 0000000000000000000000000000000000000000..587be6b4c3f93f93c489c0111bba5596147a26cb
--- /dev/null
+++ "b/caf\\303\\251.md"
@@ -0,0 +1 @@
+x
diff --git a/eaten.c b/eaten.c
index aedc0ee805b39ecb30b1cf7547a562f3300d8f4e..7b51e5b7d6f384544a266f6c7e9049389b4f7847 100644
--- a/eaten.c
+++ b/eaten.c
@@ -1,4 +1,4 @@
 one

 two
-three
+THREE
diff --git a/tail.txt b/tail.txt
index 1c1206e8bf4337e96dad9a6d139628852077558d..b25fa3fc473b6efd5ded03bcddbc4d37fc20674b 100644
--- a/tail.txt
+++ b/tail.txt
@@ -1 +1 @@
-last
\\ No newline at end of file
+last
diff --git a/end.txt b/end.txt
index 1111111..2222222 100644
--- a/end.txt
+++ b/end.txt
@@ -1 +1 @@
-x
+y
\\ No newline at end of file
"""

BODY = """\
Why the thing was broken.

Origin: vendor, https://example.org/fix
Reviewed-by: Ann Reviewer <ann@example.org>
Reviewed-by: Bo Reviewer <bo@example.org>
Forwarded: no
"""

# A normal git format-patch mail: stat, `---`, signature.
MAIL = f"""{HEADER}
{BODY}---
 a.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

{DIFF}-- 
2.39.5

"""

# A folded Subject, a trailer continued on the next line.
FOLDED = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Ada Lovelace <ada@example.org>
Date: Mon, 28 Sep 2026 14:50:20 +0200
Subject: [PATCH] a subject folded
 over two lines

Body.

Link: https://example.org/a
  /continued
Forwarded: no
---
""" + DIFF

# The last paragraph is prose with a colon in it: no trailer block.
PROSE_LAST = HEADER + """
Body.

From the docs:
Note: flags combine.
---
""" + DIFF

# A paragraph starting with "From " in the body.
FROM_PARAGRAPH = HEADER + """
Why:

From the docs, this is how it goes.

Forwarded: no
---
""" + DIFF

# A DEP-3 header before a plain diff (no `diff --git`).
DEP3 = """\
Description: fix the thing
 It was broken.
 .
 Now it is not.
Author: Ada Lovelace <ada@example.org>
Origin: upstream, https://example.org/fix
Bug-Debian: https://bugs.debian.org/1
Forwarded: not-needed
Last-Update: 2026-01-01
---
--- a/a.c
+++ b/a.c
@@ -1,3 +1,3 @@
 a
-b
+B
 c
"""

# A hunk cut short (its header counts four lines, three follow), then the next file.
SHORT = """\
diff --git a/a.c b/a.c
--- a/a.c
+++ b/a.c
@@ -1,4 +1,4 @@
 a
-b
+B
diff --git a/d.c b/d.c
--- a/d.c
+++ b/d.c
@@ -1 +1 @@
-d
+D
"""


README_DIFF = """\
diff --git a/README.md b/README.md
index 1111111..2222222 100644
--- a/README.md
+++ b/README.md
@@ -1,2 +1,3 @@
 # llama.cpp (synthetic)
+From here on, a line.
 
"""


def message(n: int, body: str = "") -> str:
    return (f"From {n:040x} Mon Sep 17 00:00:00 2001\nFrom: Ada Lovelace <ada@example.org>\n"
            f"Date: Mon, 28 Sep 2026 14:5{n}:20 +0200\nSubject: [PATCH {n}/3] change {n}\n\n{body}"
            f"---\n{README_DIFF.replace('a line', f'line {n}')}-- \n2.39.5\n\n")


HOSTILE_CONFIG = (
    ("diff.noprefix", "true"), ("diff.mnemonicPrefix", "true"), ("diff.context", "1"),
    ("diff.interHunkContext", "9"), ("diff.algorithm", "patience"), ("diff.suppressBlankEmpty", "true"),
    ("diff.renames", "false"), ("format.subjectPrefix", "HOSTILE"), ("format.numbered", "true"),
    ("format.signOff", "true"), ("format.headers", "X-Hostile: 1"), ("format.thread", "shallow"),
    ("format.signature", "hostile"), ("format.notes", "true"), ("format.useAutoBase", "true"),
    ("format.to", "list@example.org"), ("format.mboxrd", "true"), ("core.abbrev", "12"),
    ("format.encodeEmailHeaders", "false"), ("format.forceInBodyFrom", "true"), ("format.from", "true"),
)


def commit_repo(path, config=()):
    """A repository with two commits (the second changes, adds, renames and ends files in the
    shapes above); returns (first, second) commit ids. CONFIG goes into its own config."""
    from conftest import git_identity
    from patchkit import git

    git.run(["init", "--quiet", str(path)])
    for key, value in config:
        git.run(["config", key, value], cwd=path)
    lines = "".join(f"line {n}\n" for n in range(1, 21))
    (path / "a.c").write_text(lines.replace("line 2\n", "line 2\n\n"))
    (path / "tail.txt").write_text("last")
    (path / "moved.txt").write_text("".join(f"moved {n}\n" for n in range(12)))
    git.run(["add", "-A"], cwd=path)
    git.run(["commit", "--quiet", "-m", "base"], cwd=path, env=git_identity())
    first = git.run(["rev-parse", "HEAD"], cwd=path)
    (path / "a.c").write_text(lines.replace("line 2\n", "line 2\n\n").replace("line 4\n", "line four\n")
                              .replace("line 12\n", "line twelve\n"))
    (path / "tail.txt").write_text("last\n")
    (path / "b.bin").write_bytes(b"\0\1\2\3")
    (path / "caf\u00e9.md").write_text("x\n")
    git.run(["mv", "moved.txt", "renamed.txt"], cwd=path)
    git.run(["add", "-A"], cwd=path)
    message = ("fix the th\u00efng\n\nWhy it was broken.\n\nFrom the docs, a paragraph.\n\n"
               "Link: https://example.org/a\nForwarded: no\n")
    git.run(["commit", "--quiet", "-F", "-"], cwd=path, input=message,
            env=git_identity("Zo\u00eb Packager", "zoe@example.org", "1790600000 +0200"))
    return first, git.run(["rev-parse", "HEAD"], cwd=path)
