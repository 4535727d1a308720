"""The checked-out branch as the editing surface: `record` turns its commits back into the queue,
`absorb` folds uncommitted edits into the commits that own those lines first."""
