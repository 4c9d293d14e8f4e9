/** A question recognised by its content and its definition, computed as the Python client does. */

import {
  type DescField,
  type DescMessage,
  type JsonValue,
  ScalarType,
  clone,
  create,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { newReportId } from "../index";
import {
  MechanismSchema,
  type Question,
  QuestionSchema,
  type Report,
  ReportSchema,
} from "../gen/deniable/v1/aggregator_pb";
import { reprFloat } from "../text/numbers";
import { FOLD_MANY, FOLD_RUNS } from "./casefold";

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
  if (node instanceof Float) return reprFloat(node.value);
  if (typeof node === "string") return JSON.stringify(normalizedText(node));
  if (typeof node === "number") return String(node);
  if (typeof node === "boolean") return node ? "true" : "false";
  if (node === null) return "null";
  if (Array.isArray(node)) return `[${node.map(dump).join(",")}]`;
  const keys = Object.keys(node)
    .filter((key) => !SKIPPED.has(key))
    .sort(byCodePoint);
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

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

function rotr(x: number, n: number): number {
  return (x >>> n) | (x << (32 - n));
}

/** The SHA-256 digest of ``data``, as 64 lowercase hex digits. */
export function sha256Hex(data: Uint8Array): string {
  const length = data.length;
  const blocks = Math.ceil((length + 9) / 64);
  const padded = new Uint8Array(blocks * 64);
  padded.set(data);
  padded[length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(length / 0x20000000)); // length × 8, high word
  view.setUint32(padded.length - 4, (length * 8) >>> 0);
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  for (let block = 0; block < blocks; block++) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(block * 64 + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, k] = [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!, h[6]!, h[7]!];
    for (let i = 0; i < 64; i++) {
      const t1 = (k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      [k, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
    }
    const out = [a, b, c, d, e, f, g, k];
    for (let i = 0; i < 8; i++) h[i] = (h[i]! + out[i]!) >>> 0;
  }
  return [...h].map((word) => word.toString(16).padStart(8, "0")).join("");
}
