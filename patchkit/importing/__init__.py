"""Import: patches taken from files, mailboxes, folders, repositories and URLs into the queue,
checked against upstream before anything is written; `repair` rebuilds web-mangled ones."""
