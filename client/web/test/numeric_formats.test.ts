/** Unit tests of the numeric question's Python number formats: repr of floats and strings, float(). */

import assert from "node:assert/strict";
import { test } from "node:test";
import { reprFloat, reprStr } from "../src/core/pytext";
import { pythonFloat } from "../src/questions/numeric";

// Expected values printed by Python (repr and float()).
const FLOATS: [number, string][] = [
  [0.0, "0.0"],
  [-0, "-0.0"],
  [1.0, "1.0"],
  [0.1, "0.1"],
  [0.0001, "0.0001"],
  [1e-05, "1e-05"],
  [1.5e-07, "1.5e-07"],
  [1000000000000000.0, "1000000000000000.0"],
  [1e+16, "1e+16"],
  [1.2345678901234568e+17, "1.2345678901234568e+17"],
  [5e-324, "5e-324"],
  [1.7976931348623157e+308, "1.7976931348623157e+308"],
  [-3.5, "-3.5"],
  [0.3333333333333333, "0.3333333333333333"],
  [4.35, "4.35"],
  [NaN, "nan"],
  [-Infinity, "-inf"],
];

test("floats are written as Python's repr writes them", () => {
  for (const [value, text] of FLOATS) assert.equal(reprFloat(value), text);
});

test("strings are quoted as Python's repr quotes them", () => {
  assert.equal(reprStr("abc"), "'abc'");
  assert.equal(reprStr("it's"), '"it\'s"');
  assert.equal(reprStr(`"'`), `'"\\''`);
  assert.equal(reprStr("a\nb\\\u200b\x85é"), "'a\\nb\\\\\\u200b\\x85é'");
});

const TEXTS: [string, number][] = [
  ["12.5", 12.5],
  [" 1_0 ", 10.0],
  ["1__0", NaN],
  ["\u0663.\u0665", 3.5],
  ["\uff13", 3.0],
  ["inf", Infinity],
  ["-Infinity", -Infinity],
  ["nan", NaN],
  ["1e-400", 0.0],
  ["0x1", NaN],
  [".5", 0.5],
  ["5.", 5.0],
  ["\u001c7\u0085", 7.0],
  ["\ufeff5", NaN],
  ["1e1_0", 10000000000.0],
  ["1_0.2_5e-0_1", 1.025],
];

test("answers are read as Python's float() reads them", () => {
  for (const [text, value] of TEXTS) assert.ok(Object.is(pythonFloat(text), value), text);
});
