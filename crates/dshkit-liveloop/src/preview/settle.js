// Installed before any page script in every preview: counts the work an action
// sets in motion, so the preview settles on evidence instead of a fixed quiet
// window. Counted: fetch and XHR requests (and the reading of a fetched body),
// and short timers, each only when started after the last mark. The Rust side
// adds the requests the page did not start from script (images, documents).
(() => {
  const KEY = Symbol.for("dshkit.settle");
  if (globalThis[KEY]) return;
  // A longer timer is a schedule (a poll, a reminder), not the effect of an action.
  const MAX_TIMER_MS = 1000;
  // A chain of timers (a timer set from a counted timer's callback) is followed
  // this deep; a page polling with short timers settles after that many rounds.
  const MAX_TIMER_DEPTH = 3;
  // Most pieces of work counted at once; beyond that the page is not waited for.
  const MAX_TRACKED = 10000;
  // A frame that is not painted within this long (a hidden page) is not waited for.
  const FRAME_WAIT_MS = 100;
  // A document that keeps changing once the counted work is done (an animation
  // written from script, a ticking clock) is waited for this long, no longer.
  const MAX_CHANGING_MS = 500;

  let epoch = 0;
  const live = new Set();
  let wakers = [];
  const begin = (kind, depth) => {
    if (live.size >= MAX_TRACKED) return null;
    const token = { kind, epoch, depth };
    live.add(token);
    return token;
  };
  const end = (token) => {
    if (!token || !live.delete(token)) return;
    const woken = wakers;
    wakers = [];
    for (const wake of woken) wake();
  };
  const counted = (since) => {
    let n = 0;
    for (const token of live) if (token.epoch >= since) n++;
    return n;
  };

  // Timers: the depth of the counted timer callback running now (0 outside any
  // timer callback; an uncounted timer's callback counts as too deep, so a poll
  // that has run longer than the chain limit is never waited for).
  let depth = 0;
  const setTimeoutOriginal = globalThis.setTimeout;
  const clearTimeoutOriginal = globalThis.clearTimeout;
  const timers = new Map();
  globalThis.setTimeout = function setTimeout(callback, delay, ...args) {
    if (typeof callback !== "function") return setTimeoutOriginal.call(this, callback, delay, ...args);
    const childDepth = depth + 1;
    const token = Number(delay) <= MAX_TIMER_MS && childDepth <= MAX_TIMER_DEPTH ? begin("timer", childDepth) : null;
    let id;
    const run = () => {
      timers.delete(id);
      const outer = depth;
      depth = token ? childDepth : MAX_TIMER_DEPTH + 1;
      try {
        return callback.apply(this, args);
      } finally {
        depth = outer;
        end(token);
      }
    };
    id = setTimeoutOriginal.call(this, run, delay);
    if (token) timers.set(id, token);
    return id;
  };
  globalThis.clearTimeout = function clearTimeout(id) {
    const token = timers.get(id);
    timers.delete(id);
    clearTimeoutOriginal.call(this, id);
    end(token);
  };

  // Requests started from script, and the reading of their bodies.
  const track = (promise, token) => {
    promise.then(() => end(token), () => end(token));
    return promise;
  };
  // `original`, counted from the call until its promise settles.
  const tracked = (original, kind) =>
    function (...args) {
      const token = begin(kind, 0);
      try {
        return track(original.apply(this, args), token);
      } catch (error) {
        end(token);
        throw error;
      }
    };
  if (typeof globalThis.fetch === "function") globalThis.fetch = tracked(globalThis.fetch, "fetch");
  const body = globalThis.Response && globalThis.Response.prototype;
  for (const name of ["json", "text", "arrayBuffer", "blob", "formData"]) {
    if (body && typeof body[name] === "function") body[name] = tracked(body[name], "body");
  }
  const xhr = globalThis.XMLHttpRequest && globalThis.XMLHttpRequest.prototype;
  if (xhr && typeof xhr.send === "function") {
    const sendOriginal = xhr.send;
    xhr.send = function send(...args) {
      const token = begin("xhr", 0);
      // `loadend` comes after `load` and `error`: their handlers have run.
      this.addEventListener("loadend", () => end(token), { once: true });
      try {
        return sendOriginal.apply(this, args);
      } catch (error) {
        end(token);
        throw error;
      }
    };
  }

  const sleep = (ms) => new Promise((resolve) => setTimeoutOriginal(resolve, ms));
  // A task queued now runs after the tasks the page queued before it (a framework
  // scheduler's posted message, a resolved fetch's continuation).
  const nextTask = () =>
    new Promise((resolve) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => resolve();
      channel.port2.postMessage(0);
    });
  // A frame, and the task after it: what the frame showed has been painted.
  const painted = () =>
    Promise.race([new Promise((resolve) => requestAnimationFrame(() => nextTask().then(resolve))), sleep(FRAME_WAIT_MS)]);
  const changed = (ms) =>
    Promise.race([new Promise((resolve) => wakers.push(resolve)), sleep(ms)]);

  const api = {
    // Starts counting afresh: only work started from now on holds a settle.
    mark() {
      epoch += 1;
      return epoch;
    },
    // Resolves when nothing counted since `since` is pending and a task and a
    // painted frame pass with no change to the document, or when `budgetMs` is
    // spent. Style attributes are left out: an animation rewrites them every frame.
    // A document still changing after MAX_CHANGING_MS of no counted work settles
    // as `changing`.
    async settle(since, budgetMs) {
      const started = performance.now();
      let mutations = 0;
      const observer = new MutationObserver((records) => {
        if (records.some((r) => r.type !== "attributes" || r.attributeName !== "style")) mutations += 1;
      });
      observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
      let rounds = 0;
      let idleSince = null;
      try {
        for (;;) {
          const left = budgetMs - (performance.now() - started);
          if (left <= 0) return { settled: false, pending: counted(since), rounds };
          if (counted(since) > 0) {
            idleSince = null;
            await changed(left);
            continue;
          }
          idleSince ??= performance.now();
          if (performance.now() - idleSince > MAX_CHANGING_MS) return { settled: true, changing: true, pending: 0, rounds };
          const seen = mutations;
          // Both at once: a frame asked for only after the task may miss the one
          // that paints the action's effect and wait a whole frame more. A task
          // the page queued that changes the document after the frame is seen
          // by the observer, and the round repeats.
          await Promise.all([nextTask(), painted()]);
          rounds += 1;
          if (counted(since) === 0 && mutations === seen) return { settled: true, pending: 0, rounds };
        }
      } finally {
        observer.disconnect();
      }
    },
  };
  Object.defineProperty(globalThis, KEY, { value: Object.freeze(api) });
})();
