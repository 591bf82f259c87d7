"""The distribution's version, read from its installed metadata (pyproject.toml is
the one place it is written); ``0+unknown`` when run from a tree never installed."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("gradserve")
except PackageNotFoundError:  # pragma: no cover - a source tree without `pip install`
    __version__ = "0+unknown"
