// Loads a Chrome trace file in Chrome DevTools' own trace engine
// (@paulirish/trace_engine, the performance panel's model) and prints what it
// parsed: every slice (complete event) of every thread, as the panel would lay
// them out, with its depth in the thread's tree.
//
//   node read-trace.mjs ENGINE_DIR TRACE_FILE
//
// ENGINE_DIR is the installed package's folder (target/peers/trace-reader/
// node_modules/@paulirish/trace_engine). The engine reads nothing but the
// events given to it; to show it, the caller runs this under Node's permission
// model with reads allowed only in ENGINE_DIR, this script and TRACE_FILE, and
// every network entry point here fails loudly and is counted.
//
// Prints one JSON line: {engine, slices: [{name, cat, ts, dur, depth}],
// threads, networkAttempts}. A file the engine cannot read exits 2 with why.

import fs from 'node:fs';
import net from 'node:net';
import dns from 'node:dns';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [engineDir, traceFile] = process.argv.slice(2);
if (!engineDir || !traceFile) {
  console.error('usage: read-trace.mjs ENGINE_DIR TRACE_FILE');
  process.exit(64);
}

let networkAttempts = 0;
const refuse = (what) => function () {
  networkAttempts++;
  throw new Error(`the trace reader tried to reach the network (${what})`);
};
globalThis.fetch = refuse('fetch');
globalThis.WebSocket = refuse('WebSocket');
net.Socket.prototype.connect = refuse('net.Socket.connect');
net.connect = net.createConnection = refuse('net.connect');
dns.lookup = refuse('dns.lookup');
dns.promises.lookup = refuse('dns.promises.lookup');

const { version } = JSON.parse(fs.readFileSync(path.join(engineDir, 'package.json'), 'utf8'));
const Trace = await import(pathToFileURL(path.join(engineDir, 'models/trace/trace.js')).href);
const { polyfillDOMRect } = await import(pathToFileURL(path.join(engineDir, 'analyze-trace.mjs')).href);
// The engine is written for the browser: it needs DOMRect (its own polyfill).
polyfillDOMRect();

let events;
try {
  const parsed = JSON.parse(fs.readFileSync(traceFile, 'utf8'));
  events = parsed.traceEvents;
  if (!Array.isArray(events)) throw new Error('no traceEvents array');
} catch (error) {
  console.error(`not a Chrome trace: ${error.message}`);
  process.exit(2);
}

const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const data = model.parsedTrace()?.data;
if (!data) {
  console.error('the trace engine parsed nothing');
  process.exit(2);
}
const slices = [];
const threads = [];
for (const [pid, process] of data.Renderer.processes) {
  for (const [tid, thread] of process.threads) {
    threads.push({ pid, tid, name: thread.name ?? null, entries: thread.entries.length });
    for (const entry of thread.entries) {
      const node = data.Renderer.entryToNode.get(entry);
      slices.push({ name: entry.name, cat: entry.cat, ts: entry.ts, dur: entry.dur ?? null, depth: node?.depth ?? null });
    }
  }
}
console.log(JSON.stringify({ engine: `@paulirish/trace_engine@${version}`, slices, threads, networkAttempts }));
