/** The plain-language privacy sentence of each mechanism, word for word as the Python ``explain``. */

import type { JointPart, Question } from "../gen/deniable/v1/aggregator_pb";
import { Fraction, type Mechanism, tightestEpsilon } from "../index";
import { fixed, general, percent, percentOf, reprFloat, times, toDouble } from "../text/numbers";

const f = Fraction.fromDouble;
const ONE = Fraction.of(1);

/** The number of values of a joint question's part: 2, its options or its bins. */
function partSize(part: JointPart): number {
  switch (part.kind.case) {
    case "binary":
      return 2;
    case "categorical":
      return part.kind.value.options.length;
    case "numeric":
      return part.kind.value.edges.length - 1;
    default:
      return 0;
  }
}

/** k of a frequency oracle: the options, or a joint question's cells (Python's ``options_of``). */
export function optionsOf(question: Question): number {
  if (question.kind.case === "joint")
    return question.kind.value.parts.reduce((k, part) => k * partSize(part), 1);
  if (question.kind.case === "categorical") return question.kind.value.options.length;
  return 0;
}

function range(question: Question): [number, number] {
  return question.kind.case === "numeric" ? [question.kind.value.min, question.kind.value.max] : [0, 0];
}

function ratioOf(mechanism: Mechanism): number {
  return mechanism.ratio === null ? Infinity : toDouble(mechanism.ratio);
}

function eps(mechanism: Mechanism): string {
  return `(epsilon = ${fixed(mechanism.epsilon, 2)}).`;
}

function randomizedResponse(alpha: number, mechanism: Mechanism): string {
  if (mechanism.ratio === null) {
    return "No privacy: your true answer is always sent as it is (alpha = 1, epsilon = infinity).";
  }
  const ratio = ratioOf(mechanism);
  const shown = ratio < 1e6 ? fixed(ratio, 2) : general(ratio, 3);
  const truth = ONE.add(f(alpha)).div(Fraction.of(2));
  return (
    `The server can guess your true answer right with probability ${percent(truth)}; any report ` +
    `is at most ${shown} times as likely from one answer as from the other ${eps(mechanism)}`
  );
}

function grr(alpha: number, k: number, mechanism: Mechanism): string {
  if (mechanism.ratio === null) {
    return "No privacy: your true choice is always sent as it is (alpha = 1, epsilon = infinity).";
  }
  const a = f(alpha);
  const p = toDouble(a.add(ONE.sub(a).div(Fraction.of(k))));
  const q = toDouble(ONE.sub(a).div(Fraction.of(k)));
  const others = k === 2 ? "the other option" : `each of the ${k - 1} other options`;
  return (
    `Your report is your true choice with probability ${percentOf(p)} and ${others} with ` +
    `probability ${percentOf(q)}, so any report is at most ${times(p / q)} times as likely from ` +
    `one choice as from another ${eps(mechanism)}`
  );
}

function oue(q: number, mechanism: Mechanism): string {
  return (
    "Your report is one yes/no flag per option: your true choice's flag is set with probability " +
    `50% and every other flag with probability ${percentOf(q)}, so any report is at most ` +
    `${times((1 - q) / q)} times as likely from one choice as from another ${eps(mechanism)}`
  );
}

function olh(alpha: number, g: number, k: number, mechanism: Mechanism): string {
  if (mechanism.ratio === null) {
    return (
      "No privacy: the hashed group of your true choice is always sent as it is " +
      "(alpha = 1, epsilon = infinity)."
    );
  }
  const a = f(alpha);
  const p = toDouble(a.add(ONE.sub(a).div(Fraction.of(g))));
  const other = (1.0 - alpha) / g;
  return (
    `Your report is a random hash that sorts the ${k} options into ${g} groups, plus a group ` +
    `number that is your true choice's group with probability ${percentOf(p)} and each other ` +
    `group with probability ${percentOf(other)}, so any report is at most ${times(p / other)} ` +
    `times as likely from one choice as from another ${eps(mechanism)}`
  );
}

function itemRr(q: number, k: number, mechanism: Mechanism): string {
  const item = ONE.sub(f(q)).div(f(q));
  const one = toDouble(item);
  return (
    `Your report is one yes/no flag per item (${k} items): each flag is your true choice with ` +
    `probability ${percentOf(1 - q)} and flipped with probability ${percentOf(q)}, ` +
    `independently, so any report is at most ${times(one)} times as likely whether or not you ` +
    `chose one item, and at most ${times(one ** k)} times as likely from one set of choices as ` +
    `from any other (epsilon = ${fixed(mechanism.epsilon, 2)} in total, ` +
    `${fixed(tightestEpsilon(item), 2)} per item).`
  );
}

function laplace(lo: number, hi: number, mechanism: Mechanism): string {
  const epsilon = mechanism.epsilon;
  return (
    `Your answer is sent with random noise added, typically about ${general((hi - lo) / epsilon, 3)} ` +
    `either way on the range ${general(lo)} to ${general(hi)}; any report is at most ` +
    `${fixed(Math.exp(epsilon), 2)} times as likely for one answer as for any other ${eps(mechanism)}`
  );
}

function duchi(bound: number, lo: number, hi: number, mechanism: Mechanism): string {
  const b = f(bound);
  const share = toDouble(b.add(ONE).div(b.mul(Fraction.of(2))));
  return (
    `Only a coin-like signal is sent: 'high' with a probability between ${percentOf(1 - share)} ` +
    `(answer ${general(lo)}) and ${percentOf(share)} (answer ${general(hi)}), so any report is at ` +
    `most ${fixed(ratioOf(mechanism), 2)} times as likely for one answer as for any other ${eps(mechanism)}`
  );
}

function piecewise(center: bigint, outer: bigint, bits: number, mechanism: Mechanism): string {
  const h = bits >= 0 ? new Fraction(1n, 1n << BigInt(bits)) : new Fraction(1n << BigInt(-bits));
  const centerShare = h
    .mul(new Fraction(center))
    .add(ONE)
    .div(h.mul(new Fraction(center + outer)));
  return (
    `A random number is sent instead of your answer: with probability ${percentOf(toDouble(centerShare))} ` +
    "it is drawn near your answer, otherwise anywhere else in a wider range, so any report is at " +
    `most ${fixed(ratioOf(mechanism), 2)} times as likely for one answer as for any other ${eps(mechanism)}`
  );
}

function hybrid(beta: number, mechanism: Mechanism): string {
  return (
    `A random number is sent instead of your answer (with probability ${percentOf(beta)} drawn ` +
    "near your answer, otherwise one of two fixed values whose odds lean toward your answer), so " +
    `any report is at most ${fixed(ratioOf(mechanism), 2)} times as likely for one answer as for ` +
    `any other ${eps(mechanism)}`
  );
}

/** One plain-language sentence about what a report of this question reveals. */
export function explain(question: Question, mechanism: Mechanism): string {
  const kind = question.mechanism?.kind;
  const [lo, hi] = range(question);
  switch (kind?.case) {
    case "randomizedResponse":
      return randomizedResponse(kind.value.alpha, mechanism);
    case "grr":
      return grr(kind.value.alpha, optionsOf(question), mechanism);
    case "oue":
      return oue(kind.value.q, mechanism);
    case "olh":
      return olh(kind.value.alpha, kind.value.g, optionsOf(question), mechanism);
    case "itemRr":
      return itemRr(
        kind.value.q,
        question.kind.case === "multiSelect" ? question.kind.value.items.length : 0,
        mechanism,
      );
    case "laplace":
      return laplace(lo, hi, mechanism);
    case "duchi":
      return duchi(kind.value.bound, lo, hi, mechanism);
    case "piecewise":
      return piecewise(kind.value.centerCells, kind.value.outerCells, kind.value.gridBits, mechanism);
    case "hybrid":
      return hybrid(kind.value.beta, mechanism);
    default:
      return (
        `Your answer is randomized on this device; any report is at most ` +
        `${times(ratioOf(mechanism))} times as likely from one answer as from another ${eps(mechanism)}`
      );
  }
}

/** The α a mechanism carries, if any (randomized response, GRR, OLH). */
export function alphaOf(question: Question): number | null {
  const kind = question.mechanism?.kind;
  if (kind?.case === "randomizedResponse" || kind?.case === "grr" || kind?.case === "olh")
    return kind.value.alpha;
  return null;
}

/** "Exact epsilon: E, from alpha = A (computed on this device)", as ``deniable answer`` shows it. */
export function exactLine(question: Question, mechanism: Mechanism): string {
  const alpha = alphaOf(question);
  const source = alpha !== null ? `alpha = ${reprFloat(alpha)}` : `the ${mechanism.name} parameters`;
  return `Exact epsilon: ${reprFloat(mechanism.epsilon)}, from ${source} (computed on this device)`;
}
