/** The QuestionType interface: how a kind of question reads answers and is shown. */

import type { Question } from "../gen/deniable/v1/aggregator_pb";
import type { Truth } from "../mechanisms/types";

/** A kind of question: how its answers are read and shown, and which domains it refuses. */
export interface QuestionType {
  /** The oneof case in ``deniable.v1.Question.kind`` ("binary", "categorical"...). */
  readonly wireCase: NonNullable<Question["kind"]["case"]>;
  /** The true answer from its text, as ``deniable answer`` reads it; throws InvalidAnswerError. */
  parseAnswer(text: string, question: Question): Truth;
  /** A short hint of what an answer looks like, as the CLI's ``answer_hint``. */
  answerHint(question: Question): string;
  /**
   * Refuse a question whose domain is outside the surveys' limits (as the Python type's
   * ``check``); throws ``InvalidQuestionError`` whose message starts with the field's path.
   */
  check(question: Question): void;
  /** The only answers a prompt accepts, when there are a few (Python's ``choices``); null: free text. */
  choices(question: Question): string[] | null;
  /**
   * Questions a prompt asks in turn for this one (Python's ``parts``: a joint question's
   * parts, each a question of its own kind); empty: ask it whole.
   */
  parts(question: Question): Question[];
  /** One answer from the answers to ``parts``, in order (Python's ``combine``); types with parts only. */
  combine?(question: Question, answers: readonly Truth[]): Truth;
}
