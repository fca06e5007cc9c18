// The collector's cost per dispatch on the real Cordis: 1M emits of one event with
// one listener, with no collector, with the collector and nobody attached, and
// with the collector and one attached core that reads and discards the facts,
// and for reference a runtime with one `internal/dispatch` listener that does
// nothing (what observing through Cordis's own event would cost at least).
// The runtimes run side by side: each round times one batch on each, in an
// order that rotates, so a machine that slows down mid-run slows every mode
// alike; the added cost is the median of the per-round differences.
// argv: <cordis module> <collector module> <registry dir>
// Prints one JSON line: median ns per emit per mode, and the paired differences.
import net from 'node:net';
import path from 'node:path';

const [cordisPath, collectorPath, dir] = process.argv.slice(2);
const { Context } = await import(cordisPath);
const { startCollector } = await import(collectorPath);

const EMITS = 1_000_000;
// Small enough that one batch of facts (about 90 bytes each) stays within the
// collector's 1 MiB per core, so none is dropped and every one is paid for.
const BATCH = 5_000;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function runtime() {
  const root = new Context();
  root.on('bench/ping', () => {});
  root.on('bench/pong', () => {});
  return root;
}

// `same`: one event over and over (a burst the collector sends as one fact);
// `mixed`: two events in turn, so every dispatch is a fact of its own.
const PATTERN = process.env.EMIT_PATTERN === 'mixed' ? 'mixed' : 'same';
function batch(root) {
  const start = process.hrtime.bigint();
  if (PATTERN === 'mixed') for (let i = 0; i < BATCH; i++) root.emit(i & 1 ? 'bench/pong' : 'bench/ping', i);
  else for (let i = 0; i < BATCH; i++) root.emit('bench/ping', i);
  return Number(process.hrtime.bigint() - start) / BATCH;
}

const modes = { none: runtime(), floor: runtime(), idle: runtime(), attached: runtime() };
modes.floor.on('internal/dispatch', () => {}, { global: true });
const idleCollector = startCollector(modes.idle, { dir: path.join(dir, 'idle'), label: 'bench-idle' });
const collector = startCollector(modes.attached, { dir: path.join(dir, 'attached'), label: 'bench' });
await new Promise((resolve) => setTimeout(resolve, 50));
const core = net.connect(collector.socket);
let bytes = 0;
let dispatches = 0;
let pending = '';
let dropped = 0;
let marked = false;
let caughtUp = null;
core.setEncoding('utf8');
core.on('data', (chunk) => {
  bytes += chunk.length;
  pending += chunk;
  const lines = pending.split('\n');
  pending = lines.pop();
  for (const line of lines) {
    const { fact } = JSON.parse(line);
    if (fact?.kind === 'dropped') { dropped += fact.count; marked = true; }
    else if (fact?.name === 'bench/mark') marked = true;
    else if (fact?.kind === 'dispatch') dispatches += fact.repeat ?? 1;
  }
  if (caughtUp && marked) caughtUp();
});
await new Promise((resolve) => core.on('connect', resolve));
await new Promise((resolve) => setTimeout(resolve, 50));

const names = Object.keys(modes);
const perEmit = Object.fromEntries(names.map((name) => [name, []]));
// Warm every path first, untimed.
for (const name of names) batch(modes[name]);
for (let round = 0; round < EMITS / BATCH; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(round + k) % names.length];
    perEmit[name].push(batch(modes[name]));
  }
  // Let the core read every fact of the round before the next, as a core
  // keeping up would.
  // A mark after the round: once the core has it (or a count of dropped
  // facts, if the core fell behind by more than the collector buffers), the
  // round's facts are through.
  marked = false;
  modes.attached.emit('bench/mark');
  {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 5000);
      caughtUp = () => { clearTimeout(timer); resolve(); };
    });
    caughtUp = null;
  }
  await new Promise((resolve) => setImmediate(resolve));
}
const added = (name) => median(perEmit[name].map((ns, i) => ns - perEmit.none[i]));
const results = Object.fromEntries(names.map((name) => [name, median(perEmit[name])]));
results.addedIdle = added('idle');
results.addedAttached = added('attached');
results.addedFloor = added('floor');
results.attachedBytes = bytes;
results.attachedDispatchesSeen = dispatches;
results.attachedFactsDropped = dropped;
results.pattern = PATTERN;
// A machine's speed, for reading the figures: one iteration of an empty counting loop.
{
  const start = process.hrtime.bigint();
  let sum = 0;
  for (let i = 0; i < 1e7; i++) sum += i;
  results.loopNs = Number(process.hrtime.bigint() - start) / 1e7 + (sum < 0 ? 1 : 0);
}
core.destroy();
collector.dispose();
idleCollector.dispose();
console.log(JSON.stringify(results));
