"""``torch.masked`` (dense tensors): the registered ``masked_<name>`` ops under
torch's names (``engine.masked.sum(x, 1, mask=m)``)."""

from __future__ import annotations

from .registry import OPS

_PREFIX = "masked_"
_NAMES = [n.removeprefix(_PREFIX) for n in OPS if n.startswith(_PREFIX)]
_NAMES = [n for n in _NAMES if n not in ("fill", "scatter", "select")]
globals().update({name: OPS[_PREFIX + name].fn for name in _NAMES})
__all__ = sorted(_NAMES)
