"""The nightly job: the night itself (`night.py`), bisect (which upstream commit broke or adopted each
patch) and refresh."""
