// Run the library's unit tests (test/*.test.ts) under Node's own test runner, after
// bundling each with esbuild into build/ (WebCrypto is global in Node 20, as in browsers).
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const web = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(web, "build/test");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const tests = readdirSync(join(web, "test")).filter((name) => name.endsWith(".test.ts")).sort();
await build({
  entryPoints: tests.map((name) => join(web, "test", name)),
  bundle: true,
  format: "esm",
  platform: "node",
  target: ["node20"],
  outdir: out,
  outExtension: { ".js": ".mjs" },
  logLevel: "warning",
});
const files = tests.map((name) => join(out, name.replace(/\.ts$/, ".mjs")));
const run = spawnSync(process.execPath, ["--test", ...files], { stdio: "inherit" });
process.exit(run.status ?? 1);
