// `cargo xtask bench dsh-plugin`, the Node half: the plugin's host half loaded with
// a minimal context (DSH's subprocess and tool services, reproduced with Node's
// child_process), against a raw JSON-RPC client talking to `dshkit mcp` directly,
// both calling the same cheap tool. Prints one JSON line.
//
// usage: node bench.mjs <plugin index.js> <dshkit binary> <calls>
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';

const [pluginPath, binary, callsArg] = process.argv.slice(2);
const CALLS = Number(callsArg ?? 1000);
const WARMUP = 100;
const TOOL = 'liveloop_browser';
const ARGS = { operation: 'list' };

function collector(stream, maxBytes) {
  let text = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk) => { if (text.length < maxBytes) text += chunk; });
  return { readFrom: (offset) => ({ text: text.slice(offset), nextOffset: text.length, lossy: false }) };
}

/** DSH's subprocess service, as far as the plugin uses it. */
function subprocess() {
  return {
    spawn(spec) {
      const mode = (m) => (m === 'pipe' ? 'pipe' : typeof m === 'object' ? 'pipe' : m === 'inherit' ? 'inherit' : 'ignore');
      const child = spawn(spec.argv[0], spec.argv.slice(1), {
        cwd: spec.cwd,
        env: { ...process.env, ...spec.env },
        stdio: [mode(spec.stdio.stdin), mode(spec.stdio.stdout), mode(spec.stdio.stderr)],
      });
      const collected = {
        stdout: typeof spec.stdio.stdout === 'object' ? collector(child.stdout, spec.stdio.stdout.maxBytes) : undefined,
        stderr: typeof spec.stdio.stderr === 'object' ? collector(child.stderr, spec.stdio.stderr.maxBytes) : undefined,
      };
      const done = new Promise((resolve) => child.on('close', (exitCode, signal) => resolve({ exitCode, signal })));
      return {
        pid: child.pid,
        stdin: child.stdin ?? undefined,
        stdout: spec.stdio.stdout === 'pipe' ? child.stdout : undefined,
        stderr: undefined,
        collected,
        done,
        terminate: () => child.kill('SIGTERM'),
      };
    },
  };
}

async function viaPlugin() {
  const plugin = await import(pathToFileURL(pluginPath).href);
  const tools = new Map();
  const disposers = [];
  const ctx = {
    subprocess: subprocess(),
    tools: { register: (def) => { tools.set(def.name, def); return () => tools.delete(def.name); } },
    effect: (fn) => { disposers.push(fn()); },
    inject: () => {},
    get: () => undefined,
  };
  const applyStarted = performance.now();
  await plugin.apply(ctx, { binary });
  const applyMs = performance.now() - applyStarted;
  const tool = tools.get(TOOL);
  const exec = () => ({ signal: new AbortController().signal, callId: 'bench' });
  const firstStarted = performance.now();
  await tool.execute(ARGS, exec());
  const firstCallMs = performance.now() - firstStarted;
  const latencies = await timed(() => tool.execute(ARGS, exec()));
  for (const dispose of disposers) await dispose?.();
  return { applyMs, firstCallMs, toolsRegistered: tools.size, latencies };
}

async function direct() {
  const child = spawn(binary, ['mcp', '--stdio'], { stdio: ['pipe', 'pipe', 'ignore'] });
  child.stdout.setEncoding('utf8');
  let buffer = '';
  const waiting = new Map();
  child.stdout.on('data', (chunk) => {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const message = JSON.parse(buffer.slice(0, newline));
      buffer = buffer.slice(newline + 1);
      waiting.get(message.id)?.(message);
    }
  });
  let id = 0;
  const request = (method, params) => new Promise((resolve) => {
    id += 1;
    waiting.set(id, resolve);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  });
  const started = performance.now();
  await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  const startMs = performance.now() - started;
  child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  const latencies = await timed(() => request('tools/call', { name: TOOL, arguments: ARGS }));
  child.kill('SIGTERM');
  return { startMs, latencies };
}

async function timed(call) {
  for (let i = 0; i < WARMUP; i++) await call();
  const latencies = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await call();
    latencies.push(performance.now() - started);
  }
  return latencies;
}

const p = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.round((sorted.length - 1) * q)];
};

const raw = await direct();
const plugin = await viaPlugin();
console.log(JSON.stringify({
  calls: CALLS,
  direct: { startMs: raw.startMs, p50: p(raw.latencies, 0.5), p99: p(raw.latencies, 0.99) },
  plugin: {
    applyMs: plugin.applyMs,
    firstCallMs: plugin.firstCallMs,
    toolsRegistered: plugin.toolsRegistered,
    p50: p(plugin.latencies, 0.5),
    p99: p(plugin.latencies, 0.99),
  },
}));
process.exit(0);
