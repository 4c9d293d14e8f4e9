/** The page computes what the Python client computes: numbers, sums, content, definitions, sentences. */

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fromBinary } from "@bufbuild/protobuf";
import { Fraction } from "../src/core/fraction";
import { QuestionSchema } from "../src/gen/deniable/v1/aggregator_pb";
import type { Mechanism } from "../src/mechanisms/types";
import { explain } from "../src/app/explain";
import { prepareQuestion } from "../src/index";
import { contentOf, definitionOf, normalizedText } from "../src/store/content";
import {
  fixed,
  fsum,
  general,
  percent,
  percentOf,
  reprFloat,
  roundDown,
  roundUp,
  toDouble,
} from "../src/text/numbers";
import { describeCharacter, firstUnsafe, visible } from "../src/text/unsafe";

interface Fixtures {
  questions: {
    id: string;
    binary: string;
    content: string;
    definition: string;
    name?: string;
    epsilon?: number;
    ratio?: [string, string] | null;
    explain?: string;
  }[];
  numbers: {
    x: number;
    repr: string;
    f2: string;
    f4: string;
    pct: string;
    g: string;
    g3: string;
    up: string | null;
    down: string | null;
  }[];
  fractions: { n: string; d: string; float: string }[];
  sums: { values: number[]; sum: string }[];
  percents: { n: number; d: number; text: string }[];
  texts: { text: string; normalized: string }[];
  unsafe: { text: string; visible: string; first: [number, string] | null }[];
}

// Written by tests/web/_fixtures.py; the bundle runs from build/test/.
const fixtures = JSON.parse(
  readFileSync(new URL("../../test/python-fixtures.json", import.meta.url), "utf-8"),
) as Fixtures;

function question(binary: string) {
  return fromBinary(
    QuestionSchema,
    Uint8Array.from(atob(binary), (c) => c.charCodeAt(0)),
  );
}

test("numbers are written as Python writes them", () => {
  for (const row of fixtures.numbers) {
    const x = row.x === 0 && row.repr.startsWith("-") ? -0 : row.x;
    assert.equal(reprFloat(x), row.repr, `repr ${row.repr}`);
    assert.equal(fixed(x, 2), row.f2, `.2f ${row.repr}`);
    assert.equal(fixed(x, 4), row.f4, `.4f ${row.repr}`);
    assert.equal(percentOf(x), row.pct, `.0% ${row.repr}`);
    assert.equal(general(x), row.g, `g ${row.repr}`);
    assert.equal(general(x, 3), row.g3, `.3g ${row.repr}`);
    if (row.up !== null) assert.equal(roundUp(x), row.up, `round_up ${row.repr}`);
    if (row.down !== null) assert.equal(roundDown(x), row.down, `round_down ${row.repr}`);
  }
});

test("rationals round to the nearest double as float(Fraction)", () => {
  for (const row of fixtures.fractions) {
    const value = toDouble(new Fraction(BigInt(row.n), BigInt(row.d)));
    assert.equal(reprFloat(value), row.float, `${row.n}/${row.d}`);
  }
});

test("sums of ε are exactly rounded as math.fsum", () => {
  for (const row of fixtures.sums)
    assert.equal(reprFloat(fsum(row.values)), row.sum, JSON.stringify(row.values));
});

test("percentages of exact shares as percent()", () => {
  for (const row of fixtures.percents) assert.equal(percent(Fraction.of(row.n, row.d)), row.text);
});

test("texts are normalized as normalized_text", () => {
  for (const row of fixtures.texts)
    assert.equal(normalizedText(row.text), row.normalized, JSON.stringify(row.text));
});

test("content and definition of every kind of question equal content_of and definition_of", () => {
  for (const row of fixtures.questions) {
    const parsed = question(row.binary);
    assert.equal(contentOf(parsed), row.content, `content of ${row.id}`);
    assert.equal(definitionOf(parsed), row.definition, `definition of ${row.id}`);
  }
});

test("the page's own mechanisms give Python's ε and sentence for every kind", () => {
  for (const row of fixtures.questions) {
    if (row.explain === undefined) continue;
    const parsed = question(row.binary);
    const { mechanism } = prepareQuestion(parsed);
    assert.equal(mechanism.name, row.name, row.id);
    assert.equal(mechanism.epsilon, row.epsilon, row.id);
    assert.equal(explain(parsed, mechanism), row.explain, row.id);
  }
});

test("the plain-language sentence of every mechanism is Python's explain", () => {
  for (const row of fixtures.questions) {
    if (row.explain === undefined) continue;
    const ratio = row.ratio ? new Fraction(BigInt(row.ratio[0]), BigInt(row.ratio[1])) : null;
    const mechanism: Mechanism = {
      name: row.name!,
      ratio,
      epsilon: row.epsilon!,
      fixedBytes: 0,
      perturb: () => {
        throw new Error("not in this test");
      },
    };
    assert.equal(explain(question(row.binary), mechanism), row.explain, row.id);
  }
});

test("unsafe characters are found and escaped as visible() and first_unsafe()", () => {
  for (const row of fixtures.unsafe) {
    assert.equal(visible(row.text), row.visible);
    const found = firstUnsafe(row.text);
    assert.deepEqual(found && [found.position, describeCharacter(found.character)], row.first);
  }
});
