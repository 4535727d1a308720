"""The nightly CI run's parts: bisect (which upstream commit broke or adopted each patch)."""
