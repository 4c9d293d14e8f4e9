/** Multi-select questions: any subset of 2..64 named items, written as names or numbers. */

import { InvalidAnswerError, InvalidQuestionError } from "../core/errors";
import { pyDigits, pyLen, pyStrip, reprStr, shown } from "../core/pytext";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import { MAX_ITEMS } from "../mechanisms/parameters";
import { MAX_OPTION_TEXT } from "./categorical";
import { registerQuestionType } from "./registry";
import type { QuestionType } from "./types";

/** The answer naming the empty set (as does an empty answer); no item may be called so. */
export const NONE_ANSWER = "none";

function itemsOf(question: Question): string[] {
  return question.kind.case === "multiSelect" ? question.kind.value.items : [];
}

/** ``item names or numbers 1..k separated by commas, or 'none'``. */
function hint(question: Question): string {
  return `item names or numbers 1..${itemsOf(question).length} separated by commas, or 'none'`;
}

/**
 * Refuse items outside the surveys' limits (Python's ``MultiSelect.check``): 2..64 items of
 * 1..200 characters, without commas, none called "none", distinct in any case.
 */
function check(question: Question): void {
  const items = itemsOf(question);
  const field = "question.multi_select.items";
  if (items.length < 2 || items.length > MAX_ITEMS) {
    throw new InvalidQuestionError(`${field}: need 2..${MAX_ITEMS} items, got ${items.length}`);
  }
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const where = `${field}[${index}]`;
    if (!pyStrip(item) || pyLen(item) > MAX_OPTION_TEXT) {
      throw new InvalidQuestionError(`${where}: must be 1..${MAX_OPTION_TEXT} characters`);
    }
    if (item.includes(",")) {
      throw new InvalidQuestionError(
        `${where}: ${shown(item)} contains a comma (answers list items separated by commas)`,
      );
    }
    const key = pyStrip(item).toLowerCase();
    if (key === NONE_ANSWER) {
      throw new InvalidQuestionError(
        `${where}: ${shown(item)} is reserved (the answer 'none' means no item)`,
      );
    }
    if (seen.has(key)) throw new InvalidQuestionError(`${where}: duplicate item ${shown(item)}`);
    seen.add(key);
  });
}

/**
 * Items by name (any case) or number from 1, separated by commas; "" or "none" is the
 * empty set. The answer is the set's mask: bit i set when item i is chosen.
 */
function parseAnswer(text: string, question: Question): bigint {
  const items = itemsOf(question).map((item) => pyStrip(item).toLowerCase());
  const value = pyStrip(text);
  if (!value || value.toLowerCase() === NONE_ANSWER) return 0n;
  let mask = 0n;
  for (const part of value.split(",")) {
    const name = pyStrip(part).toLowerCase();
    let index = items.indexOf(name);
    if (index < 0) {
      const number = pyDigits(name);
      if (number === null || number < 1n || number > BigInt(items.length)) {
        throw new InvalidAnswerError(
          `answer must be ${hint(question)}, got ${reprStr(text)} (${reprStr(pyStrip(part))} is not an item)`,
        );
      }
      index = Number(number) - 1;
    }
    mask |= 1n << BigInt(index);
  }
  return mask;
}

/** A multi-select question (``Question.multi_select``): the answer is the chosen items' mask. */
export const MULTI_SELECT: QuestionType = registerQuestionType({
  wireCase: "multiSelect",
  parseAnswer,
  answerHint: hint,
  check,
  choices: () => null,
  parts: () => [],
});
