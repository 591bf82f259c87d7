"""``torch.fft`` over the registered ops: its real-valued functions (the shifts). The
transforms need complex tensors, which the engine does not have."""

from __future__ import annotations

from .registry import OPS

_NAMES = ["fftshift", "ifftshift"]
globals().update({name: OPS[name].fn for name in _NAMES})
__all__ = list(_NAMES)
