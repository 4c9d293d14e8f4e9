/** Unit tests of the numeric samplers' exact arithmetic, against values the Python client printed. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { Fraction } from "../src/core/fraction";
import { expNegBounds, leadingBits, type Shape } from "../src/sampling/expdigits";
import { laplacePlan } from "../src/sampling/laplace";
import { bernoulliRational, geometricExp } from "../src/sampling/rational";
import { fixedSource } from "../src/sampling/source";

// leading_bits(shape, x, 128) and (…, 192) of shared/sampling/_exp_digits.py.
const LEADING: [Shape, bigint, bigint, bigint, bigint][] = [
  ["exp", 1n, 1024n, 339950222128463181389559457827561204959n, 6270974745404473865367389842713121152467753293419194355495n],
  ["exp", 3n, 7n, 221673224401412999326421653287151535092n, 4089149238526852812747774851429092942608458618384240057776n],
  ["exp", 64n, 1n, 54574856592n, 1006728412429491258900837578827n],
  ["exp", 1n, 1125899906842624n, 340282366920938161231919703774608752639n, 6277101735386675188649489790554356912251358042190448514389n],
  ["exp", 887n, 10n, 1n, 18872899300747663504n],
  ["logistic", 1n, 1024n, 170058106717335020736170706954305462997n, 3137018372274266284555474604402297616158500352619108412671n],
  ["logistic", 3n, 7n, 134230338921994641606626876719748769877n, 2476112709021329218293132531547850239473879218022365768559n],
  ["logistic", 64n, 1n, 54574856592n, 1006728412429491258900837578665n],
  ["logistic", 1n, 1125899906842624n, 170141183460469156173823577801560686592n, 3138550867693338988121319803439886862068785681801049101653n],
  ["logistic", 887n, 10n, 1n, 18872899300747663504n],
  ["tanh", 1n, 1024n, 166153486268421991033193523157285460n, 3064990838148194724840214403071183785354739225817687552n],
  ["tanh", 3n, 7n, 71821689076949180250120853992270671700n, 1324876317344022327249524360111965937154597008419302975777n],
  ["tanh", 64n, 1n, 340282366920938463463374607322618498270n, 6277101735386680763835789421194209591243372926662359355564n],
  ["tanh", 1n, 1125899906842624n, 151115727451828646838271n, 2787593149816327892691964784080861936309589n],
  ["tanh", 887n, 10n, 340282366920938463463374607431768211453n, 6277101735386680763835789423207666416064609645862539185886n],
];

test("the leading bits of e^(−x) probabilities are Python's", () => {
  for (const [shape, n, d, bits128, bits192] of LEADING) {
    assert.equal(leadingBits(shape, new Fraction(n, d), 128), bits128);
    assert.equal(leadingBits(shape, new Fraction(n, d), 192), bits192);
  }
});

const BOUNDS: [bigint, bigint, string, string][] = [
  [1n, 1024n, "154591462946183665457992655/154742504910672534362390528", "618365851784734661831970623/618970019642690137449562112"],
  [3n, 7n, "50402655779501628632356563/77371252455336267181195264", "201610623118006514529426253/309485009821345068724781056"],
  [64n, 1n, "3/19807040628566084398385987584", "7/39614081257132168796771975168"],
  [1n, 1125899906842624n, "1125899906842623/1125899906842624", "618970019642689587693748227/618970019642690137449562112"],
  [887n, 10n, "0", "1/39614081257132168796771975168"],
];

test("the certified bounds on e^(−x) are Python's, to the bit", () => {
  for (const [n, d, lo, hi] of BOUNDS) {
    const bound = expNegBounds(new Fraction(n, d), 72);
    const unit = 1n << BigInt(bound.bits);
    assert.equal(new Fraction(bound.lo, unit).toString(), lo);
    assert.equal(new Fraction(bound.hi, unit).toString(), hi);
  }
});

test("the discrete Laplace plans have Python's tail bits", () => {
  assert.equal(laplacePlan(new Fraction(1024n)).bits, 16);
  assert.equal(laplacePlan(new Fraction(2n)).bits, 7);
  assert.equal(laplacePlan(new Fraction(1n << 50n)).bits, 56);
});

function words(...values: bigint[]): Uint8Array {
  const bytes = new Uint8Array(8 * values.length);
  const view = new DataView(bytes.buffer);
  values.forEach((value, i) => view.setBigUint64(8 * i, value, true));
  return bytes;
}

test("rational Bernoullis decide ties on the next digit, and read as Python", () => {
  const digit = (1n << 64n) / 3n;
  const tie = fixedSource(words(digit, digit, digit - 1n));
  assert.equal(bernoulliRational(1n, 3n, tie), true);
  assert.equal(tie.used(), 24);
  const quarter = fixedSource(words(1n << 62n));
  assert.equal(bernoulliRational(1n, 4n, quarter), false); // p's expansion ends: U = p is not < p
  assert.equal(quarter.used(), 8);
  const none = fixedSource(new Uint8Array(0));
  assert.equal(bernoulliRational(3n, 3n, none), true);
  assert.equal(bernoulliRational(0n, 3n, none), false);
  const fixed = fixedSource(words(0n, 0n));
  assert.equal(bernoulliRational(3n, 3n, fixed, true), true);
  assert.equal(bernoulliRational(0n, 3n, fixed, true), false);
  assert.equal(fixed.used(), 16); // certain draws of a secret read their word
});

test("geometric draws count forced successes of exp(−γ)", () => {
  // γ = 2: a success is e^(−1) twice (Bernoulli(1/2) then not Bernoulli(1/3)); a failure
  // fails Bernoulli(1/2) at once.
  const ones = (1n << 64n) - 1n;
  const source = fixedSource(words(0n, ones, 0n, ones, 0n, ones, 0n, ones, ones));
  assert.equal(geometricExp(new Fraction(2n), source), 2n);
  assert.equal(source.used(), 72);
});
