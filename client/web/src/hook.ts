/** ``window.deniable``: the conformance hook tests use to perturb in the real page. */

import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { buildReport } from "./answer";
import { QuestionSchema, ReportSchema } from "./gen/deniable/v1/aggregator_pb";
import { mechanismOf } from "./mechanisms/registry";
import { questionTypeOf } from "./questions/registry";
import { fixedSource, osSource } from "./sampling/source";

function hexBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** Perturb each truth (the text ``deniable answer`` takes) into a report's JSON, with WebCrypto. */
export function perturbMany(question: JsonValue, truths: string[]): JsonValue[] {
  const parsed = fromJson(QuestionSchema, question);
  const mechanism = mechanismOf(parsed);
  const type = questionTypeOf(parsed);
  type.check(parsed);
  return truths.map((text) =>
    toJson(ReportSchema, buildReport("", parsed, mechanism, type.parseAnswer(text, parsed), osSource)),
  );
}

/** One report from given random bytes (hex): the bytes the Python client would read. */
export function replay(question: JsonValue, truth: string, hex: string): { report: JsonValue; used: number } {
  const parsed = fromJson(QuestionSchema, question);
  const mechanism = mechanismOf(parsed);
  const source = fixedSource(hexBytes(hex));
  const report = buildReport("", parsed, mechanism, questionTypeOf(parsed).parseAnswer(truth, parsed), source);
  return { report: toJson(ReportSchema, report), used: source.used() };
}

/** The privacy loss the page computes for a question (JSON form), from its parameters. */
export function epsilonOf(question: JsonValue): number {
  return mechanismOf(fromJson(QuestionSchema, question)).epsilon;
}

export function installHook(): void {
  (globalThis as unknown as { deniable: object }).deniable = { perturbMany, replay, epsilonOf };
}
