/** The Hybrid mechanism (Wang et al., ICDE 2019): Piecewise with probability β, else Duchi. */

import { Fraction } from "../core/fraction";
import { reprFloat } from "../core/pytext";
import { bernoulli, bernoulliBytes } from "../sampling/bernoulli";
import type { ByteSource } from "../sampling/source";
import { DuchiMechanism } from "./duchi";
import { registerMechanism } from "./registry";
import {
  NumericMechanism,
  ParameterError,
  epsilonFor,
  numericKind,
  type Position,
} from "./numeric";
import { PiecewiseMechanism } from "./piecewise";

/**
 * The Hybrid mechanism as Python's ``HybridMechanism``: an exact Bernoulli(β) (β a double,
 * hence dyadic) picks the Piecewise part, else the Duchi part; both parts perturb every
 * answer and the report is picked by arithmetic, so the bytes read do not say which part
 * it comes from. Their outputs must not overlap (B off the Piecewise grid when 0 < β < 1);
 * the worst ratio is the larger of the parts' in use.
 */
export class HybridMechanism extends NumericMechanism {
  readonly name = "hybrid";
  readonly ratio: Fraction;
  readonly epsilon: number;
  /** Probability of the Piecewise part, in [0, 1]. */
  readonly beta: number;
  readonly piecewise: PiecewiseMechanism;
  readonly duchi: DuchiMechanism;
  private readonly betaExact: Fraction;

  constructor(
    lo: number,
    hi: number,
    beta: number,
    bound: number,
    centerCells: bigint,
    outerCells: bigint,
    gridBits: number,
  ) {
    super(lo, hi);
    if (!(beta >= 0 && beta <= 1)) {
      throw new ParameterError(`beta must be in [0, 1], got ${reprFloat(beta)}`);
    }
    this.beta = beta;
    this.betaExact = Fraction.fromDouble(beta);
    this.piecewise = new PiecewiseMechanism(lo, hi, centerCells, outerCells, gridBits);
    this.duchi = new DuchiMechanism(lo, hi, bound);
    if (beta > 0 && beta < 1 && this.piecewise.onGrid(Fraction.fromDouble(bound))) {
      throw new ParameterError(
        `bound ${reprFloat(bound)} lies on the piecewise grid: reports would be ambiguous`,
      );
    }
    const used: Fraction[] = [];
    if (beta !== 0) used.push(this.piecewise.ratio);
    if (beta !== 1) used.push(this.duchi.ratio);
    this.ratio = used.reduce((a, b) => (a.lt(b) ? b : a));
    this.epsilon = epsilonFor(this.ratio);
  }

  /** The Bernoulli(β)'s bytes (none when β is 0 or 1), then both parts'. */
  get fixedBytes(): number {
    return bernoulliBytes(this.betaExact) + this.piecewise.fixedBytes + this.duchi.fixedBytes;
  }

  /** An exact Bernoulli(β) picks the part; both parts draw, in Python's order. */
  sample(position: Position, source: ByteSource): number {
    const usePiecewise = bernoulli(this.betaExact, source);
    const piecewise = this.piecewise.sample(position, source);
    const duchi = this.duchi.sample(position, source);
    return usePiecewise ? piecewise : duchi;
  }
}

/** The ``hybrid`` wire case: ``Hybrid {beta, bound, center_cells, outer_cells, grid_bits}``. */
export const HYBRID = registerMechanism(
  numericKind(
    "hybrid",
    ["beta", "bound", "center_cells", "outer_cells", "grid_bits"],
    (lo, hi, p) => new HybridMechanism(lo, hi, p.beta, p.bound, p.centerCells, p.outerCells, p.gridBits),
  ),
);
