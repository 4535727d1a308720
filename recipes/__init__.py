"""The build recipes patchkit ships, one YAML file per backend: installed as package data.

A regular package, not a namespace one, because setuptools' editable installs map a nested
namespace package (patchkit.recipes from this folder) to nothing.
"""
