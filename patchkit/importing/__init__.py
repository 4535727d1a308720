"""Import: patches taken from files, mailboxes, folders, repositories and URLs into the queue,
checked against upstream before anything is written; `repair` rebuilds web-mangled ones.

sources.py reads every SOURCE kind into pieces (one patch's text each, in order; fetch.py
downloads a URL); repair.py rebuilds a mangled piece against upstream (`--repair`); mail.py
parses a piece (mail, DEP-3 or plain diff) and writes it as the queue's git format-patch mail;
admit.py names the entries, refuses duplicates, applies the queue with them at `--at` in a scratch
folder, and only then writes the patch files and `patches/series`.
"""
