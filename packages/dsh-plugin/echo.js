/**
 * Echo in DSH, the host half. DSH keeps its own MCP client; a server Echo wraps
 * (a row of the plugin's `echo` registry: cassette id, path under `rootDir`,
 * server, mode) is reached through `dshkit echo`. Each call DSH makes to such a
 * server gains `meta.dshCassette` on its ordinary `tool/result`: the cassette by
 * id, the mode, hit / miss / passthrough / recorded, the recorded ordinal, the
 * request's fingerprint, and for a miss why and where the arguments differ.
 * DSH persists that event in its session; nothing else is written, so the
 * session stays the one sensitive source of truth. The Echo tab reads it back.
 *
 * What a call's annotation says is computed by the binary (`dshkit echo
 * annotate`) from the cassette and this process's earlier calls to the
 * server, beside the replay and never from its state.
 */

const fs = process.getBuiltinModule('node:fs');
const path = process.getBuiltinModule('node:path');

/** The binary matches at most this many earlier calls of a server (its `MAX_HISTORY`), plus the call itself. */
const MAX_HISTORY = 256 + 1;
/** Most annotated calls the Echo tab lists for one conversation (the newest). */
export const MAX_ECHO_ROWS = 200;
/** The error text the replay answers a miss with (the binary's `echo: no recorded answer`). */
const ENGINE_MISS = 'echo: no recorded answer';
/** Marks a tool output this plugin composed already. */
const COMPOSED = Symbol('dshkit echo presentationMeta');

function isRecord(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The text of a result's content blocks. */
function textOf(result) {
  return (result?.content ?? []).filter((b) => b?.type === 'text').map((b) => b.text).join('\n');
}

/**
 * Observes the calls to registered servers. `annotate(request)` runs the
 * binary and gives `dshCassette` (or null for a server with no cassette);
 * `running()` is the registry as it runs (modes a person switched included).
 * Returns the registry's servers, or undefined when the row configures none.
 */
export function observeEcho(ctx, echo, annotate, running = () => echo) {
  const servers = (Array.isArray(echo?.cassettes) ? echo.cassettes : [])
    .map((entry) => entry?.server)
    .filter((server) => typeof server === 'string' && server !== '');
  if (servers.length === 0) return undefined;
  // Longest first, so `mcp__a_b__t` is server `a_b` when both `a` and `a_b` are registered.
  servers.sort((a, b) => b.length - a.length);
  const histories = new Map();
  const notes = new WeakMap();
  ctx.on('tools/execute', async (exec, next) => {
    const server = servers.find((name) => exec.name.startsWith(`mcp__${name}__`));
    if (server === undefined) return next();
    const history = histories.get(server) ?? [];
    histories.set(server, history);
    history.push({ tool: exec.name.slice(`mcp__${server}__`.length), arguments: exec.arguments ?? {} });
    if (history.length > MAX_HISTORY) history.splice(0, history.length - MAX_HISTORY);
    let note;
    try {
      note = await annotate({ echo: running(), server, calls: history });
    } catch (error) {
      // A registry the binary refuses is shown where the calls are, with its rule.
      note = { server, error: error.message };
    }
    if (!note) return next();
    if (isRecord(exec.arguments)) {
      composePresentation(ctx, exec.name, notes);
      notes.set(exec.arguments, note);
    }
    const result = await next();
    if (!result.isError) return result;
    // A failed call keeps the meta its wrapper gives it; the engine's own miss
    // outranks what was computed beside it.
    const missed = textOf(result).includes(ENGINE_MISS);
    const said = missed && note.outcome === 'hit' ? { ...note, outcome: 'miss', miss: { reason: 'engine', message: textOf(result) } } : note;
    return { ...result, meta: { ...(isRecord(result.meta) ? result.meta : {}), dshCassette: said } };
  });
  return servers;
}

/**
 * A successful result's meta is its tool's own projection
 * (`output.presentationMeta(args, value)`, which DSH calls for each top-level
 * call): DSH gives a wrapper no other way to add meta to it. The MCP tool's
 * output is composed once, keeping any projection it declares, so its result
 * gains the annotation computed for exactly those arguments.
 */
function composePresentation(ctx, name, notes) {
  const tool = ctx.tools?.get(name);
  if (!tool || !isRecord(tool.output) || tool.output[COMPOSED]) return;
  const own = tool.output.presentationMeta;
  try {
    tool.output = {
      ...tool.output,
      [COMPOSED]: true,
      presentationMeta(args, value) {
        const base = own === undefined ? undefined : own.call(tool.output, args, value);
        const note = isRecord(args) ? notes.get(args) : undefined;
        if (note === undefined) return base;
        return { ...(isRecord(base) ? base : {}), dshCassette: note };
      },
    };
  } catch (error) {
    ctx.logger?.warn?.(`dshkit echo: ${name}'s results cannot carry their annotation: ${error.message}`);
  }
}

/**
 * The Echo tab's rows for one conversation, read from DSH's own session log:
 * each `tool/result` carrying `meta.dshCassette`, newest last, at most
 * MAX_ECHO_ROWS, with the counts of each outcome.
 */
export async function echoCalls(sessionQuery, conversation) {
  if (!sessionQuery) throw new Error('this DSH has no session query service: the Echo tab cannot read the conversation');
  const snapshot = await sessionQuery.readSession(conversation);
  const calls = [];
  const counts = { hit: 0, miss: 0, passthrough: 0, recorded: 0, error: 0 };
  for (const event of snapshot?.events ?? []) {
    const note = event?.type === 'tool/result' ? event.data?.meta?.dshCassette : undefined;
    if (!isRecord(note)) continue;
    const outcome = typeof note.error === 'string' ? 'error' : note.outcome;
    if (Object.hasOwn(counts, outcome)) counts[outcome] += 1;
    calls.push({ seq: event.seq, time: event.time, isError: event.data?.message?.content?.[0]?.isError === true, ...note, outcome });
  }
  const shown = calls.slice(-MAX_ECHO_ROWS);
  return { calls: shown, counts, total: calls.length, truncated: shown.length < calls.length };
}

/**
 * One recorded interaction the conversation's calls name (a hit's ordinal, or
 * a miss's nearest recorded call), redacted again by the binary. The view
 * asks by cassette id and ordinal; anything its conversation never referenced
 * is refused, so no path and no other conversation's call is reachable.
 */
export async function echoInteraction(sessionQuery, echo, run, conversation, id, ordinal) {
  const { calls } = await echoCalls(sessionQuery, conversation);
  const named = calls.some((call) => call.id === id && (call.ordinal === ordinal || call.miss?.nearestOrdinal === ordinal));
  if (!named) throw new Error(`no call of this conversation names interaction #${ordinal} of cassette ${id}`);
  const answer = await run(['--json', 'echo', 'interaction'], { echo, id, ordinal });
  if (!answer.interaction) throw new Error(`cassette ${id} holds no interaction #${ordinal} any more`);
  return answer.interaction;
}

/** The Cordis service DSH's rows for Echo's HTTP servers wait for (`inject: [dshkitEcho]`). */
export const ECHO_SERVICE = 'dshkitEcho';
/** Longest the HTTP proxies get to listen. */
const PROXIES_START_MS = 15_000;
/** Longest line the proxies' seam answers with. */
const MAX_PROXIES_LINE = 64 * 1024;
/** The file under the binary's state directory keeping the modes a person switched to. */
export const MODES_FILE = 'echo-modes.json';
/** Its shape's version: another one is not read. */
const MODES_VERSION = 1;
/** Largest modes file read (one short entry per cassette, at most 256). */
const MAX_MODES_BYTES = 64 * 1024;
/** The modes a registry entry can have. */
const MODES = ['replay', 'record', 'passthrough'];

/**
 * Echo's HTTP servers (registry entries with `http`): one `dshkit echo
 * dsh-proxies` process runs a loopback proxy for each. It reads the registry
 * from its stdin, which stays open: its end (DSH gone, even killed outright)
 * stops the proxies, as does the plugin's dispose. Once every proxy listens,
 * `ECHO_SERVICE` is provided, so DSH's row for such a server (pointed at the
 * proxy's URL, `inject: [dshkitEcho]`) connects only then, and never to a port
 * its proxy does not hold. A proxy that cannot start (its port taken, the real
 * server unreachable) fails the plugin with the reason: the rows that wait
 * would stop DSH's boot anyway, and this way DSH's message says why.
 *
 * A person can switch an HTTP server's mode in dshkit's settings: the proxies
 * restart in the new mode (DSH's client reconnects), and the choice is kept
 * in MODES_FILE. A mode that reaches the real server is switched to only once
 * the person confirmed what it does (the binary's `sideEffects` text).
 */
export class EchoProxies {
  constructor(ctx, spawn, echo, stateDir) {
    this.ctx = ctx;
    this.spawn = spawn;
    this.echo = echo;
    this.modesFile = stateDir ? path.join(stateDir, MODES_FILE) : undefined;
    this.modes = readModes(this.modesFile);
    this.handle = undefined;
    this.started = [];
    this.sideEffects = {};
    this.queue = Promise.resolve();
    this.disposed = false;
  }

  /** The registry's entries. */
  entries() {
    return Array.isArray(this.echo?.cassettes) ? this.echo.cassettes.filter(isRecord) : [];
  }

  /** The registry as it runs: an HTTP entry in the mode a person switched it to. */
  effective() {
    const cassettes = this.entries().map((entry) => (isRecord(entry.http) && MODES.includes(this.modes[entry.id]) ? { ...entry, mode: this.modes[entry.id] } : entry));
    return { ...this.echo, cassettes };
  }

  /** Starts the proxies (none when no entry is HTTP) and provides ECHO_SERVICE once they listen. */
  async start() {
    if (!this.entries().some((entry) => isRecord(entry.http))) return;
    this.ctx.effect(() => () => {
      this.disposed = true;
      this.handle?.terminate();
    }, 'dshkit echo proxies');
    try {
      await this.launch();
    } catch (error) {
      throw new Error(`dshkit echo: the HTTP proxies are not running, so DSH's rows that wait for them (inject: [${ECHO_SERVICE}]) cannot start: ${error.message}`);
    }
    this.ctx.provide(ECHO_SERVICE, { proxies: this.started });
  }

  async launch() {
    const handle = this.spawn(['--json', 'echo', 'dsh-proxies']);
    this.handle = handle;
    try {
      handle.stdin.write(`${JSON.stringify({ echo: this.effective() })}\n`);
      const answer = await firstLine(handle);
      if (!Array.isArray(answer?.proxies)) throw new Error(answer?.error?.message ?? 'the proxies answered no list');
      this.started = answer.proxies;
      this.sideEffects = isRecord(answer.sideEffects) ? answer.sideEffects : {};
    } catch (error) {
      handle.terminate();
      this.handle = undefined;
      throw error;
    }
    handle.done.then((outcome) => {
      if (!this.disposed && this.handle === handle) this.ctx.logger?.error?.(`dshkit echo: the HTTP proxies exited (${outcome.exitCode ?? outcome.signal})`);
    });
  }

  async halt() {
    const handle = this.handle;
    this.handle = undefined;
    if (!handle) return;
    handle.terminate();
    await handle.done.catch(() => undefined);
  }

  /** Each registered server with its mode as it runs, for the settings and the Echo tab. */
  servers() {
    const running = new Map(this.started.map((p) => [p.id, p]));
    return this.effective().cassettes.map((entry) => ({
      id: entry.id,
      server: entry.server,
      mode: entry.mode,
      transport: isRecord(entry.http) ? 'http' : 'stdio',
      url: running.get(entry.id)?.url,
      upstream: isRecord(entry.http) ? entry.http.upstream : undefined,
      sideEffects: this.sideEffects[entry.mode],
    }));
  }

  /** What the settings show: the servers, and what each mode that reaches a real server does. */
  describe() {
    return { servers: this.servers(), sideEffects: this.sideEffects, modes: MODES };
  }

  /**
   * Switches HTTP cassette `id` to `mode`. A mode that reaches the real server
   * needs `confirmed`; without it the answer is what to confirm. The proxies
   * restart; if the new mode cannot start, the old one is restored and the
   * error says why. One switch at a time.
   */
  switchMode(id, mode, confirmed) {
    const run = this.queue.then(() => this.switchNow(id, mode, confirmed));
    this.queue = run.catch(() => undefined);
    return run;
  }

  async switchNow(id, mode, confirmed) {
    const entry = this.entries().find((e) => e.id === id);
    if (!entry) throw new Error(`no cassette ${JSON.stringify(id)} is registered`);
    if (!MODES.includes(mode)) throw new Error(`mode ${JSON.stringify(mode)} is none of ${MODES.join(', ')}`);
    if (!isRecord(entry.http)) {
      throw new Error(`${entry.server} runs over stdio through its own DSH row, which sets its mode: write its overlay again (dshkit echo dsh-overlay --server ${entry.server} --mode ${mode})`);
    }
    const from = this.effective().cassettes.find((e) => e.id === id).mode;
    if (from === mode) return { ...this.describe(), changed: [] };
    const sideEffects = this.sideEffects[mode];
    if (sideEffects && confirmed !== true) return { ...this.describe(), confirm: { id, server: entry.server, mode, sideEffects } };
    const previous = this.modes;
    this.modes = { ...previous, [id]: mode };
    await this.halt();
    try {
      await this.launch();
    } catch (error) {
      this.modes = previous;
      let restored = '';
      try {
        await this.launch();
      } catch (again) {
        restored = ` (and ${from} could not start again: ${again.message})`;
      }
      throw new Error(`${entry.server} stays ${from}${restored}: ${error.message}`);
    }
    writeModes(this.modesFile, this.modes);
    return { ...this.describe(), changed: [{ id, server: entry.server, from, to: mode }] };
  }
}

/** The modes kept across restarts, by cassette id ({} when none, unreadable, or of another version). */
function readModes(file) {
  if (!file) return {};
  try {
    if (fs.statSync(file).size > MAX_MODES_BYTES) return {};
    const kept = JSON.parse(fs.readFileSync(file, 'utf8'));
    return kept?.version === MODES_VERSION && isRecord(kept.modes) ? kept.modes : {};
  } catch {
    return {};
  }
}

/** Keeps the modes, atomically (a whole new file renamed over the old one). */
function writeModes(file, modes) {
  if (!file) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify({ version: MODES_VERSION, modes }), { mode: 0o600 });
  fs.renameSync(temporary, file);
}

/** The seam's one JSON line, or why there is none (its error, its exit, or no answer in time). */
function firstLine(handle) {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no answer within ${PROXIES_START_MS} ms`)), PROXIES_START_MS);
    handle.stdout.setEncoding('utf8');
    handle.stdout.on('data', (chunk) => {
      if (text.length > MAX_PROXIES_LINE) return;
      text += chunk;
      const end = text.indexOf('\n');
      if (end < 0) return;
      try {
        const answer = JSON.parse(text.slice(0, end));
        clearTimeout(timer);
        resolve(answer);
      } catch {
        // A pretty-printed error object spans lines: it is read whole at the exit.
      }
    });
    handle.done.then((outcome) => {
      clearTimeout(timer);
      let said;
      try {
        said = JSON.parse(text)?.error?.message;
      } catch {
        said = handle.collected.stderr?.readFrom(0).text.trim().split('\n').pop();
      }
      reject(new Error(said || `it exited (${outcome.exitCode ?? outcome.signal})`));
    }, reject);
  });
}
