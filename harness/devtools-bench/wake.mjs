// A Cordis runtime with dshkit's collector, driven through stdin, for the wake
// latency and core memory figures of `cargo xtask bench devtools`.
// argv: <cordis module> <collector module> <registry dir>
// stdin lines:
//   wake        emits bench/wake; prints `woke <epoch µs at the emit>`
//   burst N M   emits bench/burst N times (yielding between batches, as a live
//               process would), then bench/marker with one argument per... M
//               is the marker's number, echoed as `burst M done`
import readline from 'node:readline';

const [cordisPath, collectorPath, dir] = process.argv.slice(2);
const { Context } = await import(cordisPath);
const { startCollector } = await import(collectorPath);

const root = new Context();
root.on('bench/wake', () => {});
root.on('bench/burst', () => {});
root.on('bench/marker', () => {});
const collector = startCollector(root, { dir, label: 'bench-wake' });
await new Promise((resolve) => setTimeout(resolve, 20));
console.log(`ready ${collector.socket}`);

const epochMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);
readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const [command, count, marker] = line.trim().split(/\s+/);
  if (command === 'wake') {
    const at = epochMicros();
    root.emit('bench/wake');
    console.log(`woke ${at}`);
  } else if (command === 'burst') {
    const total = Number(count);
    for (let done = 0; done < total; done += 1000) {
      for (let i = 0; i < Math.min(1000, total - done); i++) root.emit('bench/burst', i);
      await new Promise((resolve) => setImmediate(resolve));
    }
    // The marker's argument count carries its number (metadata the core sees).
    root.emit('bench/marker', ...Array.from({ length: Number(marker) }, () => 0));
    console.log(`burst ${marker} done`);
  }
});
