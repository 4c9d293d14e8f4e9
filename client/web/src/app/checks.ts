/** Refusing a survey before anything is asked: wrong id, closed, unsafe texts, tokens (as ``check_open``). */

import { type JsonValue, toJson } from "@bufbuild/protobuf";
import { RefusedError } from "../index";
import { type Survey, SurveySchema, SurveyState } from "../gen/deniable/v1/aggregator_pb";
import { shown } from "../core/pytext";
import { describeCharacter, firstUnsafe, visible } from "../text/unsafe";

/** A survey id as the aggregator assigns them. */
export const SURVEY_ID = /^[a-z0-9]{1,64}$/;
/** A question id, unique within its survey. */
export const QUESTION_ID = /^[A-Za-z0-9_.-]{1,64}$/;

const NOT_SENT = "refusing to answer, nothing was sent";

/** Refuse a survey other than the one asked for: its answers would be charged to it. */
export function checkRequested(survey: Survey, surveyId: string): void {
  if (survey.id !== surveyId) {
    throw new RefusedError(
      `asked for survey ${visible(surveyId)}, the aggregator sent survey ${shown(survey.id)}; ${NOT_SENT}`,
    );
  }
}

/**
 * Refuse a survey that does not accept reports, or whose ids no aggregator assigns
 * (Python's ``check_open``): the ids are shown and written to the memo and ledger.
 */
export function checkOpen(survey: Survey): void {
  if (!SURVEY_ID.test(survey.id)) {
    throw new RefusedError(`the aggregator sent an invalid survey id ${shown(survey.id)}; ${NOT_SENT}`);
  }
  const seen = new Set<string>();
  survey.questions.forEach((question, index) => {
    if (!QUESTION_ID.test(question.id) || seen.has(question.id)) {
      const problem = seen.has(question.id) ? "a repeated" : "an invalid";
      throw new RefusedError(
        `survey ${survey.id}: the aggregator sent ${problem} question id ${shown(question.id)} ` +
          `(question ${index + 1}); ${NOT_SENT}`,
      );
    }
    seen.add(question.id);
  });
  if (survey.state !== SurveyState.OPEN) throw new RefusedError(`survey '${survey.id}' is closed`);
  if (survey.questions.length === 0) throw new RefusedError(`survey '${survey.id}' has no questions`);
}

function strings(value: JsonValue, path: string, out: [string, string][]): void {
  if (typeof value === "string") out.push([path, value]);
  else if (Array.isArray(value)) value.forEach((item, index) => strings(item, `${path}[${index}]`, out));
  else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) strings(item, path ? `${path}.${key}` : key, out);
  }
}

/**
 * Refuse a survey with a control character, line break or bidi override in any text (as
 * the daemon refuses to store them): a bidi override could reverse what is read, and the
 * CLI would show such a survey only as escapes.
 */
export function checkTexts(survey: Survey): void {
  const found: [string, string][] = [];
  strings(toJson(SurveySchema, survey, { useProtoFieldName: true }), "", found);
  for (const [where, text] of found) {
    const unsafe = firstUnsafe(text);
    if (unsafe !== null) {
      throw new RefusedError(
        `survey ${visible(survey.id)}: ${where} contains ${describeCharacter(unsafe.character)} at ` +
          `position ${unsafe.position}; survey texts may not hold control characters, line breaks or ` +
          `bidirectional overrides, since they could change what you read; ${NOT_SENT}`,
      );
    }
  }
}

/** Refuse a survey that needs an enrollment token: this page does not take tokens. */
export function checkEnrollment(survey: Survey): void {
  if (survey.enrollmentRequired) {
    throw new RefusedError(
      `survey '${survey.id}' requires an enrollment token, which this page does not take: answer it ` +
        `with the deniable command-line client (deniable answer --token-file FILE); ${NOT_SENT}`,
    );
  }
}

/** Every check of a fetched survey, in the CLI's order. */
export function checkSurvey(survey: Survey, surveyId: string): void {
  checkRequested(survey, surveyId);
  checkOpen(survey);
  checkTexts(survey);
  checkEnrollment(survey);
}
