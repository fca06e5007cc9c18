// dshkit inside DSH: the host half. A thin layer over the dshkit binary, which runs
// as one MCP sidecar per DSH process (started at the first call, restarted after a
// crash with a bounded backoff, stopped on dispose). It plugs the binary into DSH's
// seams: the user's approval, screenshots saved as attachments, the guidance in the
// system prompt, the skills. What goes through each seam comes from the binary
// (`dshkit mcp --describe`: schemas, descriptions, which calls need approval or send
// images, which arguments the host owns, the guidance and skill texts), the one
// source of truth; this file only interprets it.
//
// Import-free on purpose: the plugin loads from any path, and Node built-ins come
// through process.getBuiltinModule.

const fs = process.getBuiltinModule('node:fs');
const path = process.getBuiltinModule('node:path');

export const name = 'dshkit';
export const inject = ['tools', 'subprocess'];

/** This plugin's release: its package's version (the binary's must be the same). */
const PLUGIN_VERSION = JSON.parse(fs.readFileSync(new URL('./package.json', import.meta.url), 'utf8')).version;
/** Protocol version the sidecar is asked for (it serves every version through 2026-07-28). */
const PROTOCOL_VERSION = '2025-11-25';
/** Largest `dshkit mcp --describe` answer read at boot. */
const MAX_DESCRIBE_BYTES = 4 * 1024 * 1024;
/** The layout of `dshkit mcp --describe`'s host section this plugin reads. */
const HOST_FORMAT = 1;
/** Where dshkit's guidance goes in DSH's system prompt (100..199 is tool guidance). */
const GUIDANCE_ORDER = 150;
/** The tool whose results the Verification Card and the Live Preview show. */
const VERIFY_TOOL = 'liveloop_verify';
/** What the Verification Card carries of a report: items per list and characters per text. */
const MAX_CARD_ITEMS = 20;
const MAX_CARD_CHARS = 500;
/** Largest single line (one JSON-RPC message) read from the sidecar. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** Stderr kept from the sidecar, for the message when it dies and the Live Preview's log. */
const STDERR_TAIL_BYTES = 64 * 1024;
/** The sidecar's log filter: dshkit's own notices (cancelled calls, closed previews), others' warnings. */
const DEFAULT_LOG = 'warn,dshkit=info';
/** Lines of the sidecar's log the Live Preview shows. */
const LOG_LINES_SHOWN = 40;
/** How long the sidecar gets after TERM on dispose. */
const GRACE_MS = 3000;
/** Longest wait for the sidecar's answer to `initialize`. */
const HANDSHAKE_MS = 15000;
/** Restart backoff after a crash: doubles from the first to the last, then stays. */
const BACKOFF_FIRST_MS = 250;
const BACKOFF_MAX_MS = 8000;
/** A sidecar that ran this long before dying resets the backoff. */
const HEALTHY_RUN_MS = 30000;
/** DSH's attachment limits: bytes per image and pixels per side. */
const MAX_ATTACHMENT_BYTES = 3.5 * 1024 * 1024;
const MAX_ATTACHMENT_SIDE = 2000;
/** Running calls whose latest stage the Verification Card may read. */
const MAX_TRACKED_CALLS = 64;
/** Recent verification reports whose images the UI may fetch (older ones are dropped). */
const MAX_KNOWN_REPORTS = 32;
/** The file under the binary's state directory that keeps the views' state across restarts. */
const STATE_FILE = 'live-preview.json';
/** Its shape's version: another one is not read. */
const STATE_VERSION = 1;
/** Largest state file read (32 reports and 32 verdicts are a few dozen KB). */
const MAX_STATE_BYTES = 1024 * 1024;
/** Conversations whose latest verification the Live Preview keeps (the least recently used is dropped). */
const MAX_CONVERSATIONS = 32;
/** Dev servers remembered per conversation (the runtime itself holds at most 8). */
const MAX_SERVERS_PER_CONVERSATION = 8;
/** The tool that starts and stops dev servers. */
const RUNTIME_TOOL = 'liveloop_runtime';
/** Longest the framing probe of an app URL waits. */
const FRAME_PROBE_MS = 3000;
/** What DSH's approval outcomes mean, for the model. */
const APPROVAL_OUTCOMES = {
  rejected: 'the user rejected it',
  cancelled: 'the request was cancelled',
  unavailable: 'no one can approve it in this session (headless, or approvals are disabled)',
};

/** Entry point: registers the native tools, then guidance and skills when DSH has them. */
export async function apply(ctx, config) {
  // DevTools' settings first: a row that asks for something unknown fails here, saying what.
  const { devtoolsSettings } = await import('./devtools.js');
  const devtoolsConfig = devtoolsSettings(config);
  if (devtoolsConfig.deprecated.length > 0) {
    process.stderr.write(`dshkit: the plugin row uses ${devtoolsConfig.deprecated.join(', ')}, read for one more release; write devtools: {mcp: {enabled, listen, experiments: {enabled}}, failOnStartupError} instead (\`dshkit dsh install\` writes it)\n`);
  }
  const binary = await binaryOf(config);
  const env = sidecarEnv(config);
  const described = await describe(ctx, binary, env);
  // The sidecar starts on a tool's first call, so a browser prewarmed at its
  // start would have no head start on that call: it launches on demand instead.
  const sidecar = new Sidecar(ctx, [binary, 'mcp', '--stdio', '--no-prewarm'], env);
  ctx.effect(() => () => sidecar.stop(), 'dshkit sidecar');
  const host = described.host;
  // What the views must find again after DSH restarts (the cards' thumbnails,
  // each conversation's latest verdict), kept where the binary says.
  const verifications = new Verifications(host.stateDir ? path.join(host.stateDir, STATE_FILE) : undefined);
  const stages = new RunningStages();
  // The DevTools family only means something where the collector runs.
  const served = (entry) => entry?.family !== 'devtools' || devtoolsConfig.collector;

  for (const tool of described.tools) {
    const seams = host.tools.find((t) => t.name === tool.name) ?? {};
    if (!served(seams)) continue;
    ctx.tools.register(nativeTool(ctx, sidecar, tool, seams, verifications, stages));
  }
  const dshkit = (args, input) => runOnce(ctx, [binary, ...args], env, input);
  // Echo: calls to the servers the row's registry wraps carry `meta.dshCassette`.
  const { observeEcho, echoCalls, echoInteraction, EchoProxies } = await import('./echo.js');
  const seam = (args, request) => echoSeam(dshkit, args, request);
  // Echo's HTTP servers: their proxies listen before DSH's rows for them connect.
  const proxies = new EchoProxies(ctx, (args) => ctx.subprocess.spawn({
    argv: [binary, ...args],
    cwd: process.cwd(),
    stdio: { stdin: 'pipe', stdout: 'pipe', stderr: { maxBytes: STDERR_TAIL_BYTES } },
    graceMs: GRACE_MS,
    env,
  }), config?.echo, host.stateDir);
  observeEcho(ctx, config?.echo, async (request) => (await seam(['--json', 'echo', 'annotate'], request)).dshCassette ?? null, () => proxies.effective());
  await proxies.start();
  const echo = {
    calls: async (conversation) => ({ ...(await echoCalls(ctx.get('sessionQuery'), conversation)), servers: proxies.servers() }),
    interaction: (conversation, id, ordinal) => echoInteraction(ctx.get('sessionQuery'), config?.echo, seam, conversation, id, ordinal),
    settings: () => proxies.describe(),
    switchMode: (id, mode, confirmed) => proxies.switchMode(id, mode, confirmed),
  };
  // The DevTools view's state: the collector, once started below (with `devtools: true`).
  const devtools = { enabled: devtoolsConfig.collector, collector: null, view: null, failure: () => null };
  // The browser half's channel (web profiles only): loopback callers only.
  ctx.inject(['connection'], (inner) => {
    inner.connection.rpc.handle('/dshkit', uiHandler(sidecar, verifications, stages, dshkit, echo, devtools), { authority: 'loopback' });
  });
  ctx.inject(['systemPrompt'], (inner) => {
    for (const [index, guidance] of host.guidance.filter(served).entries()) {
      inner.systemPrompt.section({ name: `dshkit:${guidance.name}`, order: GUIDANCE_ORDER + index, text: guidance.text });
    }
  });
  if (devtoolsConfig.collector) {
    // Cordis DevTools: metadata about this runtime for dshkit's debug core.
    const { startCollectorIsolated, startupFailure } = await import('./devtools.js');
    // The registry the binary resolved (`--devtools-dir`, else <DSH home>/dshkit-devtools,
    // with the same DSH_HOME the sidecar gets): the rule lives in the binary only.
    const dir = host.devtoolsDir;
    devtools.collector = startCollectorIsolated(ctx, { dir, label: 'dsh', experiments: devtoolsConfig.experiments }, { failOnStartupError: devtoolsConfig.failOnStartupError });
    devtools.failure = startupFailure;
    if (devtools.collector && devtoolsConfig.endpoint !== null) serveDevtools(ctx, binary, env, dir, devtoolsConfig.endpoint);
    if (devtools.collector) {
      // DSH's own inspection, where its Cordis Inspect registry runs (web).
      const provider = devtools.collector.inspectProvider();
      ctx.inject(['cordisInspect'], (inner) => {
        inner.effect(() => inner.cordisInspect.register(provider), 'dshkit: inspect CordisRuntime');
      });
      // The tab's candidates and journal come from dshkit's own core, only while it looks.
      const { DevToolsViewCore } = await import('./devtools-view.js');
      const view = new DevToolsViewCore({
        spawn: (args) => ctx.subprocess.spawn({
          argv: [binary, ...args],
          cwd: process.cwd(),
          stdio: { stdin: 'ignore', stdout: 'pipe', stderr: { maxBytes: STDERR_TAIL_BYTES } },
          graceMs: GRACE_MS,
          env,
        }),
        run: (args) => dshkit(args),
        registry: dir,
      });
      devtools.view = view;
      ctx.effect(() => () => view.dispose(), 'dshkit devtools view core');
    }
  }
  const skills = host.skills.filter(served);
  ctx.inject(['skills'], (inner) => {
    inner.skills.registerProvider(() => skillProvider(skills));
  });
}

/**
 * The dshkit executable: the row's `config.binary` when it names one (an install
 * from source, `dshkit dsh install`), else the binary of this machine's platform
 * package installed beside this package (`dsh plugin add dshkit`), found by the
 * rule the `dshkit` command's launcher follows too.
 */
async function binaryOf(config) {
  const binary = config?.binary;
  if (binary !== undefined) {
    if (typeof binary !== 'string' || !path.isAbsolute(binary)) {
      throw new Error('dshkit: the plugin row\'s `config.binary` must be the absolute path of the dshkit executable; run `dshkit dsh install` again');
    }
    return binary;
  }
  const { resolveBinary } = await import('./platform.js');
  try {
    return resolveBinary();
  } catch (error) {
    throw new Error(`dshkit: the plugin row names no \`config.binary\`, and ${error.message}`);
  }
}

/**
 * The DevTools endpoint for MCP hosts outside DSH (`dshkit devtools serve`:
 * loopback, a 0600 token file, Host and Origin checked). One endpoint serves
 * every DSH in the registry, so when another DSH already holds the port this one
 * simply goes without; it stops with the plugin.
 */
function serveDevtools(ctx, binary, env, dir, listen) {
  const handle = ctx.subprocess.spawn({
    // A pipe on stdin that DSH never writes: when DSH ends, even killed outright,
    // the endpoint sees its end and stops.
    argv: [binary, 'devtools', '--devtools-dir', dir, 'serve', '--exit-on-stdin-eof', '--listen', listen],
    cwd: process.cwd(),
    stdio: { stdin: 'pipe', stdout: { maxBytes: 4096 }, stderr: { maxBytes: STDERR_TAIL_BYTES } },
    graceMs: GRACE_MS,
    env,
  });
  ctx.effect(() => () => {
    handle.terminate();
  }, 'dshkit devtools endpoint');
}

/** The sidecar's environment: DSH scrubs DSH_* from children, so DSH_HOME is passed back. */
function sidecarEnv(config) {
  const env = {};
  const home = config?.dshHome ?? process.env.DSH_HOME;
  if (home) env.DSH_HOME = home;
  if (config?.evidenceRoot) env.DSHKIT_EVIDENCE_ROOT = config.evidenceRoot;
  env.DSHKIT_LOG = typeof config?.log === 'string' ? config.log : DEFAULT_LOG;
  return env;
}

/** Runs one short dshkit command to its end; its output is bounded. */
async function runOnce(ctx, argv, env, input) {
  const handle = ctx.subprocess.spawn({
    argv,
    cwd: process.cwd(),
    stdio: { stdin: input === undefined ? 'ignore' : { data: input }, stdout: { maxBytes: MAX_DESCRIBE_BYTES }, stderr: { maxBytes: STDERR_TAIL_BYTES } },
    graceMs: GRACE_MS,
    env,
  });
  const outcome = await handle.done;
  return {
    exitCode: outcome.exitCode,
    signal: outcome.signal,
    stdout: handle.collected.stdout?.readFrom(0).text ?? '',
    stderr: handle.collected.stderr?.readFrom(0).text ?? '',
  };
}

/** `dshkit ARGS` with `request` as JSON on stdin (Echo's seams): its JSON answer, or its error. */
async function echoSeam(dshkit, args, request) {
  const run = await dshkit(args, JSON.stringify(request));
  let answer;
  try {
    answer = JSON.parse(run.stdout);
  } catch {
    throw new Error(run.stderr.trim().split('\n').pop() || `dshkit ${args.join(' ')} exited ${run.exitCode}`);
  }
  if (run.exitCode !== 0) throw new Error(answer?.error?.message ?? `dshkit ${args.join(' ')} exited ${run.exitCode}`);
  return answer;
}

/**
 * Runs `dshkit mcp --describe` once: the tools exactly as the sidecar lists them,
 * and the host section (each tool's seams and description, guidance, skills).
 */
async function describe(ctx, binary, env) {
  const { exitCode: code, signal, stdout, stderr } = await runOnce(ctx, [binary, 'mcp', '--describe'], env);
  const outcome = { exitCode: code, signal };
  if (outcome.exitCode !== 0) {
    throw new Error(`dshkit: \`${binary} mcp --describe\` failed (exit ${outcome.exitCode ?? outcome.signal}): ${stderr.trim().slice(-2000)}`);
  }
  let parsed;
  try {
    parsed = JSON.parse(stdout);
  } catch (error) {
    throw new Error(`dshkit: \`${binary} mcp --describe\` printed no JSON (${error.message}); is ${binary} a dshkit binary?`);
  }
  if (!Array.isArray(parsed?.tools)) throw new Error('dshkit: `mcp --describe` listed no tools');
  const host = parsed.host;
  if (host?.format !== HOST_FORMAT || !Array.isArray(host.tools) || !Array.isArray(host.guidance) || !Array.isArray(host.skills) || typeof host.devtoolsDir !== 'string') {
    throw new Error(`dshkit: \`${binary} mcp --describe\` gives its host section in format ${host?.format ?? '(none)'}, and this plugin reads format ${HOST_FORMAT}; install the plugin again with that dshkit (\`${binary} dsh install\`)`);
  }
  const versions = { plugin: PLUGIN_VERSION, binary: String(parsed.server?.version ?? '(none)') };
  if (versions.binary !== versions.plugin) {
    // The layout matches, so the tools work; but a plugin half and a binary of
    // different releases may disagree in what each expects: say so at every boot.
    process.stderr.write(`dshkit: this plugin is ${versions.plugin} and its binary ${binary} is ${versions.binary}; install them together again (\`dsh plugin --profile NAME update dshkit\`, or \`dshkit dsh install\` from source)\n`);
  }
  return { tools: parsed.tools, host, versions };
}

/**
 * One DSH tool that forwards to the sidecar's tool of the same name. `seams` (from
 * the binary) say what the plugin takes over: `approval` (the user approves the
 * calls its rule names; the model never approves itself), `images` (the plugin
 * asks for them and saves them as attachments), `owner` (the conversation owns
 * the call's previews). Each names the argument the plugin owns: it is not in the
 * schema DSH offers, and a value the model sends anyway is dropped.
 */
function nativeTool(ctx, sidecar, tool, seams, verifications, stages) {
  const { approval, images, owner } = seams;
  const owned = [approval, images, owner].filter(Boolean).map((seam) => seam.argument);
  const parameters = owned.reduce(without, tool.inputSchema);
  return {
    name: tool.name,
    description: typeof seams.description === 'string' ? seams.description : tool.description,
    parameters: parameters ?? { type: 'object' },
    output: {
      schema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      render: (_args, value) => render(value),
      // The Verification Card renders the report's structure, never its text.
      ...(tool.name === VERIFY_TOOL ? { presentationMeta: (_args, value) => verificationCard(value) } : {}),
    },
    async execute(rawArgs, exec) {
      const args = typeof rawArgs === 'object' && rawArgs !== null ? { ...rawArgs } : {};
      for (const argument of owned) delete args[argument];
      let planned;
      if (approval && holds(approval.when, args)) {
        planned = approval.plan ? await planOf(sidecar, tool.name, approval, args, exec) : undefined;
        await approve(ctx, tool.name, approval, args, exec, planned);
        args[approval.argument] = true;
      }
      if (images && holds(images.when, args)) args[images.argument] = true;
      if (owner) args[owner.argument] = ownerOf(exec);
      const conversation = conversationOf(exec);
      const starting = tool.name === RUNTIME_TOOL && ['start', 'restart'].includes(args.operation);
      if (starting) stages.begin(conversation, exec.callId, planned);
      let result;
      try {
        result = await sidecar.call(tool.name, args, exec.signal, (stage) => stages.report(conversation, exec.callId, stage));
      } finally {
        stages.end(conversation, exec.callId);
      }
      const text = textOf(result);
      if (result.isError === true) throw new Error(text);
      const value = { text };
      if (result.structuredContent !== undefined) value.structured = result.structuredContent;
      if (images) await attachImages(ctx, exec, value, result);
      if (tool.name === RUNTIME_TOOL && ['start', 'restart'].includes(args.operation)) {
        const ids = (result.structuredContent?.servers ?? []).map((s) => s?.id).filter((id) => typeof id === 'string');
        verifications.started(conversation, ids);
      }
      if (tool.name === VERIFY_TOOL && result.structuredContent) {
        judgeWithAttachments(value);
        const asked = { ...args };
        if (images) delete asked[images.argument];
        verifications.record(conversation, asked, value);
      }
      return value;
    },
  };
}

/**
 * What each conversation's Live Preview shows: the conversation's latest
 * verification (and the arguments that made it, to run it again), and a bounded
 * set of recent reports whose images that conversation's views may read. Only
 * image files dshkit's own reports named are ever served. A call outside a
 * conversation has no Live Preview to show it.
 */
class Verifications {
  constructor(stateFile) {
    this.stateFile = stateFile;
    this.latest = new Map(); // conversation id -> { args, summary }
    this.reports = new Map(); // report path -> { conversation, images: { screenshot, reference, current, diff, live? } }
    this.frames = new Map(); // app origin -> framing verdict
    this.servers = new Map(); // conversation id -> ids of the dev servers it started
    this.restore();
  }

  /** The reports and latest verdicts kept before DSH restarted; a damaged file is set aside. */
  restore() {
    if (!this.stateFile) return;
    let kept;
    try {
      kept = JSON.parse(Buffer.from(readBounded(this.stateFile, MAX_STATE_BYTES)).toString('utf8'));
    } catch (error) {
      if (error?.code !== 'ENOENT') console.warn(`[dshkit] ${this.stateFile} was not read (${error.message}); starting without it`);
      return;
    }
    if (kept?.version !== STATE_VERSION) return;
    const pairs = (list) => (Array.isArray(list) ? list : []).filter((e) => Array.isArray(e) && typeof e[0] === 'string' && e[1] && typeof e[1] === 'object');
    for (const [report, entry] of pairs(kept.reports).slice(-MAX_KNOWN_REPORTS)) {
      if (typeof entry.conversation === 'string' && entry.images && typeof entry.images === 'object') this.reports.set(report, entry);
    }
    for (const [conversation, entry] of pairs(kept.latest).slice(-MAX_CONVERSATIONS)) {
      if (entry.summary && typeof entry.summary === 'object') this.latest.set(conversation, entry);
    }
  }

  /** Keeps the reports and latest verdicts for after a restart (written atomically; a failure is logged, never thrown). */
  keep() {
    if (!this.stateFile) return;
    const text = JSON.stringify({ version: STATE_VERSION, reports: [...this.reports], latest: [...this.latest] });
    const temporary = `${this.stateFile}.${process.pid}.tmp`;
    try {
      fs.mkdirSync(path.dirname(this.stateFile), { recursive: true });
      fs.writeFileSync(temporary, text, { mode: 0o600 });
      fs.renameSync(temporary, this.stateFile);
    } catch (error) {
      console.warn(`[dshkit] could not keep the Live Preview's state in ${this.stateFile}: ${error.message}`);
      fs.rmSync(temporary, { force: true });
    }
  }

  /** Dev servers `conversation` started (or restarted): its Live Preview lists and stops these only. */
  started(conversation, ids) {
    if (conversation === undefined || ids.length === 0) return;
    const mine = [...(this.servers.get(conversation) ?? []).filter((id) => !ids.includes(id)), ...ids];
    remember(this.servers, conversation, mine.slice(-MAX_SERVERS_PER_CONVERSATION), MAX_CONVERSATIONS);
  }

  /** The dev servers `conversation` uses: those it started, and the one its last verification named. */
  serversOf(conversation) {
    const mine = new Set(this.servers.get(conversation) ?? []);
    const named = this.latest.get(conversation)?.args?.server;
    if (typeof named === 'string') mine.add(named);
    return mine;
  }

  record(conversation, args, value) {
    if (conversation === undefined) return;
    const report = value.structured;
    const path = report.reportPath;
    const images = {
      screenshot: report.screenshot?.path,
      reference: report.diff?.reference,
      current: report.diff?.current?.path,
      diff: report.diff?.diff?.path,
    };
    if (path) remember(this.reports, path, { conversation, images }, MAX_KNOWN_REPORTS);
    const card = verificationCard(value);
    remember(this.latest, conversation, {
      args: structuredClone(args),
      summary: {
        verdict: card.verdict,
        why: card.downgrade ?? card.reasons[0],
        next: card.nextAction,
        url: report.requestedUrl || report.url,
        viewport: report.viewport,
        consoleErrors: Array.isArray(report.consoleErrors) ? report.consoleErrors.length : 0,
        consoleWarnings: report.consoleWarnings ?? 0,
        failedRequests: Array.isArray(report.failedRequests) ? report.failedRequests.length : 0,
        report: path,
        // The preview session the verification ran in, which Reload reloads.
        session: report.session,
        hasDiff: Boolean(images.current || images.diff),
        at: Date.now(),
      },
    }, MAX_CONVERSATIONS);
    this.keep();
  }

  /**
   * The conversation's preview as Reload left it: its page (URL, title, console
   * errors) and a fresh screenshot, served as the report's `live` image.
   */
  reloaded(conversation, page, screenshot) {
    const latest = this.latest.get(conversation);
    if (!latest) return;
    const known = this.reports.get(latest.summary.report);
    if (known?.conversation === conversation && screenshot) known.images.live = screenshot;
    latest.summary.live = { ...page, hasImage: Boolean(known?.images.live), at: Date.now() };
    this.keep();
  }

  /** The latest verification of `conversation`, now its most recently used, or undefined. */
  of(conversation) {
    const latest = this.latest.get(conversation);
    if (latest) remember(this.latest, conversation, latest, MAX_CONVERSATIONS);
    return latest;
  }

  image(conversation, report, role) {
    const known = this.reports.get(report);
    const file = known?.conversation === conversation && Object.hasOwn(known.images, role) ? known.images[role] : undefined;
    if (!file) throw new Error(`no ${role} image is known for that report in this conversation`);
    return Buffer.from(readBounded(file, MAX_ATTACHMENT_BYTES)).toString('base64');
  }

  /** Whether the app lets another origin frame it (X-Frame-Options, CSP frame-ancestors). */
  async framing(url) {
    let origin;
    try {
      origin = new URL(url).origin;
    } catch {
      return { allowed: false, reason: 'not a URL' };
    }
    if (!this.frames.has(origin)) remember(this.frames, origin, probeFraming(url), MAX_KNOWN_REPORTS);
    return this.frames.get(origin);
  }
}

/** Sets `key` as the most recent entry of `map`, dropping the oldest above `limit`. */
function remember(map, key, value, limit) {
  map.delete(key);
  map.set(key, value);
  while (map.size > limit) map.delete(map.keys().next().value);
}

async function probeFraming(url) {
  try {
    const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(FRAME_PROBE_MS) });
    await response.body?.cancel();
    const xfo = response.headers.get('x-frame-options');
    if (xfo) return { allowed: false, reason: `X-Frame-Options: ${xfo}` };
    const csp = response.headers.get('content-security-policy') ?? '';
    const ancestors = csp.split(';').map((d) => d.trim()).find((d) => d.toLowerCase().startsWith('frame-ancestors'));
    if (ancestors && !/\s\*(\s|$)/.test(ancestors)) return { allowed: false, reason: `Content-Security-Policy: ${ancestors}` };
    return { allowed: true };
  } catch (error) {
    return { allowed: false, reason: `the app did not answer (${error.message})` };
  }
}

/**
 * The latest stage of each running call, from the sidecar's progress
 * notifications, for the Verification Card of the call's conversation (call ids
 * are the model's, so only the pair is unique). Bounded; a call's entry goes when it ends.
 */
class RunningStages {
  constructor() {
    this.calls = new Map(); // [conversation, callId] as JSON -> { message, progress, at, start? }
  }

  /**
   * A dev-server start of `conversation` began (the agent's approved call, or the
   * person's Start): until it ends, its Live Preview shows it starting, with `plan`.
   */
  begin(conversation, callId, plan) {
    if (callId === undefined) return;
    const entry = { start: plan ?? 'the detected dev command', at: Date.now() };
    remember(this.calls, JSON.stringify([conversation, callId]), entry, MAX_TRACKED_CALLS);
  }

  report(conversation, callId, stage) {
    if (callId === undefined || typeof stage?.message !== 'string') return;
    const key = JSON.stringify([conversation, callId]);
    const entry = { ...this.calls.get(key), message: stage.message.slice(0, 500), progress: stage.progress, at: Date.now() };
    remember(this.calls, key, entry, MAX_TRACKED_CALLS);
  }

  /** The starts of `conversation` still running, each with its last stage: [{plan, stage}]. */
  startsOf(conversation) {
    return [...this.calls]
      .filter(([key, entry]) => entry.start !== undefined && JSON.parse(key)[0] === conversation)
      .map(([, entry]) => ({ plan: entry.start, stage: entry.message }));
  }

  end(conversation, callId) {
    this.calls.delete(JSON.stringify([conversation, callId]));
  }

  of(conversation, callId) {
    return this.calls.get(JSON.stringify([conversation, callId])) ?? null;
  }
}

/**
 * The `/dshkit` RPC endpoints the browser half calls. The views name the
 * conversation they show (DSH's session id, the same as the conversation's
 * agent id on a tool call), and each answer is that conversation's only.
 */
function uiHandler(sidecar, verifications, stages, dshkit, echo, devtools) {
  const conversationIn = (payload) => {
    const id = payload?.conversation;
    if (typeof id !== 'string' || id === '') throw new Error('the request names no conversation');
    return id;
  };
  const latestIn = (payload) => {
    const latest = verifications.of(conversationIn(payload));
    if (!latest) throw new Error('this conversation has no verification yet: ask the agent to verify the app (liveloop_verify)');
    return latest;
  };
  /** `{server}` when the view names one of its conversation's servers, else `{}` (the workspace's app). */
  const serverOf = (payload) => {
    const server = payload?.server;
    if (server === undefined) return {};
    if (typeof server !== 'string' || !verifications.serversOf(conversationIn(payload)).has(server)) {
      throw new Error('that server is not one this conversation started');
    }
    return { server };
  };
  /** The conversation's preview session (its last verification's), as its owner. */
  const previewIn = (payload) => {
    const latest = latestIn(payload);
    if (!latest.summary.session) throw new Error('the last verification names no preview session: Verify opens one');
    return { session: latest.summary.session, owner: latest.args.owner };
  };
  /** One `liveloop_browser` operation on `target`; the page it reached. */
  const browseAs = async (target, args) => {
    const result = await sidecar.call('liveloop_browser', { ...args, ...target });
    if (result.isError) throw new Error(previewGone(result) ?? textOf(result));
    const page = result.structuredContent ?? {};
    return { url: typeof page.url === 'string' ? page.url : undefined };
  };
  /**
   * `dshkit --json settings …`: each setting with its rule, default and value.
   * A change the Rust side refuses is an answer, not a failure: `refused` names
   * every broken rule by its setting, and nothing was written.
   */
  const settings = async (args) => {
    const run = await dshkit(['--json', 'settings', ...args]);
    let answer;
    try {
      answer = JSON.parse(run.stdout);
    } catch {
      throw new Error((run.stderr.trim().split('\n').pop() || 'dshkit settings failed').replace(/^dshkit: error: /, ''));
    }
    if (run.exitCode === 0) return answer;
    const error = answer?.error ?? {};
    if (error.code === 'SETTINGS_INVALID' && Array.isArray(error.problems) && error.problems.length > 0) {
      return { refused: { message: error.message, problems: error.problems } };
    }
    throw new Error(error.message ?? 'dshkit settings failed');
  };
  const endpoints = {
    settings() {
      return settings([]);
    },
    /** `{fields: {key: value as typed}}`: only those settings change; "" restores a default. */
    'settings.set'(payload) {
      const fields = payload?.fields;
      if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
        throw new Error('settings.set takes {fields: {setting: value}}');
      }
      return settings(['set', '--fields', JSON.stringify(fields)]);
    },
    async state(payload) {
      const conversation = conversationIn(payload);
      const summary = verifications.of(conversation)?.summary;
      const mine = verifications.serversOf(conversation);
      let servers = [];
      if (sidecar.running() && mine.size > 0) {
        const result = await sidecar.call(RUNTIME_TOOL, { operation: 'status' });
        servers = (result.structuredContent?.servers ?? []).filter((s) => mine.has(s.id))
          .map((s) => ({ id: s.id, state: s.state, url: s.url, owned: s.owned }));
      }
      const frame = summary?.url ? await verifications.framing(summary.url) : undefined;
      // Approved starts still running, with the stage each last reported.
      const starting = stages.startsOf(conversation);
      return { latest: summary, servers, starting, frame, sidecar: sidecar.describe() };
    },
    progress(payload) {
      return { stage: stages.of(conversationIn(payload), String(payload?.callId ?? '')) };
    },
    image(payload) {
      return { base64: verifications.image(conversationIn(payload), String(payload?.report ?? ''), String(payload?.role ?? 'screenshot')) };
    },
    async verify(payload) {
      // The arguments (the owner among them) are the ones the conversation's own call had.
      const latest = latestIn(payload);
      const result = await sidecar.call('liveloop_verify', latest.args);
      if (result.isError) throw new Error(textOf(result));
      verifications.record(conversationIn(payload), latest.args, { text: textOf(result), structured: result.structuredContent });
      return { verdict: result.structuredContent?.verdict };
    },
    /**
     * A live frame of the conversation's preview session (a JPEG of at most
     * 800 px wide, taken as its owner), or `unchanged` when it equals the
     * view's (`since`). The view asks only while it is shown.
     */
    async frame(payload) {
      const target = previewIn(payload);
      const since = typeof payload?.since === 'string' && /^[0-9a-f]{16}$/.test(payload.since) ? payload.since : undefined;
      const result = await sidecar.call('liveloop_browser', { operation: 'frame', ...target, ...(since ? { since } : {}) });
      if (result.isError) throw new Error(previewGone(result) ?? textOf(result));
      const page = result.structuredContent ?? {};
      const image = (Array.isArray(result.content) ? result.content : [])
        .find((b) => b?.type === 'image' && b.mimeType === 'image/jpeg' && typeof b.data === 'string');
      return {
        frame: page.frame,
        seq: page.seq,
        unchanged: page.unchanged === true,
        url: page.url,
        title: typeof page.title === 'string' ? page.title.slice(0, MAX_CARD_CHARS) : '',
        width: page.width,
        height: page.height,
        canGoBack: page.canGoBack === true,
        canGoForward: page.canGoForward === true,
        viewport: VIEWPORTS.includes(page.viewport) ? page.viewport : undefined,
        ...(image && !page.unchanged ? { base64: image.data } : {}),
      };
    },
    /** The URL bar: the conversation's preview goes to `url` (its own origin only; the sidecar's rule). */
    async navigate(payload) {
      const url = payload?.url;
      if (typeof url !== 'string' || url.trim() === '' || url.length > MAX_URL_CHARS) {
        throw new Error(`give a URL or path of at most ${MAX_URL_CHARS} characters`);
      }
      return browseAs(previewIn(payload), { operation: 'navigate', url: url.trim() });
    },
    back(payload) {
      return browseAs(previewIn(payload), { operation: 'back' });
    },
    /** The viewport switch: the conversation's preview session is re-emulated as a desktop, tablet or phone. */
    viewport(payload) {
      const viewport = payload?.viewport;
      if (!VIEWPORTS.includes(viewport)) throw new Error(`the viewport is one of ${VIEWPORTS.join(', ')}`);
      return browseAs(previewIn(payload), { operation: 'viewport', viewport });
    },
    /**
     * What the conversation's preview session saw since its page loaded: the
     * console's entries and the failed and blocked requests, the newest
     * `MAX_ACTIVITY_ROWS` of each, with how many more there were.
     */
    async activity(payload) {
      const target = previewIn(payload);
      const [console_, network] = await Promise.all([
        sidecar.call('liveloop_browser', { operation: 'console', level: 'all', ...target }),
        sidecar.call('liveloop_browser', { operation: 'network', ...target }),
      ]);
      for (const result of [console_, network]) {
        if (result.isError) throw new Error(previewGone(result) ?? textOf(result));
      }
      const newest = (rows, keep) => {
        const all = Array.isArray(rows) ? rows : [];
        return { rows: all.slice(-MAX_ACTIVITY_ROWS).map(keep), more: Math.max(0, all.length - MAX_ACTIVITY_ROWS) };
      };
      const cut = (text) => (typeof text === 'string' ? text.slice(0, MAX_CARD_CHARS) : undefined);
      const logged = console_.structuredContent ?? {};
      const seen = network.structuredContent ?? {};
      const request = (r) => ({ method: cut(r.method), url: cut(r.url), status: r.status, error: cut(r.error ?? r.rule ?? r.reason) });
      return {
        console: {
          ...newest(logged.entries, (e) => ({ level: cut(e.level), text: cut(e.text), url: cut(e.url), line: e.line })),
          dropped: Number.isInteger(logged.dropped) ? logged.dropped : 0,
        },
        failed: newest(seen.failed, request),
        blocked: newest(seen.blocked, request),
      };
    },
    /** The last lines a server of this conversation printed (the sidecar keeps a bounded tail). */
    async logs(payload) {
      const target = serverOf(payload);
      if (!target.server) throw new Error('name one of this conversation\'s servers');
      const result = await sidecar.call(RUNTIME_TOOL, { operation: 'logs', ...target, lines: LOG_LINES_SHOWN });
      if (result.isError) throw new Error(textOf(result));
      const lines = result.structuredContent?.lines;
      return {
        lines: (Array.isArray(lines) ? lines : []).map((line) => String(line?.text ?? line).slice(0, MAX_CARD_CHARS)),
        dropped: result.structuredContent?.dropped ?? 0,
      };
    },
    forward(payload) {
      return browseAs(previewIn(payload), { operation: 'forward' });
    },
    async reload(payload) {
      // The conversation's own preview session, reloaded as its owner; then a
      // fresh screenshot of it. The page is shown as it is now.
      const conversation = conversationIn(payload);
      const target = previewIn(payload);
      const reloaded = await sidecar.call('liveloop_browser', { operation: 'reload', ...target });
      if (reloaded.isError) throw new Error(previewGone(reloaded) ?? textOf(reloaded));
      const shot = await sidecar.call('liveloop_browser', { operation: 'screenshot', ...target, image: false });
      if (shot.isError) throw new Error(previewGone(shot) ?? textOf(shot));
      const page = reloaded.structuredContent ?? {};
      verifications.reloaded(conversation, {
        url: typeof page.url === 'string' ? page.url : undefined,
        title: typeof page.title === 'string' ? page.title.slice(0, MAX_CARD_CHARS) : undefined,
        consoleErrors: Number.isInteger(page.consoleErrors) ? page.consoleErrors : undefined,
      }, typeof shot.structuredContent?.path === 'string' ? shot.structuredContent.path : undefined);
      return { url: page.url, title: page.title };
    },
    /**
     * What Start (the app the workspace holds) or Restart (`server`, one of this
     * conversation's) would run, running nothing: the view shows it to the
     * person before they start it.
     */
    async plan(payload) {
      const result = await sidecar.call(RUNTIME_TOOL, { operation: 'plan', ...serverOf(payload) });
      if (result.isError) throw new Error(textOf(result));
      return { plan: String(result.structuredContent?.plan ?? '').slice(0, MAX_CARD_CHARS) };
    },
    /**
     * Starts the workspace's app (or restarts one of this conversation's servers)
     * for the person who clicked Start after reading its plan: their click is the
     * approval. It is this conversation's server from then on.
     */
    async start(payload) {
      const conversation = conversationIn(payload);
      const target = serverOf(payload);
      const callId = `view-${Date.now()}`;
      const plan = typeof payload?.plan === 'string' ? payload.plan.slice(0, MAX_CARD_CHARS) : undefined;
      stages.begin(conversation, callId, plan);
      let result;
      try {
        result = await sidecar.call(RUNTIME_TOOL, {
          operation: target.server ? 'restart' : 'start', ...target, confirm: true,
        }, undefined, (stage) => stages.report(conversation, callId, stage));
      } finally {
        stages.end(conversation, callId);
      }
      if (result.isError) throw new Error(textOf(result));
      const ids = (result.structuredContent?.servers ?? []).map((s) => s?.id).filter((id) => typeof id === 'string');
      verifications.started(conversation, ids);
      return { servers: ids };
    },
    /** The Echo tab: this conversation's calls through Echo, from DSH's session log. */
    'echo.calls'(payload) {
      return echo.calls(conversationIn(payload));
    },
    /** One recorded interaction a call of this conversation names, redacted again. */
    'echo.interaction'(payload) {
      const { id, ordinal } = payload ?? {};
      if (typeof id !== 'string' || !Number.isSafeInteger(ordinal)) throw new Error('name a cassette id and an ordinal');
      return echo.interaction(conversationIn(payload), id, ordinal);
    },
    /** The DevTools view: this DSH's runtime from the collector, and its experiment. */
    'devtools.state'(payload) {
      if (!devtools.enabled) return { enabled: false };
      if (!devtools.collector) return { enabled: true, failure: devtools.failure() ?? { message: 'the collector is not running' } };
      // A probe (is DevTools here?) does not start the view's core; the tab's polls do.
      return { enabled: true, ...devtools.collector.view(), live: payload?.probe === true ? null : devtools.view?.state() ?? null };
    },
    /** A person's finite profile of one event (owner: human); an agent cannot take it over or stop it. */
    'devtools.profile'(payload) {
      const { event, seconds } = payload ?? {};
      if (!devtools.collector) throw new Error('Cordis DevTools is not running in this DSH');
      if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds * 1000 > devtools.collector.view().maxLeaseMs) {
        throw new Error(`a profile lasts a whole number of seconds from 1 to ${devtools.collector.view().maxLeaseMs / 1000}`);
      }
      return devtools.collector.startHuman({ event, ttlMs: seconds * 1000 });
    },
    /** The emergency stop: ends the running experiment whoever owns it. */
    'devtools.stop'() {
      if (!devtools.collector) throw new Error('Cordis DevTools is not running in this DSH');
      return devtools.collector.emergencyStop();
    },
    /** The Echo servers and their modes as they run, for the settings. */
    'echo.settings'() {
      return echo.settings();
    },
    /** Switches an HTTP server's mode; one that reaches the real server only once confirmed. */
    'echo.mode'(payload) {
      const { id, mode, confirmed } = payload ?? {};
      if (typeof id !== 'string' || typeof mode !== 'string') throw new Error('name a cassette id and a mode');
      return echo.switchMode(id, mode, confirmed === true);
    },
    // Stop stops what this conversation started: another conversation's servers,
    // and servers dshkit adopted, keep running.
    async stop(payload) {
      const mine = verifications.serversOf(conversationIn(payload));
      if (!sidecar.running() || mine.size === 0) return { stopped: [] };
      const status = await sidecar.call(RUNTIME_TOOL, { operation: 'status' });
      const stopped = [];
      for (const server of status.structuredContent?.servers ?? []) {
        if (!mine.has(server.id) || server.owned === false || server.state === 'stopped' || server.state === 'exited') continue;
        const result = await sidecar.call(RUNTIME_TOOL, { operation: 'stop', server: server.id });
        if (result.isError) throw new Error(`server ${server.id}: ${textOf(result)}`);
        stopped.push(server.id);
      }
      return { stopped };
    },
  };
  return async (endpoint, payload) => {
    const run = Object.hasOwn(endpoints, endpoint) ? endpoints[endpoint] : undefined;
    if (!run) return { ok: false, error: { code: 'bad-request', message: `dshkit has no endpoint ${endpoint}`, details: { issues: [] } } };
    try {
      return { ok: true, value: await run(payload) };
    } catch (error) {
      return { ok: false, error: { code: 'internal', message: `dshkit: ${error.message}`, details: {} } };
    }
  };
}

/**
 * The person's next step when a preview session is gone (closed when idle, or
 * to make room): the refusal says so, and Verify opens a new one.
 */
function previewGone(result) {
  const gone = result.structuredContent?.code === 'UNKNOWN_SESSION' || textOf(result).includes('UNKNOWN_SESSION');
  return gone ? 'the preview of the last verification is closed (idle, or to make room for another): Verify opens it again' : undefined;
}

/** Longest URL the URL bar sends (the sidecar's own limit). */
const MAX_URL_CHARS = 2048;
/** The viewports a preview session can be switched to (the sidecar's presets). */
const VIEWPORTS = ['desktop', 'tablet', 'mobile'];
/** Console entries, failed requests and blocked requests the Live Preview lists, each (the newest). */
const MAX_ACTIVITY_ROWS = 50;

/** Longest owner the sidecar takes. */
const MAX_OWNER_CHARS = 64;

/**
 * The conversation a call runs in: its agent's id, which is its session's id
 * (the `sessionId` DSH gives the browser half's views); undefined outside one.
 * Only DSH says it, never the model.
 */
function conversationOf(exec) {
  const id = exec?.agent?.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * The owner of a call's previews: the conversation it runs in, or the DSH
 * process for calls outside a conversation.
 */
function ownerOf(exec) {
  const id = conversationOf(exec);
  if (id === undefined) return 'dsh';
  const owner = `conversation:${id}`;
  if (owner.length <= MAX_OWNER_CHARS) return owner;
  const crypto = process.getBuiltinModule('node:crypto');
  return `conversation:${crypto.createHash('sha256').update(id).digest('hex').slice(0, 48)}`;
}

/**
 * The input schema without one property the plugin owns: `confirm` (approval
 * comes from the user, through DSH), `image` (screenshots always become
 * attachments) or `owner` (the conversation owns its previews).
 */
function without(schema, name) {
  if (!schema?.properties?.[name]) return schema;
  const { [name]: _dropped, ...properties } = schema.properties;
  const required = Array.isArray(schema.required) ? schema.required.filter((r) => r !== name) : schema.required;
  return { ...schema, properties, ...(required ? { required } : {}) };
}

/** Whether a seam's rule holds for `args`: `{argument, in}`, or every call when absent. */
function holds(when, args) {
  return !when || (Array.isArray(when.in) && when.in.includes(args[when.argument]));
}

/** A template of the binary's with each `{name}` replaced by the call's argument `name`. */
function fill(template, args) {
  return String(template).replace(/\{(\w+)\}/g, (_, name) => (args[name] === undefined ? '?' : String(args[name])));
}

/**
 * What the approved call would do, asked of the tool itself (the approval's
 * `plan` value of its rule's argument) before anyone is asked: its `plan` text.
 * A plan that fails fails the call: nobody approves what cannot run.
 */
async function planOf(sidecar, toolName, approval, args, exec) {
  const { [approval.argument]: _approved, ...rest } = args;
  const result = await sidecar.call(toolName, { ...rest, [approval.when.argument]: approval.plan }, exec.signal);
  const action = fill(approval.action, args);
  if (result.isError === true) throw new Error(`did not ${action}: ${textOf(result)}`);
  const plan = result.structuredContent?.plan;
  return typeof plan === 'string' && plan !== '' ? plan.slice(0, MAX_CARD_CHARS) : undefined;
}

/**
 * Asks the user through DSH's approval service, in the binary's words
 * (`approval`: action, the arguments it shows, what it would run when the tool
 * planned it, reason, otherwise); anything but `allowed-once` refuses.
 */
async function approve(ctx, toolName, approval, args, exec, planned) {
  const service = ctx.get('approval');
  const shown = (Array.isArray(approval.shows) ? approval.shows : [])
    .filter((name) => args[name] !== undefined)
    .map((name) => `${name} ${JSON.stringify(args[name])}`);
  const action = planned
    ? `${fill(approval.action, args)}: ${planned}`
    : `${fill(approval.action, args)}${shown.length > 0 ? ` (${shown.join(', ')})` : ''}`;
  const otherwise = String(approval.otherwise ?? '');
  if (!service || !exec.agent) {
    throw new Error(`${action} needs the user's approval, and this DSH has no approval service here; ${otherwise}`);
  }
  const outcome = await service.request({
    agent: exec.agent,
    toolName,
    callId: exec.callId,
    reason: `dshkit wants to ${action}: ${approval.reason}`,
    signal: exec.signal,
  });
  if (outcome === 'allowed-once') return;
  const why = APPROVAL_OUTCOMES[outcome] ?? `the approval outcome was ${outcome}`;
  throw new Error(`did not ${action}: ${why}. ${otherwise.charAt(0).toUpperCase()}${otherwise.slice(1)}`);
}

/** The text of an MCP tool result. */
function textOf(result) {
  const parts = Array.isArray(result?.content) ? result.content : [];
  const text = parts.filter((p) => p?.type === 'text' && typeof p.text === 'string').map((p) => p.text).join('\n');
  return text || '(no output)';
}

/**
 * Saves the images of a result (the sidecar's image content: a verification's
 * screenshot and a reference diff's Current and Diff, or a browser screenshot)
 * as DSH attachments. They go to the model only when its route accepts images;
 * a text-only model gets the attachment ids. How the sidecar fitted each one
 * (downscaled, cropped) is already in the text.
 */
async function attachImages(ctx, exec, value, result) {
  const blocks = (Array.isArray(result.content) ? result.content : []).filter((b) => b?.type === 'image' && typeof b.data === 'string');
  const described = Array.isArray(result.structuredContent?.images) ? result.structuredContent.images : [];
  value.attachments = [];
  value.notes = [];
  const store = ctx.get('attachments');
  for (const [index, block] of blocks.entries()) {
    const role = typeof described[index]?.role === 'string' ? described[index].role : `image ${index + 1}`;
    if (!store) {
      value.notes.push(`${role}: not attached (DSH has no attachment store)`);
      continue;
    }
    try {
      const data = new Uint8Array(Buffer.from(block.data, 'base64'));
      const size = pngSize(data);
      // The sidecar fits images well inside these; a breach is a bug, never sent on.
      if (data.length > MAX_ATTACHMENT_BYTES || (size && (size.width > MAX_ATTACHMENT_SIDE || size.height > MAX_ATTACHMENT_SIDE))) {
        throw new Error(`${data.length} bytes${size ? `, ${size.width}x${size.height}` : ''} is above DSH's attachment limits`);
      }
      const ref = await store.saveImage({ data, mediaType: block.mimeType ?? 'image/png', name: `dshkit-${role}.png` });
      value.attachments.push({ role, ref });
    } catch (error) {
      value.notes.push(`${role}: not attached (${error.message})`);
    }
  }
  value.imagesForModel = value.attachments.length > 0 && (await acceptsImages(ctx, exec));
}

/** A passing verdict without its attached screenshot is not a pass: it becomes UNVERIFIED, and says why. */
function judgeWithAttachments(value) {
  const report = value.structured;
  const passed = report.verdict === 'VERIFIED' || report.verdict === 'VERIFIED_WITH_WARNINGS';
  if (passed && !(value.attachments ?? []).some((a) => a.role === 'screenshot')) {
    value.verdict = 'UNVERIFIED';
    value.downgrade = `dshkit reported ${report.verdict}, but its screenshot could not be attached: a passing report needs the attached evidence`;
    value.text = `verdict: UNVERIFIED (${value.downgrade})\n${value.text}`;
  } else {
    value.verdict = report.verdict;
  }
}

/**
 * What the Verification Card and the Live Preview show of a verification: the
 * verdict the plugin stands by, and the report's own fields (reasons,
 * nextAction, steps, assertions, reportPath) from its structuredContent,
 * bounded. Never read from the report's text.
 */
function verificationCard(value) {
  const report = value?.structured ?? {};
  const text = (x) => (typeof x === 'string' ? x.slice(0, MAX_CARD_CHARS) : undefined);
  const list = (x) => (Array.isArray(x) ? x.slice(0, MAX_CARD_ITEMS) : []);
  const fields = (object) => Object.fromEntries(Object.entries(typeof object === 'object' && object !== null ? object : {})
    .map(([k, v]) => [k, typeof v === 'string' ? text(v) : v]));
  const card = {
    verdict: text(value?.verdict ?? report.verdict) ?? null,
    reasons: list(report.reasons).map(text).filter(Boolean),
    nextAction: text(report.nextAction) ?? null,
    steps: list(report.steps).map((s) => ({ index: s?.index ?? null, step: text(s?.step) ?? '', ok: s?.ok === true, error: text(s?.error) ?? null })),
    assertions: list(report.assertions).map((a) => ({ assertion: fields(a?.assertion), passed: a?.passed === true, detail: text(a?.detail) ?? '' })),
    reportPath: text(report.reportPath) ?? null,
  };
  if (value?.downgrade) card.downgrade = text(value.downgrade);
  return card;
}

/** Whether the agent's current model route declares image input. */
async function acceptsImages(ctx, exec) {
  try {
    const routed = exec.agent?.session?.requestHeader?.()?.config;
    const provider = routed?.provider ?? exec.agent?.options?.provider;
    const model = routed?.model ?? exec.agent?.options?.model;
    const llm = ctx.get('llm');
    if (!provider || !model || !llm) return false;
    const info = await llm.resolveModelInfo(provider, model, exec.signal);
    return Array.isArray(info?.inputModalities) && info.inputModalities.includes('image');
  } catch {
    return false;
  }
}

/** What the model sees: the text, the attachment ids, and the images when its model takes them. */
function render(value) {
  const blocks = [];
  let text = value.text ?? '';
  const attachments = Array.isArray(value.attachments) ? value.attachments : [];
  if (attachments.length > 0) {
    text += `\nattached: ${attachments.map((a) => `${a.role} ${a.ref?.attachmentId ?? '?'}`).join(', ')}`;
    if (!value.imagesForModel) text += ' (the images are in the conversation for the user; this model reads text only)';
  }
  for (const note of value.notes ?? []) text += `\n${note}`;
  blocks.push({ type: 'text', text });
  if (value.imagesForModel) {
    for (const a of attachments) blocks.push({ type: 'image', attachment: a.ref });
  }
  return blocks;
}

/** Reads a file of at most `limit` bytes; a bigger one is refused, not cut. */
function readBounded(file, limit) {
  const size = fs.statSync(file).size;
  if (size > limit) throw new Error(`${file} is ${size} bytes, above the ${limit}-byte limit`);
  return new Uint8Array(fs.readFileSync(file));
}

/** Width and height from a PNG's IHDR, or undefined for anything else. */
function pngSize(data) {
  if (data.length < 24 || data[0] !== 0x89 || data[1] !== 0x50) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** The skills the binary gives (name, description, text) in DSH's skill catalog. */
function skillProvider(skills) {
  const candidates = skills
    .filter((s) => typeof s?.name === 'string' && typeof s.text === 'string')
    .map((s) => ({ name: s.name, description: String(s.description ?? ''), content: s.text }));
  const summary = (c) => ({
    name: c.name,
    description: c.description,
    invocation: { modelInvocable: true, userInvocable: true },
    provider: 'dshkit',
    source: 'bundled',
    rank: 600,
    locator: `dshkit:${c.name}`,
  });
  return {
    name: 'dshkit',
    list: () => Promise.resolve(candidates.map(summary)),
    get: (candidate) => {
      const found = candidates.find((c) => c.name === candidate.name);
      if (!found) return Promise.reject(new Error(`dshkit has no skill ${candidate.name}`));
      const { locator: _locator, rank: _rank, ...rest } = summary(found);
      return Promise.resolve({ ...rest, content: found.content });
    },
  };
}

/**
 * The MCP sidecar: `dshkit mcp --stdio` as a DSH subprocess (its own process
 * group; DSH kills the whole tree on dispose). One per DSH process.
 */
class Sidecar {
  constructor(ctx, argv, env) {
    this.ctx = ctx;
    this.argv = argv;
    this.env = env;
    this.current = undefined; // Promise of a live connection
    this.crashes = 0;
    this.nextStartAt = 0;
    this.stopped = false;
  }

  /** Whether a sidecar is up (UI polling never starts one). */
  running() {
    return this.current !== undefined && !this.stopped;
  }

  /** The sidecar for the Live Preview: whether it runs, its pid, restarts and log tail. */
  describe() {
    const handle = this.handle;
    const text = handle?.collected.stderr?.readFrom(0).text ?? '';
    const log = text.split('\n').filter((line) => line.trim() !== '').slice(-LOG_LINES_SHOWN);
    return { running: this.running(), pid: handle?.pid, crashes: this.crashes, log };
  }

  /**
   * Calls `name` with `args`; an abort of `signal` cancels it in the sidecar too.
   * `onStage` (optional) hears each stage the tool reports, until it answers.
   */
  async call(name, args, signal, onStage) {
    const connection = await this.connection();
    return connection.request('tools/call', { name, arguments: args }, signal, onStage);
  }

  connection() {
    if (this.stopped) return Promise.reject(new Error('dshkit: the plugin is disposed'));
    if (!this.current) {
      this.current = this.start().catch((error) => {
        this.current = undefined;
        throw error;
      });
    }
    return this.current;
  }

  async start() {
    const wait = this.nextStartAt - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const handle = this.ctx.subprocess.spawn({
      argv: this.argv,
      cwd: process.cwd(),
      stdio: { stdin: 'pipe', stdout: 'pipe', stderr: { maxBytes: STDERR_TAIL_BYTES } },
      graceMs: GRACE_MS,
      env: this.env,
    });
    const connection = new Connection(handle);
    const startedAt = Date.now();
    handle.done.then((outcome) => {
      const healthy = Date.now() - startedAt > HEALTHY_RUN_MS;
      this.crashes = healthy ? 1 : this.crashes + 1;
      const backoff = Math.min(BACKOFF_FIRST_MS * 2 ** (this.crashes - 1), BACKOFF_MAX_MS);
      this.nextStartAt = Date.now() + backoff;
      const stderr = handle.collected.stderr?.readFrom(0).text.trim().slice(-1500) ?? '';
      connection.close(`the dshkit sidecar (pid ${handle.pid}) exited (${outcome.exitCode ?? outcome.signal})${stderr ? `: ${stderr}` : ''}; the next call restarts it`);
      if (this.current && this.currentHandle === handle) this.current = undefined;
    });
    this.currentHandle = handle;
    this.handle = handle;
    await connection.initialize();
    return connection;
  }

  stop() {
    this.stopped = true;
    const handle = this.handle;
    this.handle = undefined;
    this.current = undefined;
    if (handle) {
      handle.terminate();
      return handle.done.then(() => undefined, () => undefined);
    }
    return undefined;
  }
}

/** JSON-RPC over the sidecar's stdio: newline-delimited messages. */
class Connection {
  constructor(handle) {
    this.handle = handle;
    this.nextId = 1;
    this.pending = new Map();
    this.listeners = new Map(); // request id (its progress token) -> stage listener
    this.closedWith = undefined;
    this.buffer = '';
    handle.stdout.setEncoding('utf8');
    handle.stdout.on('data', (chunk) => this.onData(chunk));
    handle.stdout.on('error', (error) => this.close(`the sidecar's stdout failed: ${error.message}`));
    handle.stdin.on('error', (error) => this.close(`the sidecar's stdin failed: ${error.message}`));
  }

  async initialize() {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error(`no answer to initialize within ${HANDSHAKE_MS} ms`)), HANDSHAKE_MS);
    try {
      await this.request('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'dshkit-dsh-plugin', version: PLUGIN_VERSION },
      }, timeout.signal);
    } finally {
      clearTimeout(timer);
    }
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  request(method, params, signal, onProgress) {
    if (this.closedWith) return Promise.reject(new Error(this.closedWith));
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const id = this.nextId++;
    if (onProgress) {
      params = { ...params, _meta: { ...params._meta, progressToken: id } };
      this.listeners.set(id, onProgress);
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.pending.delete(id);
        this.listeners.delete(id);
        this.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'cancelled in DSH' } });
        reject(abortError(signal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = (finish) => (value) => {
        signal?.removeEventListener('abort', onAbort);
        this.listeners.delete(id);
        finish(value);
      };
      this.pending.set(id, { resolve: settle(resolve), reject: settle(reject) });
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }

  send(message) {
    if (this.closedWith) return;
    this.handle.stdin.write(`${JSON.stringify(message)}\n`);
  }

  onData(chunk) {
    this.buffer += chunk;
    if (this.buffer.length > MAX_LINE_BYTES && !this.buffer.includes('\n')) {
      this.close(`the sidecar sent a message above ${MAX_LINE_BYTES} bytes`);
      this.handle.terminate();
      return;
    }
    let newline;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (line) this.onMessage(line);
    }
  }

  onMessage(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return; // Not JSON-RPC: nothing waits for it.
    }
    if (message.method === 'notifications/progress') {
      const listener = this.listeners.get(message.params?.progressToken);
      try {
        listener?.(message.params);
      } catch {
        // A listener's failure never breaks the connection.
      }
      return;
    }
    if (message.id === undefined || message.method !== undefined) return; // Other notifications and requests: unused.
    const waiter = this.pending.get(message.id);
    if (!waiter) return;
    this.pending.delete(message.id);
    if (message.error) waiter.reject(new Error(`dshkit: ${message.error.message ?? 'error'} (${message.error.code})`));
    else waiter.resolve(message.result);
  }

  close(reason) {
    if (this.closedWith) return;
    this.closedWith = reason;
    for (const waiter of this.pending.values()) waiter.reject(new Error(reason));
    this.pending.clear();
    this.listeners.clear();
  }
}

function abortError(signal) {
  const reason = signal?.reason;
  return reason instanceof Error ? reason : new Error('the tool call was cancelled');
}
