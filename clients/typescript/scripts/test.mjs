#!/usr/bin/env node
// Runs the compiled suite (build/test/*.test.js) one file at a time: the
// files start servers and workers whose timing tests should not share the
// machine's cores with each other. Node 20.10 and later do it in one run
// (--test-concurrency=1); older ones run each file in turn.
import { readdirSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

const dir = join("build", "test");
const files = readdirSync(dir).filter((f) => f.endsWith(".test.js")).sort().map((f) => join(dir, f));
const [major, minor] = process.versions.node.split(".").map(Number);
const runs = major > 20 || (major === 20 && minor >= 10) ? [["--test-concurrency=1", ...files]] : files.map((f) => [f]);
// A test that hangs fails after a minute (Node 20.11 and later), and a run
// that does not end (a failed test's stream or worker left behind) is
// ended after five minutes: CI hears of it well before its own limit.
const timeout = major > 20 || (major === 20 && minor >= 11) ? ["--test-timeout=60000"] : [];
let failed = false;
for (const args of runs) {
  const r = spawnSync(process.execPath, ["--test", ...timeout, ...args], { stdio: "inherit", timeout: 5 * 60_000, killSignal: "SIGKILL" });
  if (r.error) console.error(`test run ended: ${r.error.message}`);
  failed ||= r.status !== 0;
}
process.exit(failed ? 1 : 0);
