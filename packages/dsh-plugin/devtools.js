// Cordis DevTools collector: what dshkit's debug core knows about this process's
// Cordis runtime comes from here. Behaviour-neutral by construction:
//   - it subscribes to Cordis's topology events (`internal/status`, `plugin`,
//     `listener`, `service`) and returns nothing from them (a truthy return from
//     an `internal/listener` observer would cancel the registration; waterfalls
//     are not subscribed at all);
//   - while a core is attached it notes each dispatch from Cordis's own
//     `internal/dispatch` event, in a listener that returns nothing; the
//     runtime's `events.dispatch` is never replaced outside an experiment;
//   - it never wraps a listener's callback;
//   - it sends metadata only: event names, dispatch modes, argument counts, fiber
//     uids, names, states and effect labels; never argument values, configs,
//     errors or payloads.
// The one exception is a leased experiment, asked for by a core and enabled by
// the plugin's config (`devtoolsExperiments: true`): for its lease (15 s by
// default, 60 s at most, enforced here so a dead core never leaves DSH
// instrumented) the dispatches of one event get timing wrappers around their
// listeners; the listener records themselves are never touched, and the
// original dispatch is restored by identity when the lease ends.
// Facts go over a private Unix socket (in a 0700 directory) to whichever dshkit
// core attaches; a registry file (0600) per live process lets cores find it.
//
// Import-free on purpose: Node built-ins come through process.getBuiltinModule.

const fs = process.getBuiltinModule('node:fs');
const net = process.getBuiltinModule('node:net');
const path = process.getBuiltinModule('node:path');

/** Version of the line protocol between this collector and the Rust core. */
export const PROTOCOL = 1;
/** Cores attached at once. */
export const MAX_CLIENTS = 8;
/** Unsent bytes a slow core may hold before facts for it are dropped (and counted). */
export const MAX_PENDING_BYTES = 1024 * 1024;
/** Longest request line from a core. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** Fibers and events a topology answer lists at most. */
export const MAX_FIBERS = 2000;
export const MAX_EVENTS = 1000;
/** Effect labels listed per fiber. */
export const MAX_EFFECT_LABELS = 16;

/** Experiment leases: default and longest. */
export const DEFAULT_LEASE_MS = 15_000;
export const MAX_LEASE_MS = 60_000;
/** Traces an experiment keeps (the oldest go first, counted). */
export const MAX_TRACES = 200;
/** Listeners traced per dispatch. */
export const MAX_TRACED_LISTENERS = 64;

/** What the DevTools view shows at most: fibers, and events (the most listened first). */
export const MAX_VIEW_FIBERS = 300;
export const MAX_VIEW_EVENTS = 50;
/** DSH's own inspection: the Cordis Inspect provider's id, and the items one answer lists at most. */
export const INSPECT_PROVIDER_ID = 'CordisRuntime';
export const MAX_INSPECT_ITEMS = 200;
/** The owner of an experiment a person starts from the view (an agent's is its core's `dshkit-PID/SESSION`). */
export const HUMAN_OWNER = 'human';

const STATE_NAMES = ['pending', 'loading', 'active', 'failed', 'disposed', 'unloading'];

/** Where the DevTools endpoint listens when `devtools.mcp.enabled` names no `listen`. */
export const DEFAULT_ENDPOINT = '127.0.0.1:43127';

/**
 * What the plugin row's config asks of DevTools, by the design's keys:
 *
 *     devtools:
 *       failOnStartupError: false   # a collector that cannot start fails the plugin
 *       mcp:
 *         enabled: false            # the endpoint for MCP hosts outside DSH
 *         listen: 127.0.0.1:43127   # where it listens (loopback only)
 *         experiments:
 *           enabled: false          # leased experiments (agents' and a person's)
 *
 * `devtools: {}` runs the collector with the endpoint and experiments off. The
 * keys of the release before (`devtools: true`, `devtoolsExperiments`,
 * `devtoolsEndpoint`, a top-level `failOnStartupError`) are still read, with the
 * endpoint on unless `devtoolsEndpoint: false` as then, and named in
 * `deprecated`. A key it does not know, or a token in the row (`mcp.token`,
 * `mcp.tokenFile`: the endpoint's token is the 0600 file in the devtools
 * directory, where every client finds it), is an error naming the key.
 * @returns {{collector: boolean, experiments: boolean, failOnStartupError: boolean, endpoint: string | null, deprecated: string[]}}
 */
export function devtoolsSettings(config) {
  const off = { collector: false, experiments: false, failOnStartupError: false, endpoint: null, deprecated: [] };
  const devtools = config?.devtools;
  const legacy = ['devtoolsExperiments', 'devtoolsEndpoint'].filter((key) => config?.[key] !== undefined);
  if (devtools === undefined || devtools === false) {
    if (legacy.length > 0) throw new Error(`dshkit: the plugin row sets ${legacy.join(' and ')} without DevTools; set devtools.mcp instead`);
    return off;
  }
  if (devtools === true) {
    const endpoint = config.devtoolsEndpoint;
    if (endpoint !== undefined && endpoint !== false && typeof endpoint !== 'string') throw new Error('dshkit: devtoolsEndpoint must be an address or false');
    return {
      collector: true,
      experiments: config.devtoolsExperiments === true,
      failOnStartupError: config.failOnStartupError === true,
      endpoint: endpoint === false ? null : endpoint ?? DEFAULT_ENDPOINT,
      deprecated: ['devtools: true', ...legacy],
    };
  }
  const known = (value, keys, where) => {
    if (value === undefined) return {};
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`dshkit: ${where} must be a mapping`);
    for (const key of Object.keys(value)) {
      if (key === 'token' || key === 'tokenFile') throw new Error(`dshkit: ${where}.${key} is not read: the endpoint's token is the 0600 file \`token\` in the devtools directory (\`dshkit devtools rotate-token\` replaces it), where every client finds it`);
      if (!keys.includes(key)) throw new Error(`dshkit: ${where}.${key} is not a DevTools setting (known: ${keys.join(', ')})`);
    }
    return value;
  };
  if (legacy.length > 0) throw new Error(`dshkit: the plugin row mixes devtools settings with ${legacy.join(' and ')}; keep devtools.mcp only`);
  const settings = known(devtools, ['failOnStartupError', 'mcp'], 'devtools');
  const mcp = known(settings.mcp, ['enabled', 'listen', 'experiments'], 'devtools.mcp');
  const experiments = known(mcp.experiments, ['enabled'], 'devtools.mcp.experiments');
  for (const [where, value] of [['devtools.failOnStartupError', settings.failOnStartupError], ['devtools.mcp.enabled', mcp.enabled], ['devtools.mcp.experiments.enabled', experiments.enabled]]) {
    if (value !== undefined && typeof value !== 'boolean') throw new Error(`dshkit: ${where} must be true or false`);
  }
  if (mcp.listen !== undefined && typeof mcp.listen !== 'string') throw new Error('dshkit: devtools.mcp.listen must be an address such as 127.0.0.1:43127');
  return {
    collector: true,
    experiments: experiments.enabled === true,
    failOnStartupError: settings.failOnStartupError === true || config.failOnStartupError === true,
    endpoint: mcp.enabled === true ? mcp.listen ?? DEFAULT_ENDPOINT : null,
    deprecated: config.failOnStartupError !== undefined ? ['failOnStartupError (top level)'] : [],
  };
}

/**
 * The collector, started so that its failure stays its own: a registry that
 * cannot be written (or any other startup error) is reported on stderr and kept
 * as `startupFailure()` for the view, and the rest of the plugin (LiveLoop,
 * checks) goes on. `failOnStartupError` restores the hard failure. Returns
 * the collector, or null when it does not run.
 */
export function startCollectorIsolated(ctx, options, { failOnStartupError = false } = {}) {
  const report = (error) => {
    lastStartupFailure = { dir: options.dir, message: error.message, at: Date.now() };
    console.warn(`[dshkit] Cordis DevTools did not start (${error.message}); LiveLoop and the checks go on without it (set failOnStartupError to make this fatal)`);
  };
  try {
    lastStartupFailure = null;
    return startCollector(ctx, { ...options, onStartupError: report });
  } catch (error) {
    if (failOnStartupError) throw error;
    report(error);
    return null;
  }
}

/** Why the collector last failed to start in this process, or null. */
export function startupFailure() {
  return lastStartupFailure;
}

let lastStartupFailure = null;

// The kernel's record of this process's start (clock ticks after boot), for the
// registry file: a core compares it exactly to tell this process from a later
// one given its pid. Only Linux lets a process read it; elsewhere cores go by
// `startedAtMs`, which Windows and macOS keep on the same wall clock.
const kernelStartTime = () => {
  if (process.platform !== 'linux') return undefined;
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isSafeInteger(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
};

/**
 * Starts collecting for the Cordis runtime of `ctx`. `dir` is the private
 * directory for the socket and the registry (created 0700). Returns
 * `{socket, registry, dispose()}`; also disposed with `ctx`.
 */
export function startCollector(ctx, { dir, label = 'dsh', experiments = false, onStartupError }) {
  const root = ctx.root;
  // This collector's start: with the pid, it tells a collector started again in
  // the same process (DSH restarting in place) from the one before.
  const epoch = Date.now();
  fs.mkdirSync(path.join(dir, 'targets'), { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  // Node on Windows listens on named pipes, not socket files: one named after
  // the registry directory, so two registries never share a pipe.
  const socketPath = process.platform === 'win32'
    ? `\\\\.\\pipe\\dshkit-devtools-${dir.replace(/[^A-Za-z0-9]/g, '_').slice(-80)}-${process.pid}`
    : path.join(dir, `${process.pid}.sock`);
  const registryPath = path.join(dir, 'targets', `${process.pid}.json`);
  try { fs.unlinkSync(socketPath); } catch {}

  // Fiber identity: uids are cleared at disposal, so the first uid seen is kept.
  const ids = new WeakMap();
  let synthetic = -1;
  const idOf = (fiber) => {
    if (!fiber) return null;
    let id = ids.get(fiber);
    if (id === undefined) {
      id = typeof fiber.uid === 'number' ? fiber.uid : synthetic--;
      ids.set(fiber, id);
    }
    return id;
  };

  const clients = new Set();
  const broadcast = (fact) => {
    if (clients.size === 0) return;
    endRun();
    const line = JSON.stringify({ fact }) + '\n';
    for (const client of clients) client.send(line);
  };
  const now = () => Date.now();
  // The start of a dispatch fact's line per mode and event name, for the
  // dispatch hot path (bounded: names beyond it are assembled each time).
  const prefixes = new Map();
  let prefixCount = 0;
  const dispatchPrefix = (mode, name) => {
    let byName = prefixes.get(mode);
    if (byName === undefined) { byName = new Map(); prefixes.set(mode, byName); }
    let prefix = byName.get(name);
    if (prefix === undefined) {
      prefix = `{"fact":{"kind":"dispatch","mode":${JSON.stringify(String(mode))},"name":${JSON.stringify(name)},"argc":`;
      if (prefixCount < MAX_EVENTS * 4) { byName.set(name, prefix); prefixCount++; }
    }
    return prefix;
  };

  // Identical dispatches in a row (same mode, name and argument count) within
  // one turn of the event loop are one fact with a `repeat` count and the time
  // of the first; the core gives each its own journal sequence. Any other fact
  // ends the run first, so the order of facts is kept.
  // The run being counted, as plain variables (no object per run).
  let runName = null;
  let runMode = null;
  let runArgc = 0;
  let runCount = 0;
  let runAt = 0;
  let runScheduled = false;
  let atMs = -1;
  let atText = '';
  const endRun = () => {
    if (runName === null) return;
    // The clock's text changes once a millisecond, not once a dispatch.
    if (runAt !== atMs) { atMs = runAt; atText = String(runAt); }
    const line = dispatchPrefix(runMode, runName) + runArgc + ',"at":' + atText + (runCount > 1 ? ',"repeat":' + runCount + '}}\n' : '}}\n');
    runName = null;
    for (const client of clients) client.send(line);
  };
  const startRun = (mode, name, argc) => {
    endRun();
    runName = name;
    runMode = mode;
    runArgc = argc;
    runCount = 1;
    runAt = now();
    if (!runScheduled) {
      runScheduled = true;
      setImmediate(() => {
        runScheduled = false;
        endRun();
        for (const client of clients) client.flush();
      });
    }
  };
  // Dispatches are observed only while a core is attached, through Cordis's own
  // `internal/dispatch` event: a global listener of the collector's plugin, added
  // when the first core attaches and removed when the last one leaves, that notes
  // the mode, name and argument count and returns nothing. The runtime's
  // `events.dispatch`, its listener records and every callback stay exactly as
  // they were (the neutrality battery compares a runtime observed this way with
  // one observed by nobody). Cordis emits `internal/dispatch` for every dispatch
  // of an event not named `internal/*`.
  let stopObserving = null;
  const noteDispatch = (mode, name, argc) => {
    if (name === runName && mode === runMode && argc === runArgc) runCount++;
    else startRun(mode, name, argc);
  };
  // Cordis emits no `internal/dispatch` for its own `internal/*` events, so
  // those are noted by listeners of each, as the mode Cordis dispatches it in
  // (lib/index.js of @deepseek-ai/cordis 4): `internal/status`, `plugin` and
  // `service` are emitted and `internal/listener` bailed, where the topology
  // observers below note them (returning nothing); the waterfalls
  // `internal/config`, `update`, `get` and `set` get a global listener, while a
  // core is attached, that notes the dispatch and passes it on: it calls the
  // `next` Cordis gave it once, at once, and returns what that returned (the
  // same value, promise or thrown error), so the chain's result is what it
  // would be without it. It reads no argument but their count and touches no
  // context (a context's property read is itself an `internal/get`).
  const waterfalls = ['internal/config', 'internal/update', 'internal/get', 'internal/set'];
  const observeDispatches = (wanted) => {
    if (wanted && !stopObserving && !disposed) {
      const offs = [ctx.on('internal/dispatch', (mode, name, args) => {
        if (clients.size === 0) return;
        noteDispatch(mode, name, args.length);
      }, { global: true })];
      for (const name of waterfalls) {
        offs.push(ctx.on(name, (...args) => {
          if (clients.size > 0) noteDispatch('waterfall', name, args.length);
          return args[args.length - 1]();
        }, { global: true }));
      }
      stopObserving = () => { for (const off of offs) off(); };
    } else if (!wanted && stopObserving) {
      const stop = stopObserving;
      stopObserving = null;
      try { stop(); } catch {}
    }
  };
  const disposers = [
    ctx.on('internal/status', (fiber, oldState) => {
      if (clients.size === 0) return;
      if (stopObserving) noteDispatch('emit', 'internal/status', 2);
      broadcast({ kind: 'status', fiber: idOf(fiber), name: fiber.name, state: STATE_NAMES[fiber.state] ?? String(fiber.state), old: STATE_NAMES[oldState] ?? String(oldState), at: now() });
    }, { global: true }),
    ctx.on('internal/plugin', (...args) => {
      if (clients.size === 0) return;
      if (stopObserving) noteDispatch('emit', 'internal/plugin', args.length);
      const fiber = args[0];
      broadcast({ kind: 'plugin', fiber: idOf(fiber), name: fiber.name, at: now() });
    }, { global: true }),
    ctx.on('internal/listener', function (name, ...rest) {
      if (clients.size === 0) return;
      if (stopObserving) noteDispatch('bail', 'internal/listener', rest.length + 1);
      broadcast({ kind: 'listener', event: String(name), owner: idOf(this?.fiber), at: now() });
    }, { global: true }),
    ctx.on('internal/service', (name, ...rest) => {
      if (clients.size === 0) return;
      if (stopObserving) noteDispatch('emit', 'internal/service', rest.length + 1);
      broadcast({ kind: 'service', name: String(name), at: now() });
    }, { global: true }),
  ];

  /** The runtime's shape now: fibers, listeners per event, services, loader entries. */
  const topology = () => {
    const fibers = [];
    let fibersTotal = 0;
    for (const runtime of root.registry.values()) {
      for (const fiber of runtime.fibers) {
        fibersTotal++;
        if (fibers.length >= MAX_FIBERS) continue;
        let effects = [];
        try { effects = fiber.getEffects(); } catch {}
        fibers.push({
          id: idOf(fiber),
          uid: fiber.uid,
          name: fiber.name,
          state: STATE_NAMES[fiber.state] ?? String(fiber.state),
          parent: fiber.parent?.fiber && fiber.parent.fiber !== fiber ? idOf(fiber.parent.fiber) : null,
          effects: effects.length,
          effectLabels: effects.slice(0, MAX_EFFECT_LABELS).map((e) => String(e.label)),
        });
      }
    }
    const events = [];
    const hooks = root.events?._hooks ?? {};
    const names = Reflect.ownKeys(hooks);
    for (const name of names) {
      if (events.length >= MAX_EVENTS) break;
      events.push({
        name: String(name),
        listeners: (hooks[name] ?? []).map((hook) => ({
          owner: idOf(hook.ctx?.fiber),
          ownerName: hook.ctx?.fiber?.name ?? null,
          ownerState: STATE_NAMES[hook.ctx?.fiber?.state] ?? null,
          prepend: !!hook.prepend,
          global: !!hook.global,
        })),
      });
    }
    let services = [];
    try { services = Object.keys(root.reflect?.store ?? {}); } catch {}
    let entries = [];
    try {
      const loader = root.get?.('loader');
      entries = [...(loader?.entries?.() ?? [])].slice(0, MAX_FIBERS).map((e) => ({
        id: String(e.id), name: e.options?.name ?? null, disabled: !!e.options?.disabled, group: !!e.options?.group,
      }));
    } catch {}
    return { at: now(), fibers, fibersTotal, events, eventsTotal: names.length, services, entries, experiment: experimentFindings() };
  };

  // Leased experiments: one at a time. `current` is the running one; `last` the
  // one before, kept for its traces and how it ended.
  const events = root.events;
  let current = null;
  let last = null;
  let leases = 0;
  const hookIds = new WeakMap();
  let nextHookId = 1;
  const hookId = (hook) => {
    let id = hookIds.get(hook);
    if (id === undefined) { id = nextHookId++; hookIds.set(hook, id); }
    return id;
  };
  const micros = (ms) => Math.round(ms * 1000);
  const describeExperiment = (x) => x && {
    lease: x.lease, owner: x.owner, event: x.event, startedAt: x.startedAt, expiresAt: x.expiresAt,
    stoppedAt: x.stoppedAt ?? null, reason: x.reason ?? null, restored: x.restored ?? null,
    traces: x.traces.length, tracesDropped: x.tracesDropped, dispatches: x.dispatches,
  };
  const publishTrace = (x, trace) => {
    if (trace.dirty) return;
    trace.dirty = true;
    setImmediate(() => {
      trace.dirty = false;
      broadcast({ kind: 'trace', lease: x.lease, trace: trace.id, event: x.event, listeners: trace.listeners.length, at: now() });
    });
  };
  // Wraps the bound callbacks of one dispatch. Time is measured around each
  // call; in a waterfall, `next` is wrapped too, so calls of it (how many, when,
  // after the listener returned) and the time spent inside it are known.
  const traceDispatch = (x, mode, hooks, callbacks) => {
    x.dispatches++;
    // `atUs`: when the dispatch began, in µs since the Unix epoch on the
    // monotonic clock; each listener's `startUs` is its call's offset from it
    // (the Chrome trace of `dshkit devtools profile --trace` places slices by them).
    const atUs = Math.round((performance.timeOrigin + performance.now()) * 1000);
    const trace = { id: x.dispatches, mode, at: now(), atUs, listenerCount: callbacks.length, listeners: [], dirty: false };
    if (x.traces.length >= MAX_TRACES) { x.traces.shift(); x.tracesDropped++; }
    x.traces.push(trace);
    // Hooks map to callbacks one to one unless a context filter left some out.
    const mapped = hooks.length === callbacks.length;
    return callbacks.map((callback, index) => {
      if (index >= MAX_TRACED_LISTENERS) return callback;
      const hook = mapped ? hooks[index] : null;
      const entry = {
        index,
        listener: hook ? hookId(hook) : null,
        owner: hook ? idOf(hook.ctx?.fiber) : null,
        ownerName: hook ? hook.ctx?.fiber?.name ?? null : null,
        called: false, startUs: null, durationUs: null, selfUs: null, nextCalls: mode === 'waterfall' ? 0 : null,
        nextAtUs: null, lateNext: false, threw: false, async: false, settledUs: null,
      };
      trace.listeners.push(entry);
      return function (...args) {
        entry.called = true;
        const began = performance.now();
        if (entry.startUs === null) entry.startUs = Math.round((performance.timeOrigin + began) * 1000) - atUs;
        let returned = false;
        let inside = 0;
        const nextAt = args.length - 1;
        if (mode === 'waterfall' && typeof args[nextAt] === 'function') {
          const next = args[nextAt];
          args[nextAt] = function (...nextArgs) {
            const at = performance.now();
            entry.nextCalls++;
            if (entry.nextAtUs === null) entry.nextAtUs = micros(at - began);
            if (returned) entry.lateNext = true;
            try { return next.apply(this, nextArgs); } finally { if (!returned) inside += performance.now() - at; publishTrace(x, trace); }
          };
        }
        try {
          const result = callback.apply(this, args);
          // Only a serial dispatch awaits every result itself, so only there may
          // a settle handler be added without changing what is handled.
          if (result instanceof Promise) {
            entry.async = true;
            if (mode === 'serial') {
              const settled = () => { entry.settledUs = micros(performance.now() - began); publishTrace(x, trace); };
              result.then(settled, settled);
            }
          }
          return result;
        } catch (error) {
          entry.threw = true;
          throw error;
        } finally {
          returned = true;
          const spent = performance.now() - began;
          entry.durationUs = micros(spent);
          entry.selfUs = micros(spent - inside);
          publishTrace(x, trace);
        }
      };
    });
  };
  const stopExperiment = (x, reason) => {
    if (current !== x) return;
    clearTimeout(x.timer);
    current = null;
    // Restored by identity: only our own wrapper is removed. Something that
    // replaced it since stays in place, and ours becomes a pass-through.
    if (events.dispatch === x.wrapper) {
      if (x.ownDispatch) events.dispatch = x.ownDispatch; else delete events.dispatch;
      x.restored = events.dispatch === x.original ? 'identical' : 'mismatch';
    } else {
      x.restored = 'conflict';
    }
    x.stoppedAt = now();
    x.reason = reason;
    last = x;
    broadcast({ kind: 'profiler', state: 'stopped', lease: x.lease, event: x.event, reason, restored: x.restored, at: now() });
  };
  const startExperiment = ({ event, ttlMs, owner }) => {
    if (!experiments) throw new Error('experiments are off in this DSH: install with `dshkit dsh install --devtools-experiments` (plugin config devtoolsExperiments: true)');
    if (typeof event !== 'string' || event.length === 0 || event.length > 256) throw new Error('`event` must be an event name of at most 256 characters');
    if (current) throw new Error(`an experiment is running (lease ${current.lease}, owner ${current.owner}, on ${current.event}, ${Math.max(0, current.expiresAt - now())} ms left); one at a time`);
    const ttl = Math.min(Math.max(Number.isFinite(ttlMs) ? ttlMs : DEFAULT_LEASE_MS, 100), MAX_LEASE_MS);
    const original = events.dispatch;
    const ownDispatch = Object.prototype.hasOwnProperty.call(events, 'dispatch') ? original : null;
    const x = {
      lease: `lease-${process.pid}-${++leases}`, owner: String(owner ?? 'unknown').slice(0, 128), event,
      startedAt: now(), expiresAt: now() + ttl, traces: [], tracesDropped: 0, dispatches: 0,
      original, ownDispatch, wrapper: null, timer: null,
    };
    x.wrapper = function (mode, args) {
      if (current !== x) return original.call(this, mode, args);
      const thisArg = typeof args[0] === 'object' || typeof args[0] === 'function' ? args[0] : null;
      const name = thisArg ? args[1] : args[0];
      const hooks = name === x.event ? [...(this._hooks[name] ?? [])] : null;
      const callbacks = original.call(this, mode, args);
      return hooks ? traceDispatch(x, mode, hooks, callbacks) : callbacks;
    };
    Object.defineProperty(events, 'dispatch', { value: x.wrapper, configurable: true, writable: true, enumerable: false });
    // The lease is enforced here, whatever happens to the core that took it.
    x.timer = setTimeout(() => stopExperiment(x, 'lease-expired'), ttl);
    x.timer.unref?.();
    current = x;
    broadcast({ kind: 'profiler', state: 'running', lease: x.lease, event, reason: 'started', at: now() });
    return describeExperiment(x);
  };
  const experimentStatus = () => ({
    enabled: experiments, maxLeaseMs: MAX_LEASE_MS, maxTraces: MAX_TRACES,
    running: describeExperiment(current), last: describeExperiment(last),
  });
  const tracesOf = ({ lease, cursor = 0, limit = 20 }) => {
    const x = [current, last].find((e) => e && (lease === undefined || e.lease === lease));
    if (!x) throw new Error(lease === undefined ? 'no experiment has run' : `no experiment with lease ${lease} (only the running and the last one are kept)`);
    const from = Math.max(0, Number(cursor) || 0);
    const page = x.traces.slice(from, from + Math.min(Math.max(Number(limit) || 20, 1), 100));
    return {
      experiment: describeExperiment(x), total: x.traces.length, returned: page.length,
      cursor: from + page.length < x.traces.length ? from + page.length : null,
      traces: page.map(({ dirty: _dirty, ...t }) => t),
    };
  };

  // What the running or last experiment showed that deserves a look: listeners
  // that called next() more than once in a dispatch, or after they returned.
  const experimentFindings = () => {
    const x = current ?? last;
    if (!x) return null;
    const byListener = new Map();
    for (const trace of x.traces) {
      for (const l of trace.listeners) {
        const key = l.listener ?? `index-${l.index}`;
        const found = byListener.get(key) ?? { owner: l.owner, ownerName: l.ownerName, traces: 0, maxNextCalls: 0, lateNext: 0 };
        found.traces++;
        found.maxNextCalls = Math.max(found.maxNextCalls, l.nextCalls ?? 0);
        if (l.lateNext) found.lateNext++;
        byListener.set(key, found);
      }
    }
    const listeners = [...byListener.values()].filter((f) => f.maxNextCalls > 1 || f.lateNext > 0).slice(0, MAX_TRACED_LISTENERS);
    return { lease: x.lease, event: x.event, running: x === current, restored: x.restored ?? null, listeners };
  };
  const baseline = topology();

  const answer = (request) => {
    switch (request.op) {
      case 'hello': return { protocol: PROTOCOL, pid: process.pid, label, node: process.version, startedAtMs: Math.round(Date.now() - process.uptime() * 1000), epoch, experiments, baseline };
      case 'topology': return topology();
      case 'experiment-start': return startExperiment(request);
      case 'experiment-stop': {
        // By exact lease, or the emergency stop (a person), which always wins.
        const x = current;
        if (!x) return { stopped: false, last: describeExperiment(last) };
        if (!request.emergency && request.lease !== x.lease) {
          throw new Error(`lease ${request.lease} is not the running one: ${x.lease} is owned by ${x.owner}, and only its owner or a person's emergency stop ends it`);
        }
        stopExperiment(x, request.emergency ? 'emergency-stop' : (request.reason === 'owner-gone' ? 'owner-gone' : 'stopped'));
        return { stopped: true, last: describeExperiment(last) };
      }
      case 'experiment-status': return experimentStatus();
      case 'traces': return tracesOf(request);
      default: throw new Error(`unknown op ${JSON.stringify(request.op)}`);
    }
  };

  const sockets = new Set();
  const server = net.createServer((socket) => {
    // An attached core never keeps the process alive.
    socket.unref();
    if (clients.size >= MAX_CLIENTS) {
      socket.end(JSON.stringify({ error: `at most ${MAX_CLIENTS} cores may attach` }) + '\n');
      return;
    }
    // Facts of one turn of the event loop go out as one write.
    let dropped = 0;
    let batch = '';
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (batch) socket.write(batch);
      batch = '';
    };
    const client = {
      socket,
      flush,
      send(line) {
        if (socket.writableLength + batch.length > MAX_PENDING_BYTES) { dropped++; return; }
        if (dropped > 0) {
          batch += JSON.stringify({ fact: { kind: 'dropped', count: dropped, at: now() } }) + '\n';
          dropped = 0;
        }
        batch += line;
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      },
    };
    clients.add(client);
    sockets.add(socket);
    observeDispatches(true);
    let buffer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      buffer += chunk;
      if (buffer.length > MAX_REQUEST_BYTES && !buffer.includes('\n')) {
        socket.destroy();
        return;
      }
      let newline;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        let id = null;
        try {
          const request = JSON.parse(line);
          id = request.id ?? null;
          socket.write(JSON.stringify({ id, result: answer(request) }) + '\n');
        } catch (error) {
          socket.write(JSON.stringify({ id, error: String(error?.message ?? error) }) + '\n');
        }
      }
    });
    const gone = () => {
      clients.delete(client);
      sockets.delete(socket);
      if (clients.size === 0) observeDispatches(false);
    };
    socket.on('close', gone);
    socket.on('error', gone);
  });
  // A socket or registry file that cannot be made after the synchronous start
  // ends this collector only (and is reported), never the host.
  const failed = (error) => {
    dispose();
    onStartupError?.(error);
  };
  server.on('error', failed);
  server.listen(socketPath, () => {
    try { fs.chmodSync(socketPath, 0o600); } catch {}
    const record = { protocol: PROTOCOL, pid: process.pid, socket: socketPath, label, epoch, experiments, startedAtMs: Math.round(Date.now() - process.uptime() * 1000), startTime: kernelStartTime() };
    const temp = `${registryPath}.tmp-${process.pid}`;
    try {
      fs.writeFileSync(temp, JSON.stringify(record), { mode: 0o600 });
      fs.renameSync(temp, registryPath);
    } catch (error) {
      try { fs.unlinkSync(temp); } catch {}
      failed(error);
    }
  });
  server.unref();

  let disposed = false;
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    observeDispatches(false);
    if (current) stopExperiment(current, 'host-disposed');
    for (const off of disposers) { try { off(); } catch {} }
    server.close();
    // Cores learn that the host is being disposed, not merely that the channel closed.
    const farewell = JSON.stringify({ fact: { kind: 'host-disposed', at: now() } }) + '\n';
    for (const client of clients) { try { client.flush(); client.socket.end(farewell); } catch {} }
    for (const socket of sockets) if (![...clients].some((c) => c.socket === socket)) socket.destroy();
    sockets.clear();
    clients.clear();
    for (const file of [registryPath, socketPath]) { try { fs.unlinkSync(file); } catch {} }
  };
  // Disposed with the plugin that started it (a plain runtime's root has no owner).
  if (ctx.fiber?.runtime) ctx.effect(() => dispose, 'dshkit devtools collector');
  // What the person at DSH's screen sees (the DevTools view, over the plugin's
  // loopback channel): this runtime, bounded, and the experiment with its owner.
  const view = () => {
    const shape = topology();
    const events = shape.events
      .map((e) => ({ name: e.name, listeners: e.listeners.length }))
      .sort((a, b) => b.listeners - a.listeners || a.name.localeCompare(b.name));
    const status = experimentStatus();
    return {
      target: { pid: process.pid, label, epoch, node: process.version },
      fibers: shape.fibers.slice(0, MAX_VIEW_FIBERS).map(({ id, name, state, parent, effects }) => ({ id, name, state, parent, effects })),
      fibersTotal: shape.fibersTotal,
      events: events.slice(0, MAX_VIEW_EVENTS),
      eventsTotal: shape.eventsTotal,
      cores: clients.size,
      experiments: status.enabled,
      maxLeaseMs: status.maxLeaseMs,
      running: status.running && { ...status.running, human: status.running.owner === HUMAN_OWNER, leftMs: Math.max(0, status.running.expiresAt - now()) },
      last: status.last,
      at: now(),
    };
  };
  // DSH's own inspection (its Cordis Inspect registry, read by the model through
  // `cordis_inspect_list` and `cordis_inspect_query`): the same metadata as the
  // topology, read-only and progressive like DSH's own Service and Event
  // providers (a compact directory without input, then one exact item).
  const exactInput = (field, description) => ({
    type: 'object', properties: { [field]: { type: 'string', description } }, additionalProperties: false,
  });
  const bounded = (items) => ({ total: items.length, returned: Math.min(items.length, MAX_INSPECT_ITEMS), truncated: items.length > MAX_INSPECT_ITEMS, items: items.slice(0, MAX_INSPECT_ITEMS) });
  const inspectMethods = {
    summary: {
      description: 'Counts of this DSH runtime now: fibers per state, events, listeners, services and loader entries; the collector (pid, since when, cores attached) and the experiment running, if any. Metadata only.',
      inputSchema: { type: 'object', properties: {}, additionalProperties: false },
      query: () => {
        const shape = topology();
        const states = {};
        for (const fiber of shape.fibers) states[fiber.state] = (states[fiber.state] ?? 0) + 1;
        const running = experimentStatus().running;
        return {
          collector: { pid: process.pid, label, epoch, protocol: PROTOCOL, coresAttached: clients.size },
          fibers: shape.fibersTotal, fiberStates: states, events: shape.eventsTotal,
          listeners: shape.events.reduce((n, e) => n + e.listeners.length, 0),
          services: shape.services.length, entries: shape.entries.length,
          experiment: running && { event: running.event, owner: running.owner, leftMs: Math.max(0, running.expiresAt - now()) },
        };
      },
    },
    listFibers: {
      description: 'Progressive fiber discovery: without input, every fiber name with how many fibers have it and their states; with an exact name, those fibers (uid, state, parent, effect labels).',
      inputSchema: exactInput('name', 'Exact fiber (plugin) name. Omit it for the compact name directory.'),
      query: (input) => {
        const { fibers } = topology();
        if (typeof input?.name === 'string') {
          return { name: input.name, fibers: bounded(fibers.filter((f) => f.name === input.name).map(({ uid, id, state, parent, effects, effectLabels }) => ({ uid: uid ?? id, state, parent, effects, effectLabels }))) };
        }
        const byName = new Map();
        for (const f of fibers) {
          const entry = byName.get(f.name) ?? { name: f.name, count: 0, states: {} };
          entry.count++;
          entry.states[f.state] = (entry.states[f.state] ?? 0) + 1;
          byName.set(f.name, entry);
        }
        return { names: bounded([...byName.values()].sort((a, b) => b.count - a.count || String(a.name).localeCompare(String(b.name)))) };
      },
    },
    listEvents: {
      description: 'Progressive event discovery: without input, every event with its listener count (most listened first); with an exact event name, its listeners in dispatch order (owner fiber, its state, prepend, global).',
      inputSchema: exactInput('event', 'Exact event name. Omit it for the compact event directory.'),
      query: (input) => {
        const { events } = topology();
        if (typeof input?.event === 'string') {
          const found = events.find((e) => e.name === input.event);
          return { event: input.event, listeners: bounded(found ? found.listeners : []) };
        }
        return { events: bounded(events.map((e) => ({ name: e.name, listeners: e.listeners.length })).sort((a, b) => b.listeners - a.listeners || a.name.localeCompare(b.name))) };
      },
    },
  };
  const inspectProvider = () => ({
    manifest: {
      id: INSPECT_PROVIDER_ID,
      description: 'Read-only facts of this DSH\'s live Cordis runtime, from dshkit\'s DevTools collector: its fibers with their states, its events with their listeners in dispatch order, and counts. Metadata only (names, states, counts), never arguments or configs.',
      methods: Object.entries(inspectMethods).map(([name, m]) => ({ name, description: m.description, inputSchema: m.inputSchema, outputSchema: { description: `${INSPECT_PROVIDER_ID}.${name}: JSON data from dshkit's collector; lists carry total, returned and truncated.` } })),
    },
    query(method, input) {
      const found = Object.hasOwn(inspectMethods, method) ? inspectMethods[method] : null;
      if (!found) throw new Error(`${INSPECT_PROVIDER_ID} has no method "${method}"`);
      return Promise.resolve(found.query(input));
    },
  });
  // `observing()`: whether dispatches are being observed (a core is attached).
  return {
    socket: socketPath,
    registry: registryPath,
    dispose,
    experimentStatus,
    view,
    // A person's experiment: the same lease rules as an agent's, owned by HUMAN_OWNER.
    startHuman: ({ event, ttlMs }) => startExperiment({ event, ttlMs, owner: HUMAN_OWNER }),
    // The emergency stop: ends whatever runs, whoever owns it; cores see the fact.
    emergencyStop: () => answer({ op: 'experiment-stop', emergency: true }),
    observing: () => stopObserving !== null,
    inspectProvider,
  };
}
