"""``torch.signal``: its ``windows``."""

from . import windows as windows
