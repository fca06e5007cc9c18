#!/usr/bin/env node
// The `dshkit` command of the npm package: runs the native binary of this
// machine's platform package (see ../platform.js) with the same arguments and
// stdio, and ends as it ended: its exit code, or the signal that stopped it.
// Signals sent to this launcher are passed on to the binary.

import { resolveBinary } from '../platform.js';

const { spawn } = process.getBuiltinModule('node:child_process');
const { constants } = process.getBuiltinModule('node:os');

/** The signals passed on to the binary (those a launcher can catch where it runs). */
const FORWARDED = process.platform === 'win32'
  ? ['SIGINT', 'SIGTERM', 'SIGBREAK']
  : ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2', 'SIGWINCH'];

let binary;
try {
  binary = resolveBinary();
} catch (error) {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit', windowsHide: false });
const forward = (signal) => {
  try {
    child.kill(signal);
  } catch {
    // The binary has already exited: its own exit ends this launcher.
  }
};
for (const signal of FORWARDED) process.on(signal, forward);

child.on('error', (error) => {
  process.stderr.write(`dshkit: could not start ${binary}: ${error.message}\n`);
  process.exit(1);
});
child.on('exit', (code, signal) => {
  for (const name of FORWARDED) process.off(name, forward);
  if (signal) {
    // Ending by the same signal tells the caller (a shell, npm) how it ended;
    // where that signal does not end a process, the shell's convention does.
    process.exitCode = 128 + (constants.signals[signal] ?? 0);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
