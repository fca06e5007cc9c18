// browserless, the browser pool engine of dshkit's pool test, on loopback with
// the system Chromium. Run with Node 24 (this install's `node`) from this
// folder, whose node_modules holds playwright-core:
//
//   POOL_STATE_DIR=/tmp/x TOKEN=... CONCURRENT=2 QUEUED=2 TIMEOUT=120000 \
//     node_modules/node/bin/node start.mjs
//
// browserless reads its own settings from the environment (HOST, PORT, TOKEN,
// CONCURRENT, QUEUED, TIMEOUT; see its config.js). What this script adds, so no
// browser is ever downloaded:
// - Chromium: browserless takes the chromium routes' binary from
//   playwright-core's executable path under PLAYWRIGHT_BROWSERS_PATH; that path
//   is made a link to the system Chromium (CHROMIUM; by default Debian's
//   headless shell, as dshkit prefers on Linux, else its full Chromium).
// - Routes: browserless refuses to start when a route's browser has no binary
//   (branded Chrome, Edge, Firefox, WebKit here). ROUTES names a folder holding
//   only the chromium and management routes, as its own Chromium image does
//   (docker/chromium leaves the others out of its build).
// - Port: PORT=0 (the default here) takes a free port; the line
//   `browser-pool: listening on ws://127.0.0.1:PORT` says which, once it listens.
// SIGTERM or SIGINT stops it with its browsers.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const state = process.env.POOL_STATE_DIR;
if (!state) {
  console.error('browser-pool: set POOL_STATE_DIR to a folder of its own');
  process.exit(2);
}
const chromium =
  process.env.CHROMIUM ||
  ['/usr/lib/chromium/chromium-headless-shell', '/usr/lib/chromium/chromium'].find((p) => fs.existsSync(p)) ||
  '/usr/lib/chromium/chromium';
if (!fs.existsSync(chromium)) {
  console.error(`browser-pool: no Chromium at ${chromium}; set CHROMIUM or run: apt-get install -y chromium`);
  process.exit(2);
}
const dir = (name) => {
  const made = path.join(state, name);
  fs.mkdirSync(made, { recursive: true });
  return made;
};
process.env.HOST ??= '127.0.0.1';
process.env.PORT ??= '0';
process.env.PLAYWRIGHT_BROWSERS_PATH = dir('browsers');
process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
process.env.PUPPETEER_SKIP_DOWNLOAD = '1';
process.env.DATA_DIR = dir('data');
process.env.DOWNLOAD_DIR = dir('downloads');
process.env.METRICS_JSON_PATH = path.join(state, 'metrics.json');
process.env.ENABLE_DEBUGGER = 'false';

const { default: playwright } = await import('playwright-core');
const executable = playwright.chromium.executablePath();
fs.mkdirSync(path.dirname(executable), { recursive: true });
fs.rmSync(executable, { force: true });
fs.symlinkSync(chromium, executable);

const routes = dir('routes');
const builtRoutes = path.join(here, 'node_modules/@browserless.io/browserless/build/routes');
for (const name of ['chromium', 'management']) {
  const link = path.join(routes, name);
  fs.rmSync(link, { force: true });
  fs.symlinkSync(path.join(builtRoutes, name), link);
}
process.env.ROUTES = routes;

const { Browserless } = await import('@browserless.io/browserless');
const browserless = new Browserless();
await browserless.start();
const { port } = browserless.server.server.address();
browserless.config.setPort(port);
console.log(`browser-pool: listening on ws://127.0.0.1:${port}`);

const stop = async () => {
  await browserless.stop();
  process.exit(0);
};
process.once('SIGTERM', stop).once('SIGINT', stop);
