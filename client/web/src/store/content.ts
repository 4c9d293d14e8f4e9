/** A question recognised by its content and its definition, computed as the Python client does. */

import { type DescField, type DescMessage, type JsonValue, ScalarType, clone, create, toBinary, toJson } from "@bufbuild/protobuf";
import { newReportId } from "../answer";
import { MechanismSchema, type Question, QuestionSchema, type Report, ReportSchema } from "../gen/deniable/v1/aggregator_pb";
import { pyRepr } from "../text/numbers";
import { FOLD_MANY, FOLD_RUNS } from "./casefold";
import { sha256Hex } from "./sha256";

const FOLDED = new Map<number, string>(FOLD_MANY);
for (let i = 0; i < FOLD_RUNS.length; i += 3) {
  const [start, length, offset] = [FOLD_RUNS[i]!, FOLD_RUNS[i + 1]!, FOLD_RUNS[i + 2]!];
  for (let code = start; code < start + length; code++) FOLDED.set(code, String.fromCodePoint(code + offset));
}

/** Python's ``str.casefold``: full case folding, one code point at a time. */
export function casefold(text: string): string {
  let out = "";
  for (const character of text) out += FOLDED.get(character.codePointAt(0)!) ?? character.toLowerCase();
  return out;
}

// Python's str.split() separators (str.isspace): not quite JS's \s.
const SPACES = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;

/** Text as compared (``normalized_text``): NFKC, case folded, white space runs one space. */
export function normalizedText(text: string): string {
  return casefold(text.normalize("NFKC"))
    .split(SPACES)
    .filter((word) => word !== "")
    .join(" ");
}

/** A double field's value, written as Python's ``json.dumps`` writes a float. */
class Float {
  constructor(readonly value: number) {}
}
type Node = string | number | boolean | null | Float | Node[] | { [key: string]: Node };

const SKIPPED = new Set(["id", "privacy"]); // ids name, they do not ask; privacy is the server's

function isFloat(scalar: ScalarType | undefined): boolean {
  return scalar === ScalarType.DOUBLE || scalar === ScalarType.FLOAT;
}

function scalar(value: JsonValue, float: boolean): Node {
  return float && typeof value === "number" ? new Float(value) : (value as Node);
}

function fieldNode(field: DescField, value: JsonValue): Node {
  switch (field.fieldKind) {
    case "message":
      return typed(field.message, value);
    case "list":
      return (value as JsonValue[]).map((item) =>
        field.listKind === "message" ? typed(field.message, item) : scalar(item, isFloat(field.scalar)),
      );
    case "map": {
      const entries = Object.entries(value as Record<string, JsonValue>);
      return Object.fromEntries(
        entries.map(([key, item]) => [
          key,
          field.mapKind === "message" ? typed(field.message, item) : scalar(item, isFloat(field.scalar)),
        ]),
      );
    }
    case "scalar":
      return scalar(value, isFloat(field.scalar));
    default:
      return value as Node;
  }
}

/** A message's JSON (proto field names) with its double values marked. */
function typed(desc: DescMessage, json: JsonValue): Node {
  const object = json as Record<string, JsonValue>;
  const out: Record<string, Node> = {};
  for (const [key, value] of Object.entries(object)) {
    const field = desc.fields.find((candidate) => candidate.name === key);
    out[key] = field === undefined ? (value as Node) : fieldNode(field, value);
  }
  return out;
}

function byCodePoint(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}

/** ``json.dumps(_normalized(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)``. */
function dump(node: Node): string {
  if (node instanceof Float) return pyRepr(node.value);
  if (typeof node === "string") return JSON.stringify(normalizedText(node));
  if (typeof node === "number") return String(node);
  if (typeof node === "boolean") return node ? "true" : "false";
  if (node === null) return "null";
  if (Array.isArray(node)) return `[${node.map(dump).join(",")}]`;
  const keys = Object.keys(node).filter((key) => !SKIPPED.has(key)).sort(byCodePoint);
  return `{${keys.map((key) => `${JSON.stringify(key)}:${dump(node[key]!)}`).join(",")}}`;
}

/**
 * What the question asks, whoever asks it (Python's ``content_of``): a SHA-256 of its text,
 * kind and mechanism, every text normalized; ids and the server's privacy figures left out.
 */
export function contentOf(question: Question): string {
  const json = toJson(QuestionSchema, question, { useProtoFieldName: true });
  return sha256Hex(new TextEncoder().encode(dump(typed(QuestionSchema, json))));
}

function base64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * What makes a question the same question (Python's ``definition_of``): base64 of the
 * deterministic bytes of its id, kind and mechanism; text and privacy figures do not count.
 */
export function definitionOf(question: Question): string {
  const definition = create(QuestionSchema, { id: question.id, kind: question.kind });
  if (question.mechanism !== undefined) {
    const mechanism = clone(MechanismSchema, question.mechanism);
    if (mechanism.kind.case === "registered") {
      const parameters = mechanism.kind.value.parameters;
      const sorted = Object.keys(parameters).sort(byCodePoint); // deterministic: keys sorted
      mechanism.kind.value.parameters = Object.fromEntries(sorted.map((key) => [key, parameters[key]!]));
    }
    definition.mechanism = mechanism;
  }
  return base64(toBinary(QuestionSchema, definition));
}

/**
 * The kept report's value sent for ``question`` of ``surveyId`` (``copy_report``): the same
 * report for the same survey and question, else the value under a fresh report id.
 */
export function copyReport(kept: Report, surveyId: string, question: Question): Report {
  const report = clone(ReportSchema, kept);
  if (kept.surveyId !== surveyId || kept.questionId !== question.id) {
    report.reportId = newReportId();
    report.surveyId = surveyId;
    report.questionId = question.id;
  }
  report.mechanism = question.mechanism && clone(MechanismSchema, question.mechanism);
  return report;
}

/** Questions of one survey asking what an earlier one asks: their id to the first's. */
export function repeats(questions: readonly Question[]): Map<string, string> {
  const first = new Map<string, string>();
  const found = new Map<string, string>();
  for (const question of questions) {
    const content = contentOf(question);
    const earlier = first.get(content);
    if (earlier !== undefined) found.set(question.id, earlier);
    else first.set(content, question.id);
  }
  return found;
}
