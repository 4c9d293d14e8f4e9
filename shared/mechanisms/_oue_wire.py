"""OUE reports on the wire: k bits packed into ceil(k/8) bytes, least significant bit first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from deniable.shared.mechanisms._parameters import check_options

__all__ = ["decode_oue_bits", "encode_oue_bits"]


def encode_oue_bits(bits: ArrayLike) -> bytes:
    """Pack one OUE report's k bits: bit v is bit (v mod 8) of byte v // 8; padding is 0.

    Example:
        >>> encode_oue_bits([True, False, True, False, False, False, False, False, True])
        b'\\x05\\x01'
    """
    array = np.asarray(bits)
    if array.ndim != 1 or array.dtype != np.bool_:
        raise ValueError(
            f"bits must be a 1-dimensional boolean array, got {array.dtype} {array.shape}"
        )
    check_options(array.size)
    return np.packbits(array, bitorder="little").tobytes()


def decode_oue_bits(payloads: Sequence[bytes], k: int) -> NDArray[np.bool_]:
    """Unpack OUE reports into an (m, k) boolean array, validating every payload.

    Raises:
        ValueError: a payload has the wrong length or a padding bit set (naming the report).

    Example:
        >>> decode_oue_bits([b"\\x05\\x01"], 9).astype(int).tolist()
        [[1, 0, 1, 0, 0, 0, 0, 0, 1]]
    """
    count = check_options(k)
    width = (count + 7) // 8
    for index, payload in enumerate(payloads):
        if not isinstance(payload, bytes) or len(payload) != width:
            size = len(payload) if isinstance(payload, bytes) else type(payload).__name__
            raise ValueError(f"OUE report {index} must be {width} bytes for k={count}, got {size}")
    if not payloads:
        return np.zeros((0, count), dtype=bool)
    packed = np.frombuffer(b"".join(payloads), dtype=np.uint8).reshape(len(payloads), width)
    unpacked = np.unpackbits(packed, axis=1, bitorder="little").astype(bool)
    padding = unpacked[:, count:].any(axis=1)
    if padding.any():
        raise ValueError(
            f"OUE report {int(np.flatnonzero(padding)[0])} has padding bits set beyond k={count}"
        )
    return unpacked[:, :count]
