"""For packagers: the queue exported in each distribution's patch format, and reproducible patched
source tarballs, both from the queue as it applies at one upstream commit."""
