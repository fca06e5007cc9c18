// Cordis DevTools collector: what dshkit's debug core knows about this process's
// Cordis runtime comes from here. Behaviour-neutral by construction:
//   - it only subscribes to Cordis's `internal/*` events and returns nothing from
//     them (a truthy return from an `internal/listener` observer would cancel the
//     registration; waterfalls are not subscribed at all);
//   - it never wraps a callback;
//   - it sends metadata only: event names, dispatch modes, argument counts, fiber
//     uids, names, states and effect labels; never argument values, configs,
//     errors or payloads.
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

const STATE_NAMES = ['pending', 'loading', 'active', 'failed', 'disposed', 'unloading'];

/**
 * Starts collecting for the Cordis runtime of `ctx`. `dir` is the private
 * directory for the socket and the registry (created 0700). Returns
 * `{socket, registry, dispose()}`; also disposed with `ctx`.
 */
export function startCollector(ctx, { dir, label = 'dsh' }) {
  const root = ctx.root;
  fs.mkdirSync(path.join(dir, 'targets'), { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  const socketPath = path.join(dir, `${process.pid}.sock`);
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
    const line = JSON.stringify({ fact }) + '\n';
    for (const client of clients) client.send(line);
  };
  const now = () => Date.now();

  // Dispatches are observed only while a core is attached: Cordis calls each
  // `internal/dispatch` listener on every event, which costs microseconds even
  // for one that returns at once. The rare topology events are always observed.
  let stopDispatches = null;
  const observeDispatches = (wanted) => {
    if (wanted && !stopDispatches) {
      try {
        stopDispatches = ctx.on('internal/dispatch', (mode, name, args) => {
          broadcast({ kind: 'dispatch', mode: String(mode), name: String(name), argc: Array.isArray(args) ? args.length : 0, at: now() });
        }, { global: true });
      } catch {}
    } else if (!wanted && stopDispatches) {
      try { stopDispatches(); } catch {}
      stopDispatches = null;
    }
  };
  const disposers = [
    ctx.on('internal/status', (fiber, oldState) => {
      if (clients.size === 0) return;
      broadcast({ kind: 'status', fiber: idOf(fiber), name: fiber.name, state: STATE_NAMES[fiber.state] ?? String(fiber.state), old: STATE_NAMES[oldState] ?? String(oldState), at: now() });
    }, { global: true }),
    ctx.on('internal/plugin', (fiber) => {
      if (clients.size === 0) return;
      broadcast({ kind: 'plugin', fiber: idOf(fiber), name: fiber.name, at: now() });
    }, { global: true }),
    ctx.on('internal/listener', function (name) {
      if (clients.size === 0) return;
      broadcast({ kind: 'listener', event: String(name), owner: idOf(this?.fiber), at: now() });
    }, { global: true }),
    ctx.on('internal/service', (name) => {
      if (clients.size === 0) return;
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
    return { at: now(), fibers, fibersTotal, events, eventsTotal: names.length, services, entries };
  };
  const baseline = topology();

  const answer = (op) => {
    switch (op) {
      case 'hello': return { protocol: PROTOCOL, pid: process.pid, label, node: process.version, startedAtMs: Math.round(Date.now() - process.uptime() * 1000), baseline };
      case 'topology': return topology();
      default: throw new Error(`unknown op ${JSON.stringify(op)}`);
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
          socket.write(JSON.stringify({ id, result: answer(request.op) }) + '\n');
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
  server.listen(socketPath, () => {
    try { fs.chmodSync(socketPath, 0o600); } catch {}
    const record = { protocol: PROTOCOL, pid: process.pid, socket: socketPath, label, startedAtMs: Math.round(Date.now() - process.uptime() * 1000) };
    const temp = `${registryPath}.tmp-${process.pid}`;
    fs.writeFileSync(temp, JSON.stringify(record), { mode: 0o600 });
    fs.renameSync(temp, registryPath);
  });
  server.unref();

  let disposed = false;
  const dispose = () => {
    if (disposed) return;
    disposed = true;
    observeDispatches(false);
    for (const off of disposers) { try { off(); } catch {} }
    server.close();
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    clients.clear();
    for (const file of [registryPath, socketPath]) { try { fs.unlinkSync(file); } catch {} }
  };
  // Disposed with the plugin that started it (a plain runtime's root has no owner).
  if (ctx.fiber?.runtime) ctx.effect(() => dispose, 'dshkit devtools collector');
  return { socket: socketPath, registry: registryPath, dispose };
}
