"""Write src/store/casefold.ts: where Python's ``str.casefold`` differs from JS lowercasing.

Run with the Python the client uses (its Unicode version is the one matched) and Node on the
PATH: ``python scripts/casefold.py``. Node lowercases every code point alone; the table keeps
each one whose Python case folding differs, as runs of one code point mapped with a common
offset and a list of the rest.
"""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

_LOWER = """
const out = {};
for (let c = 0; c <= 0x10ffff; c++) {
  if (c >= 0xd800 && c <= 0xdfff) continue;
  const s = String.fromCodePoint(c);
  const lower = s.toLowerCase();
  if (lower !== s) out[c] = [...lower].map((x) => x.codePointAt(0));
}
process.stdout.write(JSON.stringify(out));
"""


def main() -> None:
    """Compare, encode and write the table."""
    lowered = json.loads(
        subprocess.run(["node", "-e", _LOWER], capture_output=True, check=True).stdout
    )
    runs: list[list[int]] = []  # [start, length, offset]
    rest: list[tuple[int, str]] = []
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        folded = [ord(c) for c in chr(code).casefold()]
        if folded == lowered.get(str(code), [code]):
            continue
        if len(folded) == 1:
            offset = folded[0] - code
            last = runs[-1] if runs else None
            if last and last[0] + last[1] == code and last[2] == offset:
                last[1] += 1
            else:
                runs.append([code, 1, offset])
        else:
            rest.append((code, "".join(map(chr, folded))))
    target = Path(__file__).resolve().parent.parent / "src/store/casefold.ts"
    flat = ",".join(f"{start},{length},{offset}" for start, length, offset in runs)
    pairs = ",\n  ".join(f"[{code}, {json.dumps(text)}]" for code, text in rest)
    target.write_text(
        "/** Where Python's casefold differs from JS lowercasing (Unicode "
        f"{unicodedata.unidata_version}; scripts/casefold.py). */\n\n"
        "/** Runs of code points folded by one offset: start, length, offset, repeated. */\n"
        f"export const FOLD_RUNS: readonly number[] = [{flat}];\n\n"
        "/** Code points folded into several. */\n"
        f"export const FOLD_MANY: readonly (readonly [number, string])[] = [\n  {pairs},\n];\n",
        encoding="utf-8",
    )
    print(f"{len(runs)} runs, {len(rest)} multi-character foldings -> {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
