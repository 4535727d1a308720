"""The patch format: what a patch file is, read and written in one place.

- `mail`: a patch file's mail part: split from the diff, its header fields (folded, RFC 2047),
  the mbox it may come in, a DEP-3 header; a mail's Date: in git's form.
- `trailers`: the `Key: value` lines ending a message (git's trailers, DEP-3's fields).
- `diff`: where the diff starts and ends, the hunk header, the one hunk walker, quoted paths.
- `format_patch`: `git format-patch` with the one set of flags, whatever the repository's config.
- `series`: the quilt `series` file: read, insert into, write.

Nothing here knows the queue, the mirror or an apply: `patchkit.queue` builds each Patch as the
apply needs it on top of this, and import, refresh and export read and write through it.
"""
