/** Exact rational numbers on BigInt: probabilities and privacy ratios, never floating point. */

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** A reduced fraction n/d with d > 0, like Python's ``fractions.Fraction``. */
export class Fraction {
  readonly n: bigint;
  readonly d: bigint;

  constructor(n: bigint, d: bigint = 1n) {
    if (d === 0n) throw new RangeError("zero denominator");
    if (d < 0n) [n, d] = [-n, -d];
    const g = gcd(n, d) || 1n;
    this.n = n / g;
    this.d = d / g;
  }

  /** The exact value of a finite double (every double is a dyadic rational). */
  static fromDouble(x: number): Fraction {
    if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, x);
    const bits = view.getBigUint64(0);
    const negative = bits >> 63n === 1n;
    const exponent = Number((bits >> 52n) & 0x7ffn);
    let mantissa = bits & 0xfffffffffffffn;
    let power: number;
    if (exponent === 0) power = -1074;
    else {
      mantissa |= 1n << 52n;
      power = exponent - 1075;
    }
    const n = negative ? -mantissa : mantissa;
    return power >= 0 ? new Fraction(n << BigInt(power)) : new Fraction(n, 1n << BigInt(-power));
  }

  static of(n: bigint | number, d: bigint | number = 1n): Fraction {
    return new Fraction(BigInt(n), BigInt(d));
  }

  add(o: Fraction): Fraction {
    return new Fraction(this.n * o.d + o.n * this.d, this.d * o.d);
  }

  sub(o: Fraction): Fraction {
    return new Fraction(this.n * o.d - o.n * this.d, this.d * o.d);
  }

  mul(o: Fraction): Fraction {
    return new Fraction(this.n * o.n, this.d * o.d);
  }

  div(o: Fraction): Fraction {
    return new Fraction(this.n * o.d, this.d * o.n);
  }

  /** -1, 0 or 1 as this is below, equal to or above ``o``. */
  cmp(o: Fraction): number {
    const left = this.n * o.d;
    const right = o.n * this.d;
    return left < right ? -1 : left > right ? 1 : 0;
  }

  lt(o: Fraction): boolean {
    return this.cmp(o) < 0;
  }

  le(o: Fraction): boolean {
    return this.cmp(o) <= 0;
  }

  eq(o: Fraction): boolean {
    return this.n === o.n && this.d === o.d;
  }

  /** A double within an ulp or two of the value: for display and log approximations only. */
  toNumber(): number {
    const negative = this.n < 0n;
    const a = negative ? -this.n : this.n;
    if (a === 0n) return 0;
    const k = 64 - (bitLength(a) - bitLength(this.d));
    const q = k >= 0 ? (a << BigInt(k)) / this.d : a / (this.d << BigInt(-k));
    let value = Number(q);
    let left = -k;
    while (left !== 0) {
      const step = Math.max(-1000, Math.min(1000, left));
      value *= 2 ** step;
      left -= step;
    }
    return negative ? -value : value;
  }

  toString(): string {
    return this.d === 1n ? `${this.n}` : `${this.n}/${this.d}`;
  }
}

/** The number of bits of a non-negative integer (Python's ``int.bit_length``). */
export function bitLength(x: bigint): number {
  if (x < 0n) throw new RangeError("bitLength of a negative number");
  return x === 0n ? 0 : x.toString(2).length;
}

export const ZERO = Fraction.of(0);
export const ONE = Fraction.of(1);
