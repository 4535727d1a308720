"""patchkit: carry a patch queue on top of a fast-moving upstream, safely."""

__version__ = "0.1.0"
# The distribution (pip install/uninstall, importlib.metadata); the command and the package stay patchkit.
DISTRIBUTION = "patchkit-queue"
