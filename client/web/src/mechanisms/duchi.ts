/** Duchi, Jordan and Wainwright's mechanism: report ±B with odds leaning toward the answer. */

import { Fraction, ONE } from "../core/fraction";
import { reprFloat } from "../core/pytext";
import { bernoulliRational } from "../sampling/rational";
import type { ByteSource } from "../sampling/source";
import { registerMechanism } from "./registry";
import {
  NumericMechanism,
  ParameterError,
  epsilonFor,
  numericKind,
  type Position,
} from "./numeric";

/**
 * Duchi et al.'s mechanism, as Python's ``DuchiMechanism``: P(y = +B | t) = ½ + t/(2B)
 * exactly (one exact rational Bernoulli of the true position, its first word read even
 * where it is certain), so E[y | t] = t; the worst ratio is (B+1)/(B−1), at t = ±1.
 */
export class DuchiMechanism extends NumericMechanism {
  readonly name = "duchi";
  readonly ratio: Fraction;
  readonly epsilon: number;
  /** B > 1, the magnitude of every report. */
  readonly bound: number;
  private readonly b: bigint;
  private readonly scale: bigint;

  constructor(lo: number, hi: number, bound: number) {
    super(lo, hi);
    if (!Number.isFinite(bound)) {
      throw new ParameterError(`bound must be a finite number, got ${reprFloat(bound)}`);
    }
    if (!(bound > 1)) throw new ParameterError(`bound must be > 1, got ${reprFloat(bound)}`);
    this.bound = bound;
    const exact = Fraction.fromDouble(bound);
    [this.b, this.scale] = [exact.n, exact.d];
    this.ratio = exact.add(ONE).div(exact.sub(ONE));
    this.epsilon = epsilonFor(this.ratio);
  }

  /** One word: the Bernoulli's first digit. */
  get fixedBytes(): number {
    return 8;
  }

  /** P(+B) = (B + 2u − 1)/(2B) = (b·den + 2^G(2n − den))/(2b·den) with B = b/2^G, u = n/den. */
  sample(position: Position, source: ByteSource): number {
    const { n, den } = position;
    const positive = bernoulliRational(
      this.b * den + this.scale * (2n * n - den),
      2n * this.b * den,
      source,
      true, // the probability comes from the true value
    );
    return positive ? this.bound : -this.bound;
  }
}

/** The ``duchi`` wire case: ``Duchi {bound}`` on the question's range. */
export const DUCHI = registerMechanism(
  numericKind("duchi", ["bound"], (lo, hi, p) => new DuchiMechanism(lo, hi, p.bound)),
);
