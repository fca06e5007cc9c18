// Runs @netlify/build-info on a directory N times and prints one JSON line with the
// per-run wall times (ms) and what it found, for `cargo xtask bench detect`.
import { getBuildInfo } from "@netlify/build-info/node";

const [dir, runsText] = process.argv.slice(2);
const runs = Number(runsText || 5);
const times = [];
let info;
for (let i = 0; i < runs; i++) {
  const started = performance.now();
  info = await getBuildInfo({ projectDir: dir, rootDir: dir });
  times.push(performance.now() - started);
}
const frameworks = (info.frameworks || []).map((f) => f.id);
console.log(JSON.stringify({ times, frameworks, packages: (info.jsWorkspaces?.packages || []).length }));
