// The DevTools view's own core. While a person looks at the DevTools tab (the tab
// asks for `devtools.state` every 2 s), the plugin keeps one `dshkit devtools
// watch --json` attached to this DSH for the journal's tail (recent dispatches,
// topology changes, experiments) and asks `dshkit devtools snapshot --json` for
// the candidates now and then. Both the journal and the candidate rules live in
// the Rust core; this only holds their newest answers, bounded. When the tab has
// not asked for VIEW_IDLE_MS the watch is stopped: the collector observes
// dispatches only while some core is attached, so nobody looking costs DSH
// nothing.
//
// Import-free on purpose, like the collector.

/** Journal records the view keeps (the newest). */
export const MAX_VIEW_RECORDS = 50;
/** Candidates the view shows at most. */
export const MAX_VIEW_CANDIDATES = 20;
/** The watch stops after the tab has not asked for this long. */
export const VIEW_IDLE_MS = 10_000;
/** Candidates are asked for again after this long while the tab looks. */
export const CANDIDATES_EVERY_MS = 5_000;
/** Longest line the watch may print before the view gives up on it. */
const MAX_LINE_BYTES = 64 * 1024;

/**
 * `spawn(args)` starts `dshkit ARGS` with piped stdout and gives the DSH
 * subprocess handle; `run(args)` runs one to its end (`{exitCode, stdout,
 * stderr}`); `registry` is the collector's directory; `pid` this process.
 */
export class DevToolsViewCore {
  constructor({ spawn, run, registry, pid = process.pid }) {
    Object.assign(this, { spawn, run, registry, pid });
    this.target = null;
    this.watch = null;
    this.records = [];
    this.recordsTotal = 0;
    this.gaps = 0;
    this.candidates = null;
    this.candidatesAt = 0;
    this.asking = null;
    this.idle = null;
    this.error = null;
    this.disposed = false;
  }

  /** What the tab shows; also keeps the watch running for a while. */
  state() {
    this.touch();
    return {
      watching: this.watch !== null,
      target: this.target,
      journal: this.records.slice(),
      journalTotal: this.recordsTotal,
      gaps: this.gaps,
      candidates: this.candidates,
      candidatesAt: this.candidatesAt || null,
      error: this.error,
    };
  }

  touch() {
    if (this.disposed) return;
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.stop(), VIEW_IDLE_MS);
    this.idle.unref?.();
    if (!this.watch && !this.asking) this.asking = this.start().finally(() => { this.asking = null; });
    else if (this.watch && !this.refreshing && Date.now() - this.candidatesAt >= CANDIDATES_EVERY_MS) this.refreshCandidates();
  }

  dshkit(...args) {
    return ['--json', 'devtools', '--devtools-dir', this.registry, ...args];
  }

  /** `dshkit ARGS --json`'s answer, or its error in words. */
  async ask(args) {
    const run = await this.run(this.dshkit(...args));
    let answer;
    try {
      answer = JSON.parse(run.stdout);
    } catch {
      throw new Error(run.stderr.trim().split('\n').pop() || `dshkit devtools ${args.join(' ')} exited ${run.exitCode}`);
    }
    if (run.exitCode !== 0) throw new Error(answer?.error?.message ?? `dshkit devtools ${args.join(' ')} exited ${run.exitCode}`);
    return answer;
  }

  async start() {
    try {
      // This DSH's target: its collector registered under this process's pid.
      const { targets } = await this.ask(['targets']);
      const own = (Array.isArray(targets) ? targets : []).find((t) => t.pid === this.pid && !t.problem);
      if (!own) throw new Error(`this DSH (pid ${this.pid}) is not among the collector's targets in ${this.registry}`);
      if (this.disposed) return;
      this.target = own.id;
      const watch = this.spawn(this.dshkit('--target', own.id, 'watch'));
      this.watch = watch;
      this.error = null;
      let pending = '';
      watch.stdout.setEncoding('utf8');
      watch.stdout.on('data', (chunk) => {
        pending += chunk;
        let end;
        while ((end = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, end);
          pending = pending.slice(end + 1);
          this.take(line);
        }
        if (pending.length > MAX_LINE_BYTES) pending = '';
      });
      watch.done.then((outcome) => {
        if (this.watch !== watch) return;
        this.watch = null;
        if (!this.stopping) {
          const said = watch.collected?.stderr?.readFrom(0).text.trim().split('\n').pop();
          this.error = `the view's watch ended (${outcome.exitCode ?? outcome.signal})${said ? `: ${said}` : ''}`;
        }
        this.stopping = false;
      });
      await this.refreshCandidates();
    } catch (error) {
      this.error = error.message;
    }
  }

  take(line) {
    let record;
    try { record = JSON.parse(line); } catch { return; }
    if (record?.kind === 'gap') { this.gaps++; return; }
    if (record?.kind === 'target-gone') { this.error = record.message; return; }
    this.records.push(record);
    this.recordsTotal++;
    if (this.records.length > MAX_VIEW_RECORDS) this.records.shift();
  }

  async refreshCandidates() {
    if (!this.target || this.refreshing) return;
    this.refreshing = true;
    try {
      const snapshot = await this.ask(['--target', this.target, 'snapshot']);
      const all = Array.isArray(snapshot?.candidates) ? snapshot.candidates : [];
      this.candidates = { items: all.slice(0, MAX_VIEW_CANDIDATES), total: all.length };
      this.candidatesAt = Date.now();
    } catch (error) {
      this.error = `candidates: ${error.message}`;
      this.candidatesAt = Date.now();
    } finally {
      this.refreshing = false;
    }
  }

  stop() {
    clearTimeout(this.idle);
    const watch = this.watch;
    if (!watch) return;
    this.stopping = true;
    watch.terminate();
  }

  dispose() {
    this.disposed = true;
    this.stop();
  }
}
