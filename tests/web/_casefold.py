"""The page's casefold table (client/web/src/store/casefold.ts), from Python and Node.

The table lists where Python's ``str.casefold`` differs from JavaScript's lowercasing of
one code point, as runs of code points mapped with a common offset and a list of the rest.
``python -m tests.web._casefold`` rewrites it (Node on the PATH; the Python the client uses,
whose Unicode version is the one matched); ``tests/web/test_fixtures.py`` checks it.
"""

from __future__ import annotations

import json
import subprocess
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


TABLE = Path(__file__).resolve().parents[2] / "client/web/src/store/casefold.ts"


def render(node: str = "node") -> str:
    """The table's TypeScript, from Python's case folding and Node's lowercasing."""
    lowered = json.loads(
        subprocess.run([node, "-e", _LOWER], capture_output=True, check=True).stdout
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
    flat = ",".join(f"{start},{length},{offset}" for start, length, offset in runs)
    pairs = ",\n  ".join(f"[{code}, {json.dumps(text)}]" for code, text in rest)
    return (
        "/** Where Python's casefold differs from JS lowercasing (Unicode "
        f"{unicodedata.unidata_version}; tests/web/_casefold.py). */\n\n"
        "/** Runs of code points folded by one offset: start, length, offset, repeated. */\n"
        f"export const FOLD_RUNS: readonly number[] = [{flat}];\n\n"
        "/** Code points folded into several. */\n"
        f"export const FOLD_MANY: readonly (readonly [number, string])[] = [\n  {pairs},\n];\n"
    )


if __name__ == "__main__":
    TABLE.write_text(render(), encoding="utf-8")
