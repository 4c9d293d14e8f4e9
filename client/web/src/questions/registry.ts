/** The question-type registry: one entry per wire oneof case, added by each type's module. */

import { RefusedError } from "../core/errors";
import { reprStr } from "../core/pytext";
import type { Question } from "../gen/deniable/v1/aggregator_pb";
import type { QuestionType } from "./types";

const types = new Map<string, QuestionType>();

/** Add a question type (each question module calls this once). */
export function registerQuestionType(type: QuestionType): QuestionType {
  if (types.has(type.wireCase)) throw new Error(`question type ${type.wireCase} registered twice`);
  types.set(type.wireCase, type);
  return type;
}

/** The question's type; throws ``RefusedError`` for a kind this page does not know. */
export function questionTypeOf(question: Question): QuestionType {
  const type = question.kind.case === undefined ? undefined : types.get(question.kind.case);
  if (type === undefined) {
    throw new RefusedError(
      `question ${reprStr(question.id)}: its question is of a kind this version of deniable does not ` +
        "know, so its privacy cannot be checked; refusing to answer, nothing was sent. A newer version " +
        "of deniable may support it",
    );
  }
  return type;
}
