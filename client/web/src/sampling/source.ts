/** Byte sources: the browser's CSPRNG for participants, a fixed sequence only for replay tests. */

/** A callable returning that many independent, uniformly random bytes. */
export type ByteSource = (size: number) => Uint8Array;

const CHUNK = 65536; // getRandomValues fills at most 65,536 bytes per call

/** ``crypto.getRandomValues`` (WebCrypto's CSPRNG), looked up at call time. */
export const osSource: ByteSource = (size) => {
  const bytes = new Uint8Array(size);
  for (let at = 0; at < size; at += CHUNK) {
    crypto.getRandomValues(bytes.subarray(at, Math.min(size, at + CHUNK)));
  }
  return bytes;
};

/** A source that replays given bytes and throws when they run out (tests only). */
export function fixedSource(bytes: Uint8Array): ByteSource & { used(): number } {
  let at = 0;
  const source = (size: number): Uint8Array => {
    if (at + size > bytes.length) throw new RangeError("replayed bytes ran out");
    const out = bytes.slice(at, at + size);
    at += size;
    return out;
  };
  return Object.assign(source, { used: () => at });
}

/** Bytes as one unsigned integer, most significant first. */
export function bigEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

/** Bytes as one unsigned integer, least significant first. */
export function littleEndian(bytes: Uint8Array): bigint {
  let value = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) value = (value << 8n) | BigInt(bytes[i]!);
  return value;
}

/**
 * The source, read ``size`` bytes ahead on its first use: requests are served in order from
 * those bytes, then from the source, so every request gets the bytes it would have got.
 * ``size`` must be at most what is always read, lest bytes be drawn and not used.
 */
export function readAhead(source: ByteSource, size: number): ByteSource {
  let buffer: Uint8Array | undefined;
  let at = 0;
  return (count) => {
    buffer ??= source(size);
    if (at + count <= buffer.length) {
      at += count;
      return buffer.subarray(at - count, at);
    }
    const out = new Uint8Array(count);
    const rest = buffer.length - at;
    out.set(buffer.subarray(at));
    at = buffer.length;
    out.set(source(count - rest), rest);
    return out;
  };
}
