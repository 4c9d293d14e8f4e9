/** ``window.deniable``: the conformance hook tests use to perturb in the real page. */

import { fromJson, toBinary, toJson, type JsonValue } from "@bufbuild/protobuf";
import { buildReport } from "./answer";
import { type Question, QuestionSchema, ReportSchema } from "./gen/deniable/v1/aggregator_pb";
import { mechanismOf } from "./mechanisms/registry";
import type { Truth } from "./mechanisms/types";
import { type PreparedQuestion, prepareQuestion } from "./prepare";
import { fixedSource, osSource } from "./sampling/source";

function hexBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

function hexOf(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function question(json: JsonValue): Question {
  return fromJson(QuestionSchema, json);
}

const prepared = new Map<string, [Question, PreparedQuestion]>();

/** The question and its prepared mechanism, kept for the next calls on the same question. */
function preparedOf(json: JsonValue): [Question, PreparedQuestion] {
  const key = JSON.stringify(json);
  let known = prepared.get(key);
  if (known === undefined) {
    const parsed = question(json);
    known = [parsed, prepareQuestion(parsed)];
    if (prepared.size > 64) prepared.clear();
    prepared.set(key, known);
  }
  return known;
}

/** Perturb each truth (the text ``deniable answer`` takes) into a report's JSON, with WebCrypto. */
export function perturbMany(json: JsonValue, truths: string[]): JsonValue[] {
  const parsed = question(json);
  const { mechanism, type } = prepareQuestion(parsed);
  const answers = new Map<string, Truth>();
  return truths.map((text) => {
    let truth = answers.get(text);
    if (truth === undefined) answers.set(text, (truth = type.parseAnswer(text, parsed)));
    return toJson(ReportSchema, buildReport("", parsed, mechanism, truth, osSource));
  });
}

/**
 * One report from given random bytes (hex): the bytes the Python client would read. Gives
 * the report's JSON, the bytes read, and the report's wire encoding (hex).
 */
export function replay(
  json: JsonValue,
  truth: string,
  hex: string,
): { report: JsonValue; used: number; wire: string } {
  const [parsed, { mechanism, type }] = preparedOf(json);
  const source = fixedSource(hexBytes(hex));
  const report = buildReport("", parsed, mechanism, type.parseAnswer(truth, parsed), source);
  const wire = hexOf(toBinary(ReportSchema, report));
  return { report: toJson(ReportSchema, report), used: source.used(), wire };
}

/** The privacy loss the page computes for a question (JSON form), from its parameters. */
export function epsilonOf(json: JsonValue): number {
  return mechanismOf(question(json)).epsilon;
}

/** Why this page refuses a question (the participant's message), or null if it accepts it. */
export function refusal(json: JsonValue): string | null {
  try {
    prepareQuestion(question(json));
    return null;
  } catch (error) {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    throw error;
  }
}

/** What ``inspect`` tells of a question. */
interface Inspected {
  answers: ({ truth: string } | { error: string })[];
  hint: string;
  choices: string[] | null;
  parts: JsonValue[];
}

/**
 * Each text read as an answer to the question: ``{truth}`` (a bit as true/false, an option,
 * cell or item mask as its decimal) or ``{error}`` (the error's name and message); and the
 * question type's hint, choices and parts (JSON).
 */
export function inspect(json: JsonValue, texts: string[]): Inspected {
  const parsed = question(json);
  const { type } = prepareQuestion(parsed);
  const answers = texts.map((text) => {
    try {
      return { truth: String(type.parseAnswer(text, parsed)) };
    } catch (error) {
      return { error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
    }
  });
  const parts = type.parts(parsed).map((part) => toJson(QuestionSchema, part));
  return { answers, hint: type.answerHint(parsed), choices: type.choices(parsed), parts };
}

export function installHook(): void {
  const hook = { perturbMany, replay, epsilonOf, refusal, inspect };
  (globalThis as unknown as { deniable: object }).deniable = hook;
}
