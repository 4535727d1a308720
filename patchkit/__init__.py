"""patchkit: carry a patch queue on top of a fast-moving upstream, safely."""

__version__ = "0.1.0"
