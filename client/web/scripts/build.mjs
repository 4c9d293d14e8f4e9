// Build the committed bundle: dist/deniable.js, dist/deniable.css, dist/index.html, the icon, and
// dist/SOURCES.json (the SHA-256 of every file the bundle is built from, so that a test
// without Node can tell a stale bundle). The build is deterministic: the same sources give
// the same bytes. `make web` runs it; `--out DIR` builds elsewhere (the staleness test).
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync, copyFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const web = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const at = process.argv.indexOf("--out");
const out = at > 0 ? resolve(process.argv[at + 1]) : join(web, "dist");
mkdirSync(out, { recursive: true });

await build({
  entryPoints: [join(web, "src/main.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022"],
  platform: "browser",
  legalComments: "none",
  charset: "utf8",
  outfile: join(out, "deniable.js"),
  logLevel: "warning",
});
for (const file of ["deniable.css", "favicon.svg"]) copyFileSync(join(web, "static", file), join(out, file));

// index.html names its script and style with Subresource Integrity hashes, so that the
// page's one hash pins all of it (docs/security.md: pinning the bundle).
const integrity = (file) =>
  `sha384-${createHash("sha384").update(readFileSync(join(out, file))).digest("base64")}`;
let html = readFileSync(join(web, "static", "index.html"), "utf8");
for (const [tag, file] of [['href="/static/deniable.css"', "deniable.css"], ['src="/static/deniable.js"', "deniable.js"]]) {
  if (!html.includes(tag)) throw new Error(`static/index.html does not name ${file} as ${tag}`);
  html = html.replace(tag, `${tag} integrity="${integrity(file)}"`);
}
writeFileSync(join(out, "index.html"), html);

function walk(folder) {
  return readdirSync(folder)
    .sort()
    .flatMap((name) => {
      const path = join(folder, name);
      return statSync(path).isDirectory() ? walk(path) : [path];
    });
}
const inputs = [
  ...walk(join(web, "src")),
  ...walk(join(web, "static")),
  join(web, "scripts/build.mjs"),
  join(web, "package.json"),
  join(web, "package-lock.json"),
];
const sources = Object.fromEntries(
  inputs.map((path) => [
    relative(web, path).split("\\").join("/"),
    createHash("sha256").update(readFileSync(path)).digest("hex"),
  ]),
);
writeFileSync(join(out, "SOURCES.json"), JSON.stringify({ sources }, null, 2) + "\n");
