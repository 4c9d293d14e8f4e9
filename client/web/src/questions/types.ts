/** The QuestionType interface: how a kind of question reads answers and is shown. */

import type { Question } from "../gen/deniable/v1/aggregator_pb";
import type { Truth } from "../mechanisms/types";

export interface QuestionType {
  /** The oneof case in ``deniable.v1.Question.kind`` ("binary", "categorical"...). */
  readonly wireCase: NonNullable<Question["kind"]["case"]>;
  /** The true answer from its text, as ``deniable answer`` reads it; throws InvalidAnswerError. */
  parseAnswer(text: string, question: Question): Truth;
  /** A short hint of what an answer looks like, as the CLI's ``answer_hint``. */
  answerHint(question: Question): string;
  /**
   * Refuse a question whose domain is outside the surveys' limits (as the Python type's
   * ``check``); throws ``RefusedError``.
   */
  check(question: Question): void;
}
