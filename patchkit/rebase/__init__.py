"""`patchkit rebase`: the human loop around a patch that needs a person (run.py), its state on
disk and the snapshot `--abort` restores (state.py), the patch written into the checkout as far as
it goes (markers.py), and what skip and drop do to the series (series.py)."""
