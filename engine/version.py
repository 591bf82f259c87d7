"""The distribution's version (``gradcore.version``, shared with the client)."""

from gradcore.version import __version__

__all__ = ["__version__"]
