// The committed wire types are exactly what openapi-typescript writes from docs/openapi.json.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { cleanup, packageDir, repoRoot } from "./support.js";

test("src/generated/openapi.ts matches docs/openapi.json", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "folio-ts-gen-"));
  try {
    const out = path.join(dir, "openapi.ts");
    const bin = path.join(packageDir, "node_modules/.bin/openapi-typescript");
    const run = spawnSync(bin, [path.join(repoRoot, "docs/openapi.json"), "-o", out], { encoding: "utf8" });
    assert.equal(run.status, 0, `openapi-typescript failed: ${run.stderr}`);
    const committed = readFileSync(path.join(packageDir, "src/generated/openapi.ts"), "utf8");
    assert.ok(
      readFileSync(out, "utf8") === committed,
      "src/generated/openapi.ts is out of date with docs/openapi.json: run `npm run generate` in clients/typescript and commit it",
    );
  } finally {
    cleanup(dir);
  }
});
