/** Local Laplace noise, exact: discrete Laplace on a dyadic grid of the input (Python's ``laplace``). */

import { Fraction } from "../core/fraction";
import { WORD_BYTES, discreteLaplace, laplacePlan, type LaplacePlan } from "../sampling/laplace";
import type { ByteSource } from "../sampling/source";
import { registerMechanism } from "./registry";
import {
  NumericMechanism,
  checkEpsilon,
  checkInt,
  numericKind,
  stochasticRound,
  type Position,
} from "./numeric";

const CLAMP = 1n << 52n; // post-processing clamp: every report is an exact double

/**
 * Local Laplace noise on a 2^-m grid (Mironov 2012), as Python's ``LaplaceMechanism``:
 * u = (x − lo)/(hi − lo) is rounded stochastically to j ∈ {0, ..., 2^m} (E[j] = u·2^m),
 * discrete Laplace noise Z of scale 2^m/ε is added, and the report is
 * y = 2(j + Z)/2^m − 1, clamped to |y| ≤ 2^(53−m), an exact double on the 2^(1−m) grid.
 * ε is the parameter itself (exact); ``ratio`` is e^ε rounded to a double, for display
 * only, as Python's ``privacy_ratio``.
 */
export class LaplaceMechanism extends NumericMechanism {
  readonly name = "laplace";
  readonly epsilon: number;
  readonly ratio: Fraction;
  /** m: the input is rounded onto 2^m + 1 points. */
  readonly gridBits: number;
  private plan: LaplacePlan | undefined;

  constructor(lo: number, hi: number, epsilon: number, gridBits: number) {
    super(lo, hi);
    this.epsilon = checkEpsilon(epsilon);
    this.gridBits = Number(checkInt("grid_bits", gridBits, 1n, 30n));
    this.ratio = Fraction.fromDouble(Math.exp(this.epsilon));
  }

  /** The discrete Laplace scale b = 2^m/ε in input-grid steps, exactly. */
  get noiseScale(): Fraction {
    return new Fraction(1n << BigInt(this.gridBits)).div(Fraction.fromDouble(this.epsilon));
  }

  /** The rounding's first word, and the noise's 128-bit uniform per row and sign byte. */
  get fixedBytes(): number {
    this.plan ??= laplacePlan(this.noiseScale);
    return 8 + (this.plan.bits + 2) * WORD_BYTES + 1;
  }

  /** J = the input rounded onto 2^m steps, plus discrete Laplace noise; y = 2(J+Z)/2^m − 1. */
  sample(position: Position, source: ByteSource): number {
    const bits = BigInt(this.gridBits);
    const j = stochasticRound(position, 1n << bits, source);
    this.plan ??= laplacePlan(this.noiseScale);
    const noise = discreteLaplace(this.plan, source);
    let z = j + noise - (1n << (bits - 1n));
    if (z > CLAMP) z = CLAMP;
    if (z < -CLAMP) z = -CLAMP;
    return Number(z) * 2 ** (1 - this.gridBits);
  }
}

/** The ``laplace`` wire case: ``NumericLaplace {epsilon, grid_bits}`` on the question's range. */
export const LAPLACE = registerMechanism(
  numericKind("laplace", ["epsilon", "grid_bits"], (lo, hi, p) =>
    new LaplaceMechanism(lo, hi, p.epsilon, p.gridBits),
  ),
);
