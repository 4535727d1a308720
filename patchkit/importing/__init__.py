"""Import: patches taken from files, mailboxes, folders, repositories and URLs into the queue,
checked against upstream before anything is written; `repair` rebuilds web-mangled ones.

sources.py reads every SOURCE kind into patch texts (one patch each, in order; fetch.py
downloads a URL); repair.py rebuilds a mangled one against upstream (`--repair`); mail.py
parses one (mail, DEP-3 or plain diff, read by patchkit.patchfile) and writes it as the queue's
git format-patch mail; run.py names the entries, refuses duplicates, applies the queue with them
at `--at` (in a scratch repository, nothing recorded), and only then writes the patch files and
`patches/series`.
"""
