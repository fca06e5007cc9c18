// Which npm package holds the dshkit binary for this machine, and where in it.
// The one home of that rule: the `dshkit` command's launcher (bin/dshkit.js) and
// the DSH plugin (index.js, when its row names no `config.binary`) both ask here.
//
// The binaries ship as optional dependencies of the `dshkit` package, one per
// platform, each declaring `os`, `cpu` and (on Linux) `libc`, so the package
// manager installs only the one that fits. A package is found from this file's
// own real path, as Node resolves the package's own imports: never from the
// working directory, never from a build directory.
//
// Import-free on purpose: Node built-ins come through process.getBuiltinModule.

const fs = process.getBuiltinModule('node:fs');
const path = process.getBuiltinModule('node:path');
const { createRequire } = process.getBuiltinModule('node:module');
const { fileURLToPath } = process.getBuiltinModule('node:url');

/** The npm scope of the platform packages. */
export const SCOPE = '@dshkit';

/**
 * Every platform a package exists for: its name under the scope, and the
 * `os`, `cpu` and `libc` it declares (Node's `process.platform`, `process.arch`,
 * and npm's libc names). The macOS packages are built on macOS only.
 */
export const PLATFORMS = [
  { name: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc', binary: 'dshkit' },
  { name: 'linux-x64-musl', os: 'linux', cpu: 'x64', libc: 'musl', binary: 'dshkit' },
  { name: 'win32-x64', os: 'win32', cpu: 'x64', binary: 'dshkit.exe' },
  { name: 'darwin-x64', os: 'darwin', cpu: 'x64', binary: 'dshkit' },
  { name: 'darwin-arm64', os: 'darwin', cpu: 'arm64', binary: 'dshkit' },
];

/** The folder inside a platform package that holds the binary. */
export const BINARY_DIR = 'bin';

/** This machine: `os`, `cpu`, and on Linux the `libc` (glibc or musl). */
export function currentMachine() {
  const machine = { os: process.platform, cpu: process.arch };
  if (machine.os === 'linux') machine.libc = linuxLibc();
  return machine;
}

/** glibc when Node itself runs on it (its report names the runtime glibc), else musl. */
function linuxLibc() {
  const report = process.report;
  const excluded = report?.excludeNetwork;
  try {
    if (report) report.excludeNetwork = true;
    return report?.getReport?.().header?.glibcVersionRuntime ? 'glibc' : 'musl';
  } catch {
    return 'musl';
  } finally {
    if (report && excluded !== undefined) report.excludeNetwork = excluded;
  }
}

/** The platform entry that fits `machine`, or undefined. */
export function platformFor(machine) {
  return PLATFORMS.find((p) => p.os === machine.os && p.cpu === machine.cpu && (p.libc === undefined || p.libc === machine.libc));
}

/** `os cpu[ libc]`, as an error message names the machine. */
export function describeMachine(machine) {
  return [machine.os, machine.cpu, machine.libc].filter(Boolean).join(' ');
}

/**
 * The absolute path of the dshkit binary the platform package installed beside
 * this package. Throws an Error that names the platform (os, cpu, libc) when no
 * package fits this machine, or when the one that fits is not installed.
 */
export function resolveBinary(machine = currentMachine()) {
  const platform = platformFor(machine);
  const supported = PLATFORMS.map((p) => `${SCOPE}/${p.name}`).join(', ');
  if (!platform) {
    throw new Error(`dshkit has no binary package for this platform (${describeMachine(machine)}); the packages are ${supported}. Build it from source instead: cargo install --path crates/dshkit`);
  }
  const packageName = `${SCOPE}/${platform.name}`;
  const here = fs.realpathSync(fileURLToPath(import.meta.url));
  let manifest;
  try {
    manifest = createRequire(here).resolve(`${packageName}/package.json`);
  } catch {
    throw new Error(`dshkit needs ${packageName} on this platform (${describeMachine(machine)}), and it is not installed beside ${path.dirname(here)}; install dshkit again without --omit=optional / --no-optional`);
  }
  const binary = path.join(path.dirname(manifest), BINARY_DIR, platform.binary);
  if (!fs.existsSync(binary)) {
    throw new Error(`dshkit's platform package ${packageName} has no ${BINARY_DIR}/${platform.binary} (${path.dirname(manifest)}); install dshkit again`);
  }
  return binary;
}
