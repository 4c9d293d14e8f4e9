/** A survey is refused before anything is asked: ids, state, texts and tokens, in the CLI's words. */

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkSurvey } from "../src/app/checks";
import { RefusedError } from "../src/core/errors";
import { SurveyState } from "../src/gen/deniable/v1/aggregator_pb";
import { survey, yesNo } from "./fake";

function refused(of: ReturnType<typeof survey>, pattern: RegExp, asked = of.id): void {
  assert.throws(
    () => checkSurvey(of, asked),
    (error: unknown) => error instanceof RefusedError && pattern.test(error.message),
  );
}

test("a sound open survey passes", () => {
  checkSurvey(survey("s1", yesNo("a"), yesNo("b")), "s1");
});

test("another survey than the one asked for, or ids no aggregator assigns, are refused", () => {
  refused(
    survey("s2", yesNo("a")),
    /^asked for survey s1, the aggregator sent survey 's2'; refusing to answer, nothing was sent$/,
    "s1",
  );
  refused(
    survey("S!", yesNo("a")),
    /^the aggregator sent an invalid survey id 'S!'; refusing to answer, nothing was sent$/,
  );
  refused(
    survey("s1", yesNo("a b")),
    /^survey s1: the aggregator sent an invalid question id 'a b' \(question 1\)/,
  );
  refused(
    survey("s1", yesNo("a"), yesNo("a")),
    /^survey s1: the aggregator sent a repeated question id 'a' \(question 2\)/,
  );
  refused(survey("s1", yesNo("a\u001b[2J")), /invalid question id 'a\\x1b\[2J'/);
});

test("a closed survey, one without questions, and one that needs a token are refused", () => {
  const closed = survey("s1", yesNo("a"));
  closed.state = SurveyState.CLOSED;
  refused(closed, /^survey 's1' is closed$/);
  refused(survey("s1"), /^survey 's1' has no questions$/);
  const enrolled = survey("s1", yesNo("a"));
  enrolled.enrollmentRequired = true;
  refused(enrolled, /^survey 's1' requires an enrollment token, which this page does not take/);
});

test("a control character, line break or bidi override in any text refuses the survey", () => {
  const hostile = survey("s1", yesNo("a", 0.5, "Did you cheat?\r\u202e"));
  refused(
    hostile,
    /^survey s1: questions\[0\]\.text contains U\+000D \(CR\) at position 14; .*refusing to answer, nothing was sent$/,
  );
  const title = survey("s1", yesNo("a"));
  title.title = "😀\u2028";
  refused(title, /^survey s1: title contains U\+2028 \(LINE SEPARATOR\) at position 1;/);
});
