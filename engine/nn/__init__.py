"""``torch.nn``'s functional half: ``engine.nn.functional`` (as ``torch.nn.functional``)."""

from . import functional

__all__ = ["functional"]
