/** One true answer into one randomized report: the only place a truth meets a mechanism. */

import { create } from "@bufbuild/protobuf";
import { type Question, type Report, ReportSchema } from "./gen/deniable/v1/aggregator_pb";
import type { Mechanism, Truth } from "./mechanisms/types";
import { type ByteSource, osSource, readAhead } from "./sampling/source";

const ID_BYTES = 16;

const HEX = "0123456789abcdef";

/** A fresh report id: 32 hex digits from 16 random bytes (the Python client's ``token_hex(16)``). */
export function newReportId(source: ByteSource = osSource): string {
  let id = "";
  for (const byte of source(ID_BYTES)) id += HEX[byte >> 4]! + HEX[byte & 15]!;
  return id;
}

/**
 * Perturb one true answer into a report, as the Python client's ``build_report``: the report
 * id is drawn first, then the mechanism's randomness; the report carries a copy of the
 * question's mechanism and the randomized value only.
 */
export function buildReport(
  surveyId: string,
  question: Question,
  mechanism: Mechanism,
  truth: Truth,
  source: ByteSource = osSource,
): Report {
  // The id's bytes and the mechanism's fixed bytes in one read (WebCrypto costs microseconds
  // a call): the same bytes, in the same order, as separate reads would give.
  const bytes = readAhead(source, ID_BYTES + mechanism.fixedBytes);
  const reportId = newReportId(bytes);
  const value = mechanism.perturb(truth, bytes);
  return create(ReportSchema, {
    reportId,
    surveyId,
    questionId: question.id,
    mechanism: question.mechanism,
    value,
  });
}
