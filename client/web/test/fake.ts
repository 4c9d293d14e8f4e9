/** Test doubles: yes/no questions with a mechanism whose ε is given (no registry needed). */

import { create } from "@bufbuild/protobuf";
import { Fraction } from "../src/core/fraction";
import {
  type Question,
  QuestionSchema,
  type Survey,
  SurveySchema,
  SurveyState,
} from "../src/gen/deniable/v1/aggregator_pb";
import type { Mechanism, Truth } from "../src/mechanisms/types";
import type { Prepared } from "../src/policy/policy";
import type { QuestionType } from "../src/questions/types";

/** A yes/no question with randomized response at ``alpha``. */
export function yesNo(id: string, alpha = 0.5, text = `Question ${id}?`): Question {
  return create(QuestionSchema, {
    id,
    text,
    kind: { case: "binary", value: {} },
    mechanism: { kind: { case: "randomizedResponse", value: { alpha } } },
  });
}

/** An open survey of these questions. */
export function survey(id: string, ...questions: Question[]): Survey {
  return create(SurveySchema, { id, title: `Survey ${id}`, questions, state: SurveyState.OPEN });
}

const type: QuestionType = {
  wireCase: "binary",
  parseAnswer: (text) => text === "yes",
  answerHint: () => "yes or no",
  check: () => undefined,
  choices: () => ["yes", "no", "y", "n"],
  parts: () => [],
};

/** A mechanism of the given ε that reports the truth (planning never looks at its value). */
export function mechanism(epsilon: number, ratio: Fraction | null = Fraction.of(3)): Mechanism {
  return {
    name: "randomized_response",
    ratio,
    epsilon,
    fixedBytes: 0,
    perturb: (truth: Truth) => ({ case: "bit", value: Boolean(truth) }),
  };
}

/** Each question of the survey prepared with a mechanism of ``epsilon``. */
export function prepared(of: Survey, epsilon = 1.0986122886681098): Map<string, Prepared> {
  return new Map(
    of.questions.map((question) => [question.id, { question, mechanism: mechanism(epsilon), type }]),
  );
}

/** A yes answer to every question. */
export function yesToAll(of: Survey): Map<string, Truth> {
  return new Map(of.questions.map((question) => [question.id, true]));
}
