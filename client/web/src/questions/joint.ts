/** Joint questions: a few parts answered as ONE report on their product domain (row-major cells). */

import { create } from "@bufbuild/protobuf";
import { InvalidAnswerError, InvalidQuestionError } from "../core/errors";
import { pyFloat, pyStrip, reprFloat, reprStr, shown, withCommas } from "../core/pytext";
import { type JointPart, type Question, QuestionSchema } from "../gen/deniable/v1/aggregator_pb";
import { MAX_OPTIONS, partSize } from "../mechanisms/parameters";
import type { Truth } from "../mechanisms/types";
import { parseYesNo } from "./binary";
import { CATEGORICAL, checkOptions, parseOption } from "./categorical";
import { registerQuestionType } from "./registry";
import type { QuestionType } from "./types";

/** Most parts a joint question may have (its cells are still at most ``MAX_OPTIONS``). */
export const MAX_PARTS = 8;

/** Largest magnitude of a bin edge (Python's ``MAX_NUMERIC_BOUND``, 1e15). */
export const MAX_NUMERIC_BOUND = 1e15;

const PART_ID = /^[A-Za-z0-9_.-]{1,64}$/;

function partsOf(question: Question): JointPart[] {
  return question.kind.case === "joint" ? question.kind.value.parts : [];
}

/** Each part as a question of its own kind (a numeric part on its range), as Python's ``part_questions``. */
export function partQuestions(question: Question): Question[] {
  return partsOf(question).map((part) => {
    const { id, text } = part;
    switch (part.kind.case) {
      case "binary":
        return create(QuestionSchema, { id, text, kind: { case: "binary", value: {} } });
      case "categorical":
        return create(QuestionSchema, { id, text, kind: { case: "categorical", value: part.kind.value } });
      default: {
        const edges = part.kind.case === "numeric" ? part.kind.value.edges : [];
        const range = { min: edges[0] ?? 0, max: edges[edges.length - 1] ?? 0 };
        return create(QuestionSchema, { id, text, kind: { case: "numeric", value: range } });
      }
    }
  });
}

function numericRange(part: Question): { min: number; max: number } {
  return part.kind.case === "numeric" ? part.kind.value : { min: NaN, max: NaN };
}

/** A part's hint, as its own kind's ``answer_hint``. */
function partHint(part: Question): string {
  if (part.kind.case === "categorical") return CATEGORICAL.answerHint(part);
  if (part.kind.case === "numeric") {
    const { min, max } = numericRange(part);
    return `a number from ${reprFloat(min)} to ${reprFloat(max)}`;
  }
  return "yes or no";
}

/** A part's answer, as its own kind reads it: a bit, an option index, or a number on its range. */
function parsePart(text: string, part: Question): boolean | number {
  if (part.kind.case === "categorical") return parseOption(text, part);
  if (part.kind.case === "numeric") {
    const { min, max } = numericRange(part);
    const number = pyFloat(pyStrip(text));
    if (!(min <= number && number <= max)) {
      throw new InvalidAnswerError(`answer must be ${partHint(part)}, got ${reprStr(text)}`);
    }
    return number;
  }
  return parseYesNo(text);
}

/** The index of a part's value: yes/no 1/0, the option's index, or the number's bin. */
function valueIndex(part: JointPart, answer: Truth): number {
  if (part.kind.case !== "numeric") return Number(answer);
  const edges = part.kind.value.edges;
  const above = edges.slice(1, -1).filter((edge) => Number(answer) >= edge).length;
  return Math.min(above, edges.length - 2);
}

/** The cell of the parts' answers, in part order: row-major, the first part slowest. */
export function combine(question: Question, answers: readonly Truth[]): number {
  const parts = partsOf(question);
  if (answers.length !== parts.length) {
    throw new RangeError(`expected ${parts.length} answers, got ${answers.length}`);
  }
  return parts.reduce((cell, part, i) => cell * partSize(part) + valueIndex(part, answers[i]!), 0);
}

function hint(question: Question): string {
  const parts = partQuestions(question);
  const hints = parts.map((part) => `${part.id}: ${partHint(part)}`).join("; ");
  return `${parts.map((part) => part.id).join(", ")} in order, comma-separated (${hints})`;
}

/** Each part's answer in part order, separated by commas, giving the cell's index. */
function parseAnswer(text: string, question: Question): number {
  const pieces = text.split(",");
  const parts = partQuestions(question);
  if (pieces.length !== parts.length) {
    throw new InvalidAnswerError(
      `answer must be ${parts.length} comma-separated values (${hint(question)}), got ${reprStr(text)}`,
    );
  }
  const answers = parts.map((part, i) => {
    try {
      return parsePart(pieces[i]!, part);
    } catch (error) {
      if (!(error instanceof InvalidAnswerError)) throw error;
      throw new InvalidAnswerError(`part ${reprStr(part.id)}: ${error.message}`);
    }
  });
  return combine(question, answers);
}

function checkEdges(edges: readonly number[], field: string): void {
  if (edges.length < 3 || edges.length > MAX_OPTIONS + 1) {
    const bins = Math.max(edges.length - 1, 0);
    throw new InvalidQuestionError(`${field}: need 2..${MAX_OPTIONS} bins, got ${bins}`);
  }
  edges.forEach((edge, index) => {
    if (!Number.isFinite(edge) || Math.abs(edge) > MAX_NUMERIC_BOUND) {
      throw new InvalidQuestionError(
        `${field}[${index}]: must be finite, at most 1e+15 in magnitude, got ${reprFloat(edge)}`,
      );
    }
    if (index && edge <= edges[index - 1]!) {
      throw new InvalidQuestionError(
        `${field}[${index}]: edges must increase, got ${reprFloat(edge)} ` +
          `after ${reprFloat(edges[index - 1]!)}`,
      );
    }
  });
}

/** 2..8 parts with unique ids, each a valid domain, at most 1024 cells (Python's ``check_joint``). */
function check(question: Question): void {
  const field = "question.joint.parts";
  const parts = partsOf(question);
  if (parts.length < 2 || parts.length > MAX_PARTS) {
    throw new InvalidQuestionError(`${field}: need 2..${MAX_PARTS} parts, got ${parts.length}`);
  }
  const seen = new Set<string>();
  parts.forEach((part, index) => {
    const where = `${field}[${index}]`;
    if (!PART_ID.test(part.id)) {
      throw new InvalidQuestionError(`${where}.id: must match [A-Za-z0-9_.-]{1,64}, got ${shown(part.id)}`);
    }
    if (seen.has(part.id)) throw new InvalidQuestionError(`${where}.id: duplicate part id ${shown(part.id)}`);
    seen.add(part.id);
    if (part.kind.case === undefined) {
      throw new InvalidQuestionError(`${where}: missing its kind (binary, categorical or numeric)`);
    }
    if (part.kind.case === "categorical") checkOptions(part.kind.value.options, where);
    if (part.kind.case === "numeric") checkEdges(part.kind.value.edges, `${where}.numeric.edges`);
  });
  const sizes = parts.map(partSize);
  const cells = sizes.reduce((product, size) => product * BigInt(size), 1n);
  if (cells > BigInt(MAX_OPTIONS)) {
    throw new InvalidQuestionError(
      `${field}: the parts have ${sizes.join(" x ")} = ${withCommas(cells)} cells, ` +
        `above the maximum ${MAX_OPTIONS}`,
    );
  }
}

/** A joint question (``Question.joint``): the answer is the cell of its parts' answers. */
export const JOINT: QuestionType = registerQuestionType({
  wireCase: "joint",
  parseAnswer,
  answerHint: hint,
  check,
  choices: () => null,
  parts: partQuestions,
  combine,
});
