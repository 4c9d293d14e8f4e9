/** The Piecewise mechanism (Wang et al., ICDE 2019) on a dyadic output grid (Python's ``piecewise``). */

import { Fraction, ONE } from "../core/fraction";
import { reprFloat } from "../core/pytext";
import { bernoulliRational } from "../sampling/rational";
import type { ByteSource } from "../sampling/source";
import { uniformBelow, uniformBytes } from "../sampling/uniform";
import { registerMechanism } from "./registry";
import {
  NumericMechanism,
  epsilonFor,
  ParameterError,
  checkInt,
  numericKind,
  stochasticRound,
  type Position,
} from "./numeric";

/** Most cells: every report z·2^-g has |z| < 2^52, an exact double. */
export const MAX_CELLS = 1n << 52n;

/** 2^-bits as an exact fraction, for bits of either sign. */
function halfStep(bits: number): Fraction {
  return bits >= 0 ? new Fraction(1n, 1n << BigInt(bits)) : new Fraction(1n << BigInt(-bits));
}

/**
 * The Piecewise mechanism as Python's ``PiecewiseMechanism``: N = W + L cells of width
 * 2h (h = 2^-g), cell i reported as (2i + 1 − N)·h. The true position is rounded
 * stochastically to k ∈ {0, ..., L}; the W cells k..k+W−1 are "high" and drawn, uniformly,
 * with probability P_c = (hW + 1)/(hN), else a uniform one of the L "low" cells. Both a
 * high and a low cell are drawn for every answer and one is picked by arithmetic, so the
 * bytes read do not depend on which region is reported. The worst ratio is
 * (1 + 1/(hW))/(1 − 1/(hL)).
 */
export class PiecewiseMechanism extends NumericMechanism {
  readonly name = "piecewise";
  readonly ratio: Fraction;
  readonly epsilon: number;
  /** W ≥ 1, cells in the high window. */
  readonly centerCells: bigint;
  /** L ≥ 1, cells outside it (also the number of input steps). */
  readonly outerCells: bigint;
  /** g, the output half-step h = 2^-g. */
  readonly gridBits: number;
  /** P_c = (hW + 1)/(hN), exactly. */
  readonly pCenter: Fraction;

  constructor(lo: number, hi: number, centerCells: bigint, outerCells: bigint, gridBits: number) {
    super(lo, hi);
    const center = checkInt("center_cells", centerCells, 1n, MAX_CELLS);
    const outer = checkInt("outer_cells", outerCells, 1n, MAX_CELLS);
    if (!Number.isInteger(gridBits) || gridBits < -64 || gridBits > 64) {
      throw new ParameterError(`grid_bits must be an integer in [-64, 64], got ${gridBits}`);
    }
    if (center + outer > MAX_CELLS) {
      throw new ParameterError(`center_cells + outer_cells must be <= 2^52, got ${center} + ${outer}`);
    }
    const h = halfStep(gridBits);
    const hOuter = h.mul(new Fraction(outer));
    if (hOuter.le(ONE)) {
      const product = `${outer} * 2^${-gridBits} = ${reprFloat(hOuter.toNumber())}`;
      throw new ParameterError(`outer_cells * 2^-grid_bits must be > 1, got ${product}`);
    }
    [this.centerCells, this.outerCells, this.gridBits] = [center, outer, gridBits];
    const hCenter = h.mul(new Fraction(center));
    this.ratio = new Fraction(outer)
      .mul(hCenter.add(ONE))
      .div(new Fraction(center).mul(hOuter.sub(ONE)));
    this.epsilon = epsilonFor(this.ratio);
    this.pCenter = hCenter.add(ONE).div(h.mul(new Fraction(center + outer)));
  }

  /** N = W + L output cells. */
  get cells(): bigint {
    return this.centerCells + this.outerCells;
  }

  /** Whether y is a report of this mechanism: (2i + 1 − N)·h for an integer 0 ≤ i < N. */
  onGrid(y: Fraction): boolean {
    const z = y.div(halfStep(this.gridBits));
    const limit = this.cells - 1n;
    return z.d === 1n && -limit <= z.n && z.n <= limit && (z.n + this.cells + 1n) % 2n === 0n;
  }

  /** The rounding's and P_c's first words, and a round of candidates for each uniform cell. */
  get fixedBytes(): number {
    return 16 + uniformBytes(this.centerCells) + uniformBytes(this.outerCells);
  }

  /** Round the input onto L steps, then a uniform high cell w.p. P_c, else a uniform low one. */
  sample(position: Position, source: ByteSource): number {
    const center = this.centerCells;
    const k = stochasticRound(position, this.outerCells, source);
    const high = bernoulliRational(this.pCenter.n, this.pCenter.d, source) ? 1n : 0n;
    const inside = k + uniformBelow(center, source);
    const low = uniformBelow(this.outerCells, source);
    const outside = low + center * (low >= k ? 1n : 0n);
    const cell = outside + high * (inside - outside);
    return Number(2n * cell + 1n - this.cells) * 2 ** -this.gridBits;
  }
}

/** The ``piecewise`` wire case: ``Piecewise {center_cells, outer_cells, grid_bits}``. */
export const PIECEWISE = registerMechanism(
  numericKind("piecewise", ["center_cells", "outer_cells", "grid_bits"], (lo, hi, p) =>
    new PiecewiseMechanism(lo, hi, p.centerCells, p.outerCells, p.gridBits),
  ),
);
