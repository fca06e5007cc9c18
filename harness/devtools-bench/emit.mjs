// The collector's cost per dispatch on the real Cordis: 1M emits of one event with
// one listener, with no collector, with the collector and nobody attached, and
// with the collector and one attached core that reads and discards the facts,
// and the floor: a runtime with one `internal/dispatch` observer that does nothing.
// argv: <cordis module> <collector module> <registry dir>
// Prints one JSON line: median ns per emit over batches, per mode.
import net from 'node:net';

const [cordisPath, collectorPath, dir] = process.argv.slice(2);
const { Context } = await import(cordisPath);
const { startCollector } = await import(collectorPath);

const EMITS = 1_000_000;
const BATCH = 10_000;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function measure(root) {
  const perEmit = [];
  for (let done = 0; done < EMITS; done += BATCH) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) root.emit('bench/ping', i);
    perEmit.push(Number(process.hrtime.bigint() - start) / BATCH);
    // Let the socket drain between batches, as a live process would.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return median(perEmit);
}

function runtime() {
  const root = new Context();
  root.on('bench/ping', () => {});
  return root;
}

const results = {};
results.none = await measure(runtime());
{
  // The floor: what Cordis costs for one `internal/dispatch` observer that does nothing.
  const root = runtime();
  root.on('internal/dispatch', () => {}, { global: true });
  results.floor = await measure(root);
}
{
  const root = runtime();
  const collector = startCollector(root, { dir, label: 'bench' });
  await new Promise((resolve) => setTimeout(resolve, 50));
  results.idle = await measure(root);
  const core = net.connect(collector.socket);
  let bytes = 0;
  core.on('data', (chunk) => { bytes += chunk.length; });
  await new Promise((resolve) => core.on('connect', resolve));
  await new Promise((resolve) => setTimeout(resolve, 50));
  results.attached = await measure(root);
  results.attachedBytes = bytes;
  core.destroy();
  collector.dispose();
}
console.log(JSON.stringify(results));
