"""Reading stored reports back from log rows, to compare ids and payloads byte for byte."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from deniable.aggregator.storage.codec import Hasher, ReportIds, decode_log

__all__ = ["StoredRows"]


class _Row:
    """One decoded log row: its ids, payloads, and its ids' fingerprints in sorted order."""

    def __init__(self, data: bytes, hasher: Hasher) -> None:
        self.ids, self.payloads = decode_log(data)
        prints = np.empty(len(self.ids), dtype=np.uint64)
        for group in self.ids.groups:
            prints[group.rows] = group.prints_for(hasher)
        self.order = np.argsort(prints, kind="stable")
        self.sorted = prints[self.order]

    def payloads_of(self, wanted: Sequence[tuple[bytes, int]]) -> list[bytes | None]:
        """For each (report id, fingerprint): the stored payload of that id, or None."""
        keys = np.fromiter((fingerprint for _, fingerprint in wanted), np.uint64, len(wanted))
        first = np.searchsorted(self.sorted, keys, "left")
        last = np.searchsorted(self.sorted, keys, "right")
        single = (last - first == 1).all()
        if single:  # the usual case: one stored id per fingerprint, read in one pass
            ats = self.order[first].tolist()
            stored = self.ids.take(ats) if isinstance(self.ids, ReportIds) else None
            if stored is not None:
                return [
                    self.payloads[at] if held == report_id else None
                    for (report_id, _), at, held in zip(wanted, ats, stored, strict=True)
                ]
        found: list[bytes | None] = []
        for (report_id, _), begin, end in zip(wanted, first.tolist(), last.tolist(), strict=True):
            payload = None
            for at in self.order[begin:end].tolist():  # usually none or one
                if self.ids[at] == report_id:
                    payload = self.payloads[at]
                    break
            found.append(payload)
        return found


class StoredRows:
    """Log rows read while resolving one group of batches, each decoded once."""

    def __init__(self, db: sqlite3.Connection, hasher: Hasher) -> None:
        self.db, self.hasher = db, hasher
        self._rows: dict[int, _Row] = {}

    def row(self, seq: int) -> _Row:
        """Log row ``seq``, read and decoded on first use."""
        row = self._rows.get(seq)
        if row is None:
            (data,) = self.db.execute("SELECT reports FROM log WHERE seq = ?", (seq,)).fetchone()
            row = self._rows[seq] = _Row(bytes(data), self.hasher)
        return row

    def payloads(self, wanted: Sequence[tuple[bytes, int, Sequence[int]]]) -> list[bytes | None]:
        """For each (report id, fingerprint, log rows that may hold it): the stored payload.

        None where none of those rows holds the id. Each row is read once, and all the ids
        looked for in it are found with one search.
        """
        by_seq: dict[int, list[int]] = {}
        for at, (_, _, seqs) in enumerate(wanted):
            for seq in seqs:
                by_seq.setdefault(seq, []).append(at)
        found: list[bytes | None] = [None] * len(wanted)
        for seq in sorted(by_seq):
            ats = [at for at in by_seq[seq] if found[at] is None]
            if not ats:
                continue
            hits = self.row(seq).payloads_of([(wanted[at][0], wanted[at][1]) for at in ats])
            for at, payload in zip(ats, hits, strict=True):
                if payload is not None:
                    found[at] = payload
        return found
