// Regenerate the message code in src/gen from proto/ (protoc-gen-es through the Python
// venv's grpc_tools.protoc, so no second protoc is needed). `make web` runs it; `--out DIR`
// generates elsewhere (the staleness test).
import { execFileSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const web = resolve(here, "..");
const repo = resolve(web, "../..");
const python = process.env.PYTHON ?? resolve(repo, ".venv/bin/python");
const at = process.argv.indexOf("--out");
const out = at > 0 ? resolve(process.argv[at + 1]) : resolve(web, "src/gen");
execFileSync(
  python,
  [
    "-m", "grpc_tools.protoc",
    `--plugin=protoc-gen-es=${resolve(web, "node_modules/.bin/protoc-gen-es")}`,
    `--es_out=${out}`,
    "--es_opt=target=ts,import_extension=none",
    `-I${resolve(repo, "proto")}`,
    resolve(repo, "proto/deniable/v1/aggregator.proto"),
  ],
  { stdio: "inherit" },
);
