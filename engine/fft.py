"""``torch.fft`` over the registered ops: the shifts and the transforms (ops ``fft_fft``,
``fft_rfft``, ... as aten names them), which take and give complex tensors."""

from __future__ import annotations

from .registry import OPS

_SHIFTS = ["fftshift", "ifftshift"]
_TRANSFORMS = [
    f"{kind}{suffix}"
    for suffix in ("", "2", "n")
    for kind in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
]
globals().update({name: OPS[name].fn for name in _SHIFTS})
globals().update({name: OPS[f"fft_{name}"].fn for name in _TRANSFORMS})
__all__ = [*_SHIFTS, *_TRANSFORMS]
