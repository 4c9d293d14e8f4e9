"""Keyed 64-bit fingerprints of report ids: the NH hash of UMAC, then a bit mixer.

A fingerprint stands for an id in the storage's filters and sealed segments; two ids that
share one are still told apart, since ids are always compared in full before anything is
decided, but a client that could make many ids share fingerprints would slow the server
down. So fingerprints are keyed with a secret, and computed with NH (Black, Halevi,
Krawczyk, Krovetz and Rogaway, "UMAC: Fast and Secure Message Authentication", CRYPTO
1999): the id's 32-bit lanes ``m`` are added to key lanes ``k`` modulo 2^32 and multiplied
in pairs, ``sum((m[2i] + k[2i]) * (m[2i+1] + k[2i+1])) mod 2^64``. For two different ids
of the same length the probability over the key that their NH values collide is at most
2^-32, whatever ids a client chooses. The length and a final key word are then mixed in,
and the high half folded into the low half around a multiplication (a bijection, after
MurmurHash3's finalizer), so that both ends of the word, which the filters read, depend
on every product. Everything is about a dozen numpy operations per batch.
"""

from __future__ import annotations

import secrets

import numpy as np
from numpy.typing import NDArray

__all__ = ["Hasher", "default_hasher", "use_default"]

U64 = np.uint64
_LOW32 = U64(0xFFFFFFFF)
_S29, _S32 = U64(29), U64(32)
_FMIX1 = U64(0xFF51AFD7ED558CCD)  # MurmurHash3's fmix64 multiplier
_LENGTH = 0x9E3779B97F4A7C15  # length times the golden ratio, so lengths differ widely
_MASK64 = (1 << 64) - 1


def _splitmix(state: int, count: int) -> list[int]:
    """``count`` 64-bit words of SplitMix64 from ``state`` (Steele, Lea and Flood 2014)."""
    out = []
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out.append(z ^ (z >> 31))
    return out


class Hasher:
    """Fingerprints under one 128-bit key, for ids of up to 128 bytes."""

    LANES = 32  # 128 bytes of id in 32-bit lanes

    def __init__(self, key: tuple[int, int]) -> None:
        self.key = key
        words = _splitmix(key[0] ^ (key[1] << 1), self.LANES // 2 + 1)
        lanes = np.array(words[:-1], dtype="<u8").view("<u4")
        self.lanes = lanes.astype(np.uint32)
        self.final = words[-1]

    def __call__(self, ids: NDArray[np.uint8]) -> NDArray[np.uint64]:
        """The fingerprint of each row of an (m, length) matrix of ids."""
        count, length = ids.shape
        width = -(-length // 8)
        if width * 8 > 4 * self.LANES:
            raise ValueError(f"ids of {length} bytes: at most {4 * self.LANES} are hashed")
        if length == width * 8 and ids.flags.c_contiguous:
            words = ids
        else:
            words = np.zeros((count, width * 8), dtype=np.uint8)
            words[:, :length] = ids
        lanes = words.view("<u4").T.astype(np.uint32, order="C")  # a copy, lane by lane
        np.add(lanes, self.lanes[: 2 * width, None], out=lanes)  # modulo 2^32
        products = lanes[0::2].astype(np.uint64)
        np.multiply(products, lanes[1::2], out=products)  # each pair's product, below 2^64
        state = products[0].copy()
        for row in products[1:]:
            np.add(state, row, out=state)
        np.bitwise_xor(state, U64((self.final ^ (length * _LENGTH)) & _MASK64), out=state)
        return _fmix(state)


def _fmix(state: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Fold the high half into the low half, multiply, and fold again, in place.

    Both ends of the word then depend on the whole of NH's sum (after MurmurHash3's fmix64).
    """
    np.bitwise_xor(state, state >> _S32, out=state)
    np.multiply(state, _FMIX1, out=state)
    np.bitwise_xor(state, state >> _S29, out=state)
    return state


_default = [Hasher((secrets.randbits(64), secrets.randbits(64)))]


def default_hasher() -> Hasher:
    """The hasher the decoder fingerprints batches with (for its duplicate check).

    A storage that opens makes its own hasher the default, so that the fingerprints the
    decoder computes are the ones it needs; any other storage computes its own.
    """
    return _default[0]


def use_default(hasher: Hasher) -> None:
    """Make ``hasher`` the one the decoder uses."""
    _default[0] = hasher
