"""``torch.signal.windows`` over the registered ``window_<name>`` ops."""

from __future__ import annotations

from ..registry import OPS

_PREFIX = "window_"
_NAMES = [n.removeprefix(_PREFIX) for n in OPS if n.startswith(_PREFIX)]
globals().update({name: OPS[_PREFIX + name].fn for name in _NAMES})
__all__ = sorted(_NAMES)
