// dshkit inside DSH: the client half (a classic script, no build step). It adds a
// Live Preview tab and an Echo tab to the conversation, a Verification Card for
// liveloop_verify calls and a settings section. The views render the report's structure (the
// card: the host half's presentation metadata of the call, taken from its
// structuredContent; the Live Preview: the host half's `/dshkit` RPC channel),
// never the text the binary prints. Each view names its conversation (the
// `sessionId` DSH gives it) on every call and shows that conversation's only.
//
// Any error in a client half replaces DSH's whole UI, so: `apply` never throws,
// every component renders inside an error boundary, and a failure shows a small
// inline message instead.
//
// It registers under the package name DSH serves it for (`/plugins/<name>/client.js`):
// `dshkit` from the npm package, `@local/dshkit` from `dshkit dsh install`.
window.__ModuleLoader__.load({
  id: ((script) => {
    try {
      const served = /^\/plugins\/(.+)\/client\.js$/.exec(new URL(script.src).pathname);
      if (served) return decodeURIComponent(served[1]);
    } catch {
      // No script element (an inline load): the name `dshkit dsh install` gives.
    }
    return '@local/dshkit';
  })(document.currentScript),
  factory: (require) => {
    const React = require('react');
    const h = React.createElement;
    const CHANNEL = '/dshkit';
    /** How often the Live Preview refreshes its state while it is shown. */
    const REFRESH_MS = 2000;
    /** Live frames: at most one per this many ms, only while the view is on screen. */
    const FRAME_MS = 500;
    /** After a failed frame, the next try waits this long. */
    const FRAME_RETRY_MS = 2000;
    /** How often a running Verification Card asks for the call's latest stage. */
    const STAGE_POLL_MS = 500;
    /** What a framed app may do: run scripts and forms in its own origin; never navigate DSH's tab. */
    const FRAME_SANDBOX = 'allow-scripts allow-forms allow-same-origin';

    const originOf = (url) => {
      try {
        return new URL(url).origin;
      } catch {
        return undefined;
      }
    };

    const palette = {
      VERIFIED: '#1a7f37',
      VERIFIED_WITH_WARNINGS: '#9a6700',
      FAILED: '#cf222e',
      UNVERIFIED: '#57606a',
    };

    /** DSH's theme tokens (they follow its dark mode), with light fallbacks. */
    const look = {
      text: 'var(--dsw-alias-label-primary, inherit)',
      secondary: 'var(--dsw-alias-label-secondary, #57606a)',
      border: 'var(--dsw-alias-border-l2, #d0d7de)',
      field: 'var(--dsw-alias-bg-layer-1, transparent)',
      error: 'var(--dsw-alias-state-error-primary, #cf222e)',
      success: 'var(--dsw-alias-state-success-primary, #1a7f37)',
    };
    /**
     * DSH's own UI primitives (`Button`, `Input`, `StateDot`, …), which every
     * client half of DSH draws with and which follow its theme. A DSH that does
     * not serve them gets plain elements in its theme tokens instead.
     */
    const primitives = (() => {
      try {
        return require('@deepseek-ai/dsh-client-ui-primitives') ?? {};
      } catch {
        return {};
      }
    })();

    /** A plain button in DSH's theme tokens, where its `Button` is missing (and for a link drawn as a button). */
    const buttonLook = (pending, disabled) => ({
      padding: '3px 10px', borderRadius: 14, border: `1px solid ${look.border}`, background: look.field,
      color: look.text, font: 'inherit', fontSize: 12, cursor: pending ? 'progress' : 'pointer', opacity: disabled ? 0.4 : 1,
    });

    /**
     * A button as DSH draws its own: small, `outline` by default (`primary`
     * for the one action a form is for, `ghost` for a quiet one). `pending`
     * marks it busy while its call runs.
     */
    function Button({ variant = 'outline', pending = false, style, children, ...rest }) {
      const props = { type: 'button', 'aria-busy': pending ? 'true' : undefined, ...rest };
      if (primitives.Button) {
        return h(primitives.Button, { variant, size: 'sm', ...props, style: { cursor: pending ? 'progress' : undefined, ...style } }, children);
      }
      return h('button', { ...props, style: { ...buttonLook(pending, rest.disabled), ...style } }, children);
    }

    /** A one-line text field as DSH draws its own; `invalid` outlines it in the error colour. */
    function TextField({ invalid = false, grow = false, style, ...rest }) {
      const outer = { display: 'grid', flex: grow ? 1 : undefined, minWidth: 0, borderRadius: 8, outline: invalid ? `1px solid ${look.error}` : undefined, ...style };
      if (primitives.Input) return h('span', { style: outer }, h(primitives.Input, { spellCheck: false, ...rest }));
      return h('span', { style: outer }, h('input', {
        spellCheck: false, ...rest,
        style: { padding: '5px 8px', borderRadius: 8, border: `1px solid ${look.border}`, background: look.field, color: look.text, font: 'inherit' },
      }));
    }

    /** A small coloured dot for a state (`done`, `error`, `warning`, `ongoing`), as DSH shows job and tool states. */
    function Dot({ state }) {
      if (primitives.StateDot) return h(primitives.StateDot, { state });
      const colour = { done: look.success, error: look.error, warning: palette.VERIFIED_WITH_WARNINGS }[state] ?? look.secondary;
      return h('span', { 'aria-hidden': 'true', style: { display: 'inline-block', width: 8, height: 8, borderRadius: 4, background: colour } });
    }

    class Boundary extends React.Component {
      constructor(props) {
        super(props);
        this.state = { error: undefined };
      }
      static getDerivedStateFromError(error) {
        return { error };
      }
      componentDidCatch(error) {
        console.error('[dshkit] a view failed:', error);
      }
      render() {
        if (this.state.error) {
          return h('div', { 'data-dshkit': 'error', role: 'alert', style: { color: palette.FAILED, fontSize: 12, padding: 4 } },
            `dshkit: this view failed (${String(this.state.error?.message ?? this.state.error)}); the rest of DSH is unaffected`);
        }
        return this.props.children;
      }
    }

    const guarded = (Component) => {
      const Guarded = (props) => h(Boundary, null, h(Component, props));
      Guarded.displayName = `dshkit(${Component.displayName ?? Component.name})`;
      return Guarded;
    };

    function Badge({ verdict }) {
      return h('span', {
        'data-dshkit': 'verdict',
        style: { background: palette[verdict] ?? palette.UNVERIFIED, color: 'white', borderRadius: 4, padding: '1px 6px', fontSize: 12, fontWeight: 600 },
      }, verdict ?? 'UNKNOWN');
    }

    /** One assertion of a report as a line: its kind and what it names. */
    const assertionLine = (assertion) => {
      const { kind, ...named } = assertion ?? {};
      return [kind ?? 'assertion', ...Object.values(named).map((v) => JSON.stringify(v))].join(' ');
    };

    /** The checks of a report's card: its steps, then its assertions, each passed or not. */
    const checksOf = (card) => [
      ...(Array.isArray(card.steps) ? card.steps : []).map((s) => ({ ok: s.ok, text: `step ${s.index ?? '?'} ${s.step}${s.error ? `: ${s.error}` : ''}` })),
      ...(Array.isArray(card.assertions) ? card.assertions : []).map((a) => ({ ok: a.passed, text: `${assertionLine(a.assertion)}: ${a.detail}` })),
    ];

    /** A call on the host half's channel; rejects with the host's message. */
    const rpcOf = (ctx) => async (endpoint, payload) => {
      const result = await ctx.connection.rpc.call(CHANNEL, endpoint, payload ?? {});
      if (!result.ok) throw new Error(result.error?.message ?? 'dshkit RPC failed');
      return result.value;
    };

    function Thumbnail({ rpc, conversation, report, role, width }) {
      const [src, setSrc] = React.useState(undefined);
      const [error, setError] = React.useState(undefined);
      React.useEffect(() => {
        let live = true;
        if (!report) return undefined;
        rpc('image', { conversation, report, role }).then(
          (value) => { if (live) setSrc(`data:image/png;base64,${value.base64}`); },
          (e) => { if (live) setError(e.message); },
        );
        return () => { live = false; };
      }, [rpc, conversation, report, role]);
      if (error) return h('div', { style: { fontSize: 11, color: look.secondary } }, `no ${role} image: ${error}`);
      if (!src) return null;
      return h('img', { src, alt: `dshkit ${role}`, 'data-dshkit': `image-${role}`, style: { width, border: `1px solid ${look.border}`, borderRadius: 4 } });
    }

    /** A verification still running: its latest stage, read from the host half. */
    function RunningCard({ callId, conversation, rpc }) {
      const [stage, setStage] = React.useState(undefined);
      React.useEffect(() => {
        if (!callId) return undefined;
        let live = true;
        const poll = () => rpc('progress', { conversation, callId }).then((value) => { if (live && value?.stage) setStage(value.stage); }, () => {});
        poll();
        const timer = setInterval(poll, STAGE_POLL_MS);
        return () => { live = false; clearInterval(timer); };
      }, [callId, conversation, rpc]);
      return h('div', { 'data-dshkit': 'verification-card', 'data-state': 'running', style: { fontSize: 13, padding: 4 } },
        'dshkit: verifying in headless Chromium… ',
        stage ? h('span', { 'data-dshkit': 'stage', style: { color: look.secondary } }, `(${stage.message})`) : null);
    }

    function VerificationCard({ block, dshkitRpc, sessionId: conversation }) {
      const settled = block && 'kind' in block;
      if (!settled) return h(RunningCard, { callId: block?.callId, conversation, rpc: dshkitRpc });
      if (block.isError) {
        // A call that could not run has no report: its message is what there is to show.
        const text = (block.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
        return h('div', { 'data-dshkit': 'verification-card', 'data-state': 'error', style: { fontSize: 13, padding: 4, color: palette.FAILED } },
          `dshkit verification could not run: ${text.split('\n')[0]}`);
      }
      const card = block.meta;
      if (!card || typeof card !== 'object' || typeof card.verdict !== 'string') {
        return h('div', { 'data-dshkit': 'verification-card', 'data-state': 'no-report', style: { fontSize: 13, padding: 4, color: look.secondary } },
          'dshkit: this verification carries no structured report (an older dshkit plugin ran it); its text is in the tool output');
      }
      const reasons = Array.isArray(card.reasons) ? card.reasons : [];
      return h('div', { 'data-dshkit': 'verification-card', 'data-state': 'done', style: { display: 'flex', gap: 12, padding: 6, border: `1px solid ${look.border}`, borderRadius: 6, fontSize: 13 } },
        h('div', { style: { flex: 1, minWidth: 0 } },
          h('div', null, h('strong', null, 'Verification '), h(Badge, { verdict: card.verdict })),
          card.downgrade ? h('div', { 'data-dshkit': 'downgrade' }, card.downgrade) : null,
          reasons.map((r, i) => h('div', { key: i, 'data-dshkit': 'why' }, r)),
          h('ul', { 'data-dshkit': 'checks', style: { margin: '4px 0', paddingLeft: 16 } },
            checksOf(card).map((c, i) => h('li', { key: i }, `${c.ok ? '✓' : '✗'} ${c.text}`))),
          card.nextAction ? h('div', { 'data-dshkit': 'next' }, h('em', null, 'Next: '), card.nextAction) : null),
        card.reportPath ? h(Thumbnail, { rpc: dshkitRpc, conversation, report: card.reportPath, role: 'screenshot', width: 160 }) : null);
    }

    /** What each button of the Live Preview is called, for its pending state and its error. */
    const ACTIONS = {
      reload: 'Reload', verify: 'Verify', stop: 'Stop', copy: 'Copy URL',
      navigate: 'Go', back: 'Back', forward: 'Forward', viewport: 'Viewport',
    };

    /** The viewport switch's presets (the sidecar's: CSS pixels at their device scale). */
    const VIEWPORTS = [
      { id: 'desktop', label: 'Desktop', width: 1280, height: 800 },
      { id: 'tablet', label: 'Tablet', width: 820, height: 1180 },
      { id: 'mobile', label: 'Mobile', width: 390, height: 844 },
    ];
    const viewportOf = (id) => VIEWPORTS.find((v) => v.id === id);
    /** `1280×800`: a preset's size as people write it. */
    const sizeOf = (v) => `${v.width}×${v.height}`;
    /** `Mobile 390×844 · ` for a frame's caption ('' when the viewport is not known). */
    const viewportCaption = (id) => {
      const v = viewportOf(id);
      return v ? `${v.label} ${sizeOf(v)} · ` : '';
    };

    /** A local clock time (`14:03:07`) for "Updated" and "Reloaded". */
    const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });

    /** Only http(s) URLs become links (a page could name `javascript:`). */
    const linkable = (url) => {
      try {
        return ['http:', 'https:'].includes(new URL(url).protocol);
      } catch {
        return false;
      }
    };

    /** A labelled image of the report (Reference, Current, Diff, Now). */
    function Figure({ rpc, conversation, report, role, caption, width }) {
      return h('figure', { 'data-dshkit': `figure-${role}`, style: { margin: 0 } },
        h('figcaption', { style: { fontSize: 11, fontWeight: 600 } }, caption),
        h(Thumbnail, { rpc, conversation, report, role, width }));
    }

    /**
     * Whether `ref`'s element is on screen in a visible tab: live frames are
     * asked for only then, so a preview nobody looks at costs nothing.
     */
    function useOnScreen(ref) {
      const [visible, setVisible] = React.useState(false);
      React.useEffect(() => {
        const element = ref.current;
        if (!element) return undefined;
        let onScreen = false;
        const update = () => setVisible(onScreen && document.visibilityState === 'visible');
        const observer = new IntersectionObserver((entries) => {
          onScreen = entries.some((e) => e.isIntersecting);
          update();
        });
        observer.observe(element);
        document.addEventListener('visibilitychange', update);
        return () => {
          observer.disconnect();
          document.removeEventListener('visibilitychange', update);
        };
      }, [ref]);
      return visible;
    }

    /**
     * The conversation's preview session, live: a URL bar with Back and
     * Forward, and frames of the page (a small JPEG, at most two a second, one
     * request at a time, an unchanged page not sent again), only while the view
     * is on screen. Its own errors stay until its next success or a dismissal.
     */
    function LiveFrame({ rpc, conversation, session, viewport: opened, onNavigated }) {
      const box = React.useRef(null);
      const visible = useOnScreen(box);
      const [frame, setFrame] = React.useState(undefined);
      const [frameError, setFrameError] = React.useState(undefined);
      const [actionError, setActionError] = React.useState(undefined);
      const [address, setAddress] = React.useState(undefined);
      const [busy, setBusy] = React.useState(undefined);
      const [nudge, setNudge] = React.useState(0);
      React.useEffect(() => {
        if (!visible || !session) return undefined;
        let live = true;
        let timer;
        let since;
        const next = async () => {
          const started = Date.now();
          let wait = FRAME_MS;
          try {
            const f = await rpc('frame', { conversation, since });
            if (!live) return;
            if (!f.unchanged && f.base64) since = f.frame;
            setFrame((prev) => ({
              src: !f.unchanged && f.base64 ? `data:image/jpeg;base64,${f.base64}` : prev?.src,
              id: since, seq: f.seq, url: f.url, title: f.title, at: Date.now(),
              width: f.width, height: f.height, canGoBack: f.canGoBack, canGoForward: f.canGoForward, viewport: f.viewport,
            }));
            setFrameError(undefined);
          } catch (e) {
            if (!live) return;
            setFrameError(e.message);
            wait = FRAME_RETRY_MS;
          }
          if (live) timer = setTimeout(next, Math.max(0, wait - (Date.now() - started)));
        };
        next();
        return () => {
          live = false;
          clearTimeout(timer);
        };
      }, [visible, session, rpc, conversation, nudge]);
      const go = (endpoint, payload = {}) => async () => {
        setBusy(endpoint);
        try {
          await rpc(endpoint, { conversation, ...payload });
          setActionError(undefined);
          setAddress(undefined);
          setNudge((n) => n + 1);
          onNavigated?.();
        } catch (e) {
          setActionError({ endpoint, message: e.message });
        } finally {
          setBusy(undefined);
        }
      };
      const shownUrl = address ?? frame?.url ?? '';
      const viewportNow = frame?.viewport ?? opened;
      const control = (endpoint, label, disabled, onClick) => h(Button, {
        onClick, disabled: disabled || busy !== undefined, 'data-dshkit': `button-${endpoint}`,
        pending: busy === endpoint, title: label, variant: endpoint === 'navigate' ? 'primary' : 'outline',
      }, busy === endpoint ? `${label}…` : label);
      return h('div', { ref: box, 'data-dshkit': 'live', 'data-visible': visible ? 'true' : 'false', style: { display: 'flex', flexDirection: 'column', gap: 6 } },
        h('form', {
          style: { display: 'flex', gap: 4, alignItems: 'center' },
          onSubmit: (e) => { e.preventDefault(); go('navigate', { url: shownUrl })(); },
        },
          control('back', 'Back', !frame?.canGoBack, go('back')),
          control('forward', 'Forward', !frame?.canGoForward, go('forward')),
          h(TextField, {
            'aria-label': 'Address', 'data-dshkit': 'address', value: shownUrl, grow: true,
            onChange: (e) => setAddress(e.target.value),
          }),
          control('navigate', 'Go', shownUrl.trim() === '', go('navigate', { url: shownUrl }))),
        h('div', { role: 'group', 'aria-label': 'Viewport', 'data-dshkit': 'viewports', style: { display: 'flex', gap: 4, alignItems: 'center' } },
          ...VIEWPORTS.map((v) => h(Button, {
            key: v.id, variant: viewportNow === v.id ? 'primary' : 'ghost', 'aria-pressed': viewportNow === v.id ? 'true' : 'false',
            disabled: busy !== undefined, pending: busy === 'viewport' && viewportNow !== v.id, 'data-dshkit': `viewport-${v.id}`,
            title: `Show the page as a ${v.label.toLowerCase()} (${sizeOf(v)})`,
            onClick: viewportNow === v.id ? undefined : go('viewport', { viewport: v.id }),
          }, v.label))),
        actionError ? h('div', { role: 'alert', 'data-dshkit': `error-${actionError.endpoint}`, style: { color: look.error, display: 'flex', gap: 8, alignItems: 'baseline' } },
          h('span', null, `${ACTIONS[actionError.endpoint]} failed: ${actionError.message}`),
          h(Button, { variant: 'ghost', 'aria-label': `Dismiss the ${ACTIONS[actionError.endpoint]} error`, onClick: () => setActionError(undefined) }, 'Dismiss')) : null,
        frameError ? h('div', { role: 'alert', 'data-dshkit': 'frame-error', style: { color: look.error } }, `Live frames stopped: ${frameError}`) : null,
        frame?.src ? h('img', {
          src: frame.src, alt: `Live preview of ${frame.url}`, 'data-dshkit': 'live-frame', 'data-seq': frame.seq, 'data-frame': frame.id,
          // Shown at the page's own CSS width (a phone as narrow as a phone), at most the frame's.
          style: { width: '100%', maxWidth: Math.min(frame.width ?? Infinity, viewportOf(viewportNow)?.width ?? Infinity), border: `1px solid ${look.border}`, borderRadius: 4 },
        }) : null,
        h('div', { 'data-dshkit': 'live-caption', style: { fontSize: 11, color: look.secondary } },
          !visible ? 'Live frames paused while the view is hidden.'
            : frame ? `Live · frame ${frame.seq} · ${clock(frame.at)} · ${viewportCaption(viewportNow)}${frame.title || '(no title)'}`
              : 'Live frames: waiting for the first…'));
    }

    /**
     * Start (the workspace's app) and Restart (one of this conversation's
     * servers): the view first shows what would run, planned by dshkit, and the
     * person's Start is the approval. Errors stay until dismissed or answered.
     */
    function StartControl({ rpc, conversation, servers, onDone }) {
      const [asked, setAsked] = React.useState(undefined); // { server?, plan }
      const [busy, setBusy] = React.useState(undefined);
      const [error, setError] = React.useState(undefined);
      const ask = (server) => async () => {
        setBusy('plan');
        try {
          const answer = await rpc('plan', { conversation, ...(server ? { server } : {}) });
          setAsked({ server, plan: answer.plan });
          setError(undefined);
        } catch (e) {
          setError(e.message);
        } finally {
          setBusy(undefined);
        }
      };
      const start = async () => {
        setBusy('start');
        try {
          await rpc('start', { conversation, plan: asked.plan, ...(asked.server ? { server: asked.server } : {}) });
          setAsked(undefined);
          setError(undefined);
        } catch (e) {
          setError(e.message);
        } finally {
          setBusy(undefined);
          onDone();
        }
      };
      const control = (label, onClick, key, variant) => h(Button, {
        key, onClick, disabled: busy !== undefined, pending: busy !== undefined, variant,
      }, label);
      return h('div', { 'data-dshkit': 'start', style: { display: 'flex', flexDirection: 'column', gap: 4 } },
        asked
          ? h('div', { style: { display: 'flex', gap: 6, alignItems: 'baseline', flexWrap: 'wrap' } },
            h('span', { 'data-dshkit': 'start-plan' }, `${asked.server ? `Restart ${asked.server}` : 'Start'}: ${asked.plan}?`),
            control(busy === 'start' ? 'Starting…' : asked.server ? 'Restart' : 'Start', start, 'go', 'primary'),
            control('Cancel', () => setAsked(undefined), 'cancel'))
          : h('div', { style: { display: 'flex', gap: 6, flexWrap: 'wrap' } },
            control(busy === 'plan' ? 'Planning…' : 'Start app…', ask(undefined), 'start'),
            ...servers.map((server) => control(`Restart ${server.id}…`, ask(server.id), server.id))),
        error ? h('div', { role: 'alert', 'data-dshkit': 'error-start', style: { color: look.error, display: 'flex', gap: 8, alignItems: 'baseline' } },
          h('span', null, `Start failed: ${error}`),
          h(Button, { variant: 'ghost', 'aria-label': 'Dismiss the Start error', onClick: () => setError(undefined) }, 'Dismiss')) : null);
    }

    /**
     * A view's state from the host half's `endpoint`, asked again every
     * REFRESH_MS while the view is shown. A failed refresh keeps the last state
     * and says why (`pollError`) until one succeeds.
     */
    function usePolled(rpc, endpoint, conversation) {
      const [state, setState] = React.useState(undefined);
      const [pollError, setPollError] = React.useState(undefined);
      const [updated, setUpdated] = React.useState({ at: undefined, count: 0 });
      const refresh = React.useCallback(() => rpc(endpoint, { conversation }).then((value) => {
        setState(value);
        setPollError(undefined);
        setUpdated((u) => ({ at: Date.now(), count: u.count + 1 }));
      }, (e) => setPollError(e.message)), [rpc, endpoint, conversation]);
      React.useEffect(() => {
        refresh();
        const timer = setInterval(refresh, REFRESH_MS);
        return () => clearInterval(timer);
      }, [refresh]);
      return { state, pollError, updated, refresh };
    }

    function LivePreview({ dshkitRpc: rpc, sessionId: conversation }) {
      // The last refresh's failure: the view keeps showing what it last knew.
      const { state, pollError, updated, refresh } = usePolled(rpc, 'state', conversation);
      // One error per button; it stays until dismissed or that button succeeds
      // (a successful Verify answers them all). Refreshes never clear them.
      const [errors, setErrors] = React.useState({});
      const [busy, setBusy] = React.useState(undefined);
      const [copied, setCopied] = React.useState(undefined);
      const [frameKey, setFrameKey] = React.useState(0);
      const failed = (endpoint, message) => setErrors((all) => ({ ...all, [endpoint]: message }));
      const succeeded = (endpoint) => setErrors((all) => {
        if (endpoint === 'verify') return {};
        const { [endpoint]: _answered, ...rest } = all;
        return rest;
      });
      const act = (endpoint) => async () => {
        setBusy(endpoint);
        try {
          await rpc(endpoint, { conversation });
          succeeded(endpoint);
          setFrameKey((k) => k + 1);
          await refresh();
        } catch (e) {
          failed(endpoint, e.message);
        } finally {
          setBusy(undefined);
        }
      };
      const copy = (url) => async () => {
        try {
          await navigator.clipboard.writeText(url);
          succeeded('copy');
          setCopied(Date.now());
        } catch (e) {
          failed('copy', `the browser did not allow copying (${e?.message ?? e}): select the URL above and copy it`);
        }
      };
      if (pollError && !state) return h('div', { 'data-dshkit': 'live-preview', role: 'alert', style: { padding: 12 } }, `dshkit Live Preview: ${pollError}`);
      if (!state) return h('div', { 'data-dshkit': 'live-preview', style: { padding: 12 } }, 'dshkit Live Preview: loading…');
      const latest = state.latest;
      const live = latest?.live;
      const localBrowser = ['127.0.0.1', 'localhost', '[::1]'].includes(window.location.hostname);
      // A framed app is sandboxed, which holds only while it is of another origin than DSH.
      const ownOrigin = latest?.url && originOf(latest.url) === window.location.origin;
      const framed = latest?.url && state.frame?.allowed && localBrowser && !ownOrigin;
      const frameNote = !latest?.url ? undefined
        : !localBrowser ? 'the app runs on the DSH host, not on this browser\'s machine: showing screenshots'
          : ownOrigin ? 'the app is served from DSH\'s own origin, which a sandboxed frame cannot hold apart: showing screenshots'
            : !state.frame?.allowed ? `the app does not allow framing (${state.frame?.reason ?? 'unknown'}): showing screenshots` : undefined;
      const button = (endpoint, disabled, onClick = act(endpoint)) => h(Button, {
        onClick, disabled: disabled || busy !== undefined, 'data-dshkit': `button-${endpoint}`, pending: busy === endpoint,
      }, busy === endpoint ? `${ACTIONS[endpoint]}…` : ACTIONS[endpoint]);
      const url = latest?.url;
      return h('div', {
        'data-dshkit': 'live-preview', 'data-refreshes': updated.count,
        style: { padding: 12, display: 'flex', flexDirection: 'column', gap: 8, height: '100%', overflow: 'auto', fontSize: 13 },
      },
        h('div', { style: { display: 'flex', justifyContent: 'space-between', gap: 8 } },
          h('strong', null, 'dshkit Live Preview'),
          h('span', { 'data-dshkit': 'updated', style: { fontSize: 11, color: look.secondary } },
            updated.at ? `Updated ${clock(updated.at)}` : '',
            pollError ? ` · could not refresh: ${pollError}` : '')),
        latest ? h('div', { 'data-dshkit': 'target' },
          h('div', null, 'Target: ', h('code', { 'data-dshkit': 'url', style: { userSelect: 'all' } }, url)),
          h('div', null, `Verified as ${latest.viewport ?? "?"} · console errors ${latest.consoleErrors ?? 0} · warnings ${latest.consoleWarnings ?? 0} · failed requests ${latest.failedRequests ?? 0}`),
          h('div', null, 'Latest verdict: ', h(Badge, { verdict: latest.verdict }), latest.why ? ` ${latest.why}` : ''),
          live ? h('div', { 'data-dshkit': 'reloaded' }, `Reloaded ${clock(live.at)}: `, h('code', null, live.title || '(no title)'),
            live.url && live.url !== url ? ` at ${live.url}` : '', live.consoleErrors ? ` · ${live.consoleErrors} console error(s)` : '') : null)
          : h('div', { 'data-dshkit': 'target' }, 'No verification in this conversation yet: ask the agent to verify the app (liveloop_verify).'),
        h('div', { 'data-dshkit': 'servers' },
          ...(state.starting ?? []).map((s, i) => h('div', { key: `starting-${i}`, 'data-dshkit': 'server-starting' },
            `Dev server starting: ${s.plan}${s.stage ? ` (${s.stage})` : ''}`)),
          state.servers.length === 0 && (state.starting ?? []).length === 0 ? 'Dev servers: none started in this conversation'
            : state.servers.map((s) => h(ServerRow, { key: s.id, rpc, conversation, server: s }))),
        h(StartControl, { rpc, conversation, servers: state.servers.filter((s) => s.owned !== false), onDone: refresh }),
        h('div', { style: { display: 'flex', flexWrap: 'wrap', alignItems: 'center', gap: 4 } },
          button('reload', !latest),
          button('verify', !latest),
          button('stop', state.servers.length === 0),
          // A link (a person may also middle-click or copy it), drawn as DSH's outline buttons.
          url && linkable(url) ? h('a', {
            href: url, target: '_blank', rel: 'noopener noreferrer', 'data-dshkit': 'open', title: `Open ${url} in a new tab`,
            style: { ...buttonLook(false, false), display: 'inline-flex', alignItems: 'center', height: 28, boxSizing: 'border-box', textDecoration: 'none' },
          }, 'Open in browser') : null,
          url ? button('copy', false, copy(url)) : null,
          copied && !errors.copy ? h('span', { 'data-dshkit': 'copied', style: { fontSize: 11 } }, 'Copied') : null),
        ...Object.entries(errors).map(([endpoint, message]) => h('div', {
          key: endpoint, role: 'alert', 'data-dshkit': `error-${endpoint}`,
          style: { color: palette.FAILED, display: 'flex', gap: 8, alignItems: 'baseline' },
        }, h('span', null, `${ACTIONS[endpoint] ?? endpoint} failed: ${message}`),
        h(Button, { variant: 'ghost', 'aria-label': `Dismiss the ${ACTIONS[endpoint] ?? endpoint} error`, onClick: () => succeeded(endpoint) }, 'Dismiss'))),
        frameNote ? h('div', { 'data-dshkit': 'frame-note', style: { color: look.secondary } }, frameNote) : null,
        !framed && latest?.session ? h(LiveFrame, { key: latest.session, rpc, conversation, session: latest.session, viewport: latest.viewport, onNavigated: refresh }) : null,
        framed ? h('iframe', {
          key: frameKey, src: latest.url, title: 'dshkit live preview', 'data-dshkit': 'frame',
          // The app runs its scripts and forms, and never navigates DSH's own tab.
          sandbox: FRAME_SANDBOX, referrerPolicy: 'no-referrer',
          style: { width: '100%', minHeight: 360, border: `1px solid ${look.border}` },
        }) : null,
        latest?.report ? h('div', { style: { display: 'flex', gap: 8, flexWrap: 'wrap' } },
          live?.hasImage ? h(Figure, { key: `n${live.at}`, rpc, conversation, report: latest.report, role: 'live', caption: `Now (reloaded ${clock(live.at)})`, width: framed ? 240 : 480 })
            : latest.hasDiff ? null
              : h(Figure, { key: `s${latest.report}`, rpc, conversation, report: latest.report, role: 'screenshot', caption: 'Verified screenshot', width: 240 }),
          latest.hasDiff ? h(Figure, { key: `r${latest.report}`, rpc, conversation, report: latest.report, role: 'reference', caption: 'Reference', width: 240 }) : null,
          latest.hasDiff ? h(Figure, { key: `c${latest.report}`, rpc, conversation, report: latest.report, role: 'current', caption: 'Current', width: 240 }) : null,
          latest.hasDiff ? h(Figure, { key: `d${latest.report}`, rpc, conversation, report: latest.report, role: 'diff', caption: 'Diff', width: 240 }) : null) : null,
        latest?.session ? h(Activity, { key: `a${latest.session}`, rpc, conversation, session: latest.session }) : null,
        h(SidecarLog, { sidecar: state.sidecar }));
    }

    /** A server's state as a dot: ready is done, starting is ongoing, failed an error, exited a warning. */
    const dotOfServer = (state) => ({ ready: 'done', starting: 'ongoing', failed: 'error', exited: 'warning' }[state] ?? 'idle');

    /** One dev server of the conversation: its state and URL, and its log's last lines on demand. */
    function ServerRow({ rpc, conversation, server }) {
      const [open, setOpen] = React.useState(false);
      const [log, setLog] = React.useState(undefined);
      const [error, setError] = React.useState(undefined);
      React.useEffect(() => {
        if (!open) return undefined;
        let live = true;
        const read = () => rpc('logs', { conversation, server: server.id }).then(
          (value) => { if (live) { setLog(value); setError(undefined); } },
          (e) => { if (live) setError(e.message); },
        );
        read();
        const timer = setInterval(read, REFRESH_MS);
        return () => { live = false; clearInterval(timer); };
      }, [open, rpc, conversation, server.id]);
      return h('div', { 'data-dshkit': 'server', 'data-server': server.id },
        h('div', { style: { display: 'flex', gap: 6, alignItems: 'center' } },
          h(Dot, { state: dotOfServer(server.state) }),
          h('span', null, `Server ${server.id}: ${server.state}`, server.url ? ' at ' : '', server.url ? h('code', null, server.url) : null),
          h(Button, { variant: 'ghost', 'aria-expanded': open ? 'true' : 'false', 'data-dshkit': `log-${server.id}`, onClick: () => setOpen((o) => !o) }, open ? 'Hide log' : 'Log')),
        open ? h('pre', { 'data-dshkit': 'server-log', style: { whiteSpace: 'pre-wrap', maxHeight: 200, overflow: 'auto', margin: '4px 0 0 14px', fontSize: 11, color: look.secondary } },
          error ? `The log could not be read: ${error}`
            : !log ? 'Reading…'
              : `${log.dropped > 0 ? `(${log.dropped} earlier lines not kept)\n` : ''}${log.lines.length === 0 ? '(nothing printed yet)' : log.lines.join('\n')}`) : null);
    }

    /** `url:line` of a console entry, when it names one. */
    const whereOf = (entry) => (entry.url ? `${entry.url}${entry.line ? `:${entry.line}` : ''}` : '');

    /** A small table of rows, with how many more there were than it shows. */
    function Rows({ name, caption, columns, rows, more, empty }) {
      const cell = { padding: '2px 6px', borderTop: `1px solid ${look.border}`, verticalAlign: 'top', overflowWrap: 'anywhere' };
      return h('div', { 'data-dshkit': name },
        h('div', { style: { fontWeight: 600, fontSize: 12, margin: '6px 0 2px' } }, caption),
        rows.length === 0 ? h('div', { style: { color: look.secondary, fontSize: 12 } }, empty)
          : h('table', { style: { borderCollapse: 'collapse', width: '100%', fontSize: 12 } },
            h('thead', null, h('tr', null, ...columns.map((c) => h('th', { key: c.label, style: { ...cell, borderTop: 'none', textAlign: 'left', color: look.secondary, fontWeight: 500, width: c.width } }, c.label)))),
            h('tbody', null, ...rows.map((row, i) => h('tr', { key: i }, ...columns.map((c) => h('td', { key: c.label, style: cell }, c.of(row))))))),
        more > 0 ? h('div', { style: { color: look.secondary, fontSize: 11 } }, `and ${more} earlier not shown`) : null);
    }

    /**
     * What the conversation's preview session saw since its page loaded: its
     * console and its failed and blocked requests, read when a person opens
     * the list and refreshed while it is open and on screen.
     */
    function Activity({ rpc, conversation }) {
      const box = React.useRef(null);
      const onScreen = useOnScreen(box);
      const [open, setOpen] = React.useState(false);
      const visible = open && onScreen;
      const [seen, setSeen] = React.useState(undefined);
      const [error, setError] = React.useState(undefined);
      React.useEffect(() => {
        if (!visible) return undefined;
        let live = true;
        const read = () => rpc('activity', { conversation }).then(
          (value) => { if (live) { setSeen(value); setError(undefined); } },
          (e) => { if (live) setError(e.message); },
        );
        read();
        const timer = setInterval(read, REFRESH_MS);
        return () => { live = false; clearInterval(timer); };
      }, [visible, rpc, conversation]);
      const levelColour = (level) => (level === 'error' ? look.error : level === 'warning' ? palette.VERIFIED_WITH_WARNINGS : look.text);
      return h('section', { ref: box, 'data-dshkit': 'activity', 'aria-label': 'Console and network' },
        h(Button, { variant: 'ghost', 'aria-expanded': open ? 'true' : 'false', onClick: () => setOpen((o) => !o), style: { fontWeight: 600, paddingLeft: 0 } },
          `${open ? '▾' : '▸'} Console and network`),
        !open ? null
          : error ? h('div', { role: 'alert', 'data-dshkit': 'activity-error', style: { color: look.error } }, `Could not read them: ${error}`) : null,
        !open ? null
          : !seen ? (error ? null : h('div', { style: { color: look.secondary, fontSize: 12 } }, visible ? 'Reading…' : 'Shown when the view is on screen.'))
          : h(React.Fragment, null,
            h(Rows, {
              name: 'console', caption: `Console (${seen.console.rows.length + seen.console.more}${seen.console.dropped ? `, ${seen.console.dropped} older dropped` : ''})`,
              rows: seen.console.rows, more: seen.console.more, empty: 'Nothing logged since the page loaded.',
              columns: [
                { label: 'Level', width: 64, of: (e) => h('span', { style: { color: levelColour(e.level) } }, e.level) },
                { label: 'Message', of: (e) => e.text },
                { label: 'Where', width: '30%', of: (e) => h('code', null, whereOf(e)) },
              ],
            }),
            h(Rows, {
              name: 'failed-requests', caption: `Failed requests (${seen.failed.rows.length + seen.failed.more})`,
              rows: seen.failed.rows, more: seen.failed.more, empty: 'No request failed or answered 400 or more.',
              columns: [
                { label: 'Status', width: 64, of: (r) => h('span', { style: { color: look.error } }, r.status ?? r.error ?? 'failed') },
                { label: 'Request', of: (r) => h('code', null, `${r.method ?? 'GET'} ${r.url}`) },
              ],
            }),
            h(Rows, {
              name: 'blocked-requests', caption: `Blocked by the preview's network policy (${seen.blocked.rows.length + seen.blocked.more})`,
              rows: seen.blocked.rows, more: seen.blocked.more, empty: 'Nothing was blocked.',
              columns: [
                { label: 'Rule', width: 120, of: (r) => r.error },
                { label: 'Request', of: (r) => h('code', null, r.url) },
              ],
            })));
    }

    /** What dshkit itself reported: its sidecar's state and the tail of its log. */
    function SidecarLog({ sidecar }) {
      if (!sidecar) return null;
      const status = sidecar.running ? `running (pid ${sidecar.pid})` : 'not started (it starts at the first dshkit call)';
      return h('div', { 'data-dshkit': 'sidecar-log', style: { fontSize: 12 } },
        h('div', null, `dshkit log · sidecar ${status}${sidecar.crashes > 0 ? ` · ${sidecar.crashes} exit(s)` : ''}`),
        h('pre', { style: { whiteSpace: 'pre-wrap', maxHeight: 240, overflow: 'auto', margin: 0 } },
          sidecar.log.length === 0 ? '(nothing logged)' : sidecar.log.join('\n')));
    }

    /** A setting's value as a person reads it, with its unit. */
    const shownSetting = (field, value) => {
      if (value === undefined || value === null) return 'default';
      if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(', ');
      return field?.unit ? `${value} ${field.unit}` : String(value);
    };

    /** The text a field starts with: its stored value ('' keeps the default). */
    const typedOf = (field) => {
      if (field.value === undefined || field.value === null) return '';
      return Array.isArray(field.value) ? field.value.join(', ') : String(field.value);
    };

    /**
     * dshkit's settings, as the Rust side describes them (`dshkit settings`):
     * each field with its rule and default. Saving sends only the fields a
     * person changed, as typed; a refused one keeps what was typed, shows its
     * rule under the field, and nothing is stored. A saved change says what
     * moved, and dshkit's sidecar applies it at its next call.
     */
    function SettingsSection({ dshkitRpc: rpc }) {
      const [fields, setFields] = React.useState(undefined);
      const [typed, setTyped] = React.useState({});
      const [problems, setProblems] = React.useState({});
      const [message, setMessage] = React.useState(undefined);
      const [saving, setSaving] = React.useState(false);
      const [path, setPath] = React.useState(undefined);
      // The outcome of a save shows below the button, where the person clicked,
      // brought into view in full.
      const said = React.useRef(null);
      React.useEffect(() => {
        said.current?.scrollIntoView?.({ block: 'nearest' });
      }, [message]);
      const take = React.useCallback((answer) => {
        setFields(answer.fields);
        setPath(answer.path);
        setTyped(Object.fromEntries(answer.fields.map((f) => [f.key, typedOf(f)])));
        setProblems({});
      }, []);
      React.useEffect(() => {
        rpc('settings').then(take, (e) => setMessage({ ok: false, text: `dshkit settings could not be read: ${e.message}` }));
      }, [rpc, take]);
      if (!fields) {
        return h('div', { 'data-dshkit': 'settings', style: { padding: 12, color: message ? look.error : look.secondary } },
          message?.text ?? 'Loading dshkit settings…');
      }
      const changedFields = () => Object.fromEntries(fields
        .filter((f) => (typed[f.key] ?? '').trim() !== typedOf(f))
        .map((f) => [f.key, typed[f.key] ?? '']));
      const save = async () => {
        const changes = changedFields();
        if (Object.keys(changes).length === 0) {
          setMessage({ ok: true, text: 'Nothing to save: no field changed.' });
          return;
        }
        setSaving(true);
        try {
          const answer = await rpc('settings.set', { fields: changes });
          if (answer.refused) {
            setProblems(Object.fromEntries(answer.refused.problems.map((p) => [p.key, p.message])));
            const count = answer.refused.problems.length;
            // Every refused field is named here too: its own rule shows under it,
            // which may be scrolled out of view.
            const named = answer.refused.problems.map((p) => p.label ?? p.key).join(', ');
            setMessage({ ok: false, text: `Not saved: ${count} ${count === 1 ? 'value breaks its rule' : 'values break their rules'} (${named}; each rule is under its field). The stored settings are unchanged.` });
            return;
          }
          const byKey = Object.fromEntries(fields.map((f) => [f.key, f]));
          const moved = (answer.changed ?? []).map((c) => `${c.label}: ${shownSetting(byKey[c.key], c.from)} → ${shownSetting(byKey[c.key], c.to)}`);
          take(answer);
          setMessage({
            ok: true,
            text: moved.length === 0 ? 'Saved: nothing changed.' : `Saved. ${moved.join('; ')}. dshkit applies it at its next call; no restart is needed.`,
          });
        } catch (e) {
          setMessage({ ok: false, text: `Not saved: ${e.message}` });
        } finally {
          setSaving(false);
        }
      };
      const input = (f) => {
        const problem = problems[f.key];
        const hintId = `dshkit-setting-${f.key}-hint`;
        const defaultText = f.default === undefined || f.default === null ? 'none' : shownSetting(f, f.default);
        return h('label', { key: f.key, 'data-dshkit': `setting-${f.key}`, style: { display: 'flex', flexDirection: 'column', gap: 3 } },
          h('span', { style: { fontWeight: 500 } }, f.label),
          h(TextField, {
            'aria-label': f.label,
            'aria-invalid': problem ? 'true' : 'false',
            'aria-describedby': hintId,
            value: typed[f.key] ?? '',
            placeholder: `default: ${defaultText}`,
            inputMode: f.min !== undefined ? 'numeric' : undefined,
            invalid: Boolean(problem),
            onChange: (e) => {
              const value = e.target.value;
              setTyped((t) => ({ ...t, [f.key]: value }));
              setProblems((p) => ({ ...p, [f.key]: undefined }));
            },
            style: { maxWidth: f.key === 'evidenceRoot' || f.key === 'allowExternalHosts' ? 480 : 240 },
          }),
          problem ? h('span', { role: 'alert', 'data-dshkit': 'setting-problem', style: { color: look.error, fontSize: 12 } }, `${f.label} ${problem}`) : null,
          h('small', { id: hintId, style: { color: look.secondary } },
            `${f.help}. ${f.rule[0].toUpperCase()}${f.rule.slice(1)}; default ${defaultText}.`,
            f.overriddenBy ? ` ${f.overriddenBy} is set and wins over this setting.` : ''));
      };
      return h('div', { 'data-dshkit': 'settings', style: { padding: 12, display: 'flex', flexDirection: 'column', gap: 12, fontSize: 13, color: look.text } },
        h('strong', null, 'dshkit'),
        h('small', { style: { color: look.secondary } }, `Stored in ${path}. An empty field keeps the default.`),
        ...fields.map(input),
        h('div', null, h(Button, {
          variant: 'primary', onClick: save, disabled: saving, pending: saving, 'data-dshkit': 'settings-save',
        }, saving ? 'Saving…' : 'Save dshkit settings')),
        message ? h('div', { ref: said, role: message.ok ? 'status' : 'alert', 'data-dshkit': 'settings-message', style: { color: message.ok ? look.success : look.error } }, message.text) : null,
        h(EchoModes, { rpc }));
    }

    /**
     * Echo's servers and their modes. An HTTP server's mode switches here (its
     * proxy restarts); one that reaches the real server only after the person
     * confirmed what it does. A stdio server's mode is its DSH row's.
     */
    function EchoModes({ rpc }) {
      const [state, setState] = React.useState(undefined);
      const [confirm, setConfirm] = React.useState(undefined);
      const [pending, setPending] = React.useState(undefined);
      const [message, setMessage] = React.useState(undefined);
      // A confirmation or an outcome below the fold is brought into view.
      const said = React.useRef(null);
      React.useEffect(() => {
        said.current?.scrollIntoView?.({ block: 'nearest' });
      }, [confirm, message]);
      React.useEffect(() => {
        rpc('echo.settings').then(setState, (e) => setMessage({ ok: false, text: `Echo's servers could not be read: ${e.message}` }));
      }, [rpc]);
      if (!state?.servers?.length) return message ? h('div', { role: 'alert', style: { color: look.error } }, message.text) : null;
      const ask = async (server, mode, confirmed) => {
        setPending(server.id);
        setConfirm(undefined);
        try {
          const answer = await rpc('echo.mode', { id: server.id, mode, confirmed });
          setState(answer);
          if (answer.confirm) {
            setConfirm(answer.confirm);
            setMessage(undefined);
          } else {
            const moved = (answer.changed ?? []).map((c) => `${c.server}: ${c.from} → ${c.to}`);
            setMessage({ ok: true, text: moved.length ? `Switched ${moved.join('; ')}. Its proxy restarted; DSH reconnects to it.` : 'Nothing changed.' });
          }
        } catch (e) {
          setMessage({ ok: false, text: `Not switched: ${e.message}` });
        } finally {
          setPending(undefined);
        }
      };
      const row = (server) => h('div', { key: server.id, 'data-dshkit': `echo-mode-${server.id}`, style: { display: 'flex', flexDirection: 'column', gap: 3 } },
        h('div', { style: { display: 'flex', alignItems: 'center', gap: 8, flexWrap: 'wrap' } },
          h('strong', null, server.server),
          h('span', { style: { color: look.secondary, fontSize: 12 } }, [`cassette ${server.id}`, server.transport === 'http' ? `HTTP proxy ${server.url ?? ''}` : 'stdio'].join(' · ')),
          server.transport === 'http'
            ? h('select', {
              'aria-label': `Echo mode of ${server.server}`, value: server.mode, disabled: pending !== undefined,
              onChange: (e) => ask(server, e.target.value, false),
              style: { font: 'inherit', color: look.text, background: look.field, border: `1px solid ${look.border}`, borderRadius: 6, padding: '2px 4px' },
            }, ...state.modes.map((mode) => h('option', { key: mode, value: mode }, mode)))
            : h('span', { style: { fontSize: 12 } }, `${server.mode}, set by its DSH row (dshkit echo dsh-overlay --mode)`),
          pending === server.id ? h('span', { role: 'status', style: { fontSize: 12, color: look.secondary } }, 'restarting its proxy…') : null),
        server.sideEffects ? h('small', { 'data-dshkit': 'echo-side-effects', style: { color: look.error } }, `${server.mode}: ${server.sideEffects}${server.upstream ? ` (${server.upstream})` : ''}.`) : null);
      return h('div', { 'data-dshkit': 'echo-modes', style: { display: 'flex', flexDirection: 'column', gap: 8, borderTop: `1px solid ${look.border}`, paddingTop: 12 } },
        h('strong', null, 'Echo'),
        ...state.servers.map(row),
        confirm ? h('div', { ref: said, role: 'alertdialog', 'aria-label': `Switch ${confirm.server} to ${confirm.mode}?`, 'data-dshkit': 'echo-confirm', style: { display: 'flex', flexDirection: 'column', gap: 6, padding: 8, border: `1px solid ${look.error}`, borderRadius: 6 } },
          h('span', null, `Switch ${confirm.server} to ${confirm.mode}? In ${confirm.mode}, ${confirm.sideEffects}.`),
          h('div', { style: { display: 'flex', gap: 8 } },
            h(Button, { variant: 'primary', onClick: () => ask(state.servers.find((s) => s.id === confirm.id), confirm.mode, true) }, `Switch to ${confirm.mode}`),
            h(Button, { variant: 'ghost', onClick: () => setConfirm(undefined) }, 'Cancel'))) : null,
        message ? h('div', { ref: said, role: message.ok ? 'status' : 'alert', 'data-dshkit': 'echo-mode-message', style: { color: message.ok ? look.success : look.error } }, message.text) : null);
    }

    /** How an Echo outcome reads, and its dot. */
    const OUTCOMES = {
      hit: { label: 'hit', dot: 'done' },
      miss: { label: 'miss', dot: 'error' },
      passthrough: { label: 'passthrough', dot: 'warning' },
      recorded: { label: 'recorded', dot: 'ongoing' },
      error: { label: 'not annotated', dot: 'error' },
    };

    /** A recorded interaction a call names, fetched when the person opens it. */
    function Interaction({ rpc, conversation, id, ordinal, title }) {
      const [shown, setShown] = React.useState(undefined);
      const [error, setError] = React.useState(undefined);
      const [open, setOpen] = React.useState(false);
      const toggle = () => {
        const opening = !open;
        setOpen(opening);
        if (opening && !shown) {
          rpc('echo.interaction', { conversation, id, ordinal }).then((value) => { setShown(value); setError(undefined); }, (e) => setError(e.message));
        }
      };
      const pre = (text) => h('pre', { style: { margin: 0, padding: 6, maxHeight: 240, overflow: 'auto', fontSize: 11, background: look.field, border: `1px solid ${look.border}`, borderRadius: 4, whiteSpace: 'pre-wrap' } }, text);
      return h('div', { 'data-dshkit': 'echo-interaction' },
        h(Button, { variant: 'ghost', onClick: toggle, 'aria-expanded': open ? 'true' : 'false' }, `${open ? '▾' : '▸'} ${title} #${ordinal}`),
        !open ? null
          : error ? h('div', { role: 'alert', style: { color: look.error, fontSize: 12 } }, error)
            : !shown ? h('div', { style: { fontSize: 12, color: look.secondary } }, 'loading…')
              : h('div', { style: { display: 'flex', flexDirection: 'column', gap: 4 } },
                h('small', { style: { color: look.secondary } }, `Recorded request (redacted again)${shown.truncated ? ' · cut to its first 8 KiB' : ''}`),
                pre(shown.request),
                ...shown.responses.map((response, i) => h(React.Fragment, { key: i },
                  h('small', { style: { color: look.secondary } }, shown.responses.length > 1 ? `Recorded response ${i + 1}` : 'Recorded response'),
                  pre(response)))));
    }

    /** One call through Echo: server, tool, mode, outcome, ordinal; a miss's reason and differing paths. */
    function EchoCall({ call, rpc, conversation }) {
      const outcome = OUTCOMES[call.outcome] ?? { label: String(call.outcome), dot: 'warning' };
      return h('li', { 'data-dshkit': 'echo-call', 'data-outcome': call.outcome, style: { display: 'flex', flexDirection: 'column', gap: 4, padding: '6px 0', borderTop: `1px solid ${look.border}` } },
        h('div', { style: { display: 'flex', alignItems: 'center', gap: 6, flexWrap: 'wrap' } },
          h(Dot, { state: outcome.dot }),
          h('strong', null, outcome.label),
          h('code', null, `${call.server}/${call.tool ?? '?'}`),
          h('span', { style: { color: look.secondary, fontSize: 12 } },
            [call.mode, call.id ? `cassette ${call.id}` : undefined, call.path, call.ordinal !== undefined ? `#${call.ordinal}` : undefined,
              call.fingerprint ? `key ${call.fingerprint}` : undefined].filter(Boolean).join(' · '))),
        call.error ? h('div', { role: 'alert', style: { color: look.error, fontSize: 12 } }, `Not annotated: ${call.error}`) : null,
        call.miss ? h('div', { 'data-dshkit': 'echo-miss', style: { fontSize: 12 } },
          h('div', null, call.miss.message),
          call.miss.differingPaths?.length ? h('div', null, 'Differs at: ', ...call.miss.differingPaths.map((p, i) => h('code', { key: p, style: { marginRight: 6 } }, p))) : null,
          call.miss.recordedTools?.length ? h('div', null, `Recorded tools: ${call.miss.recordedTools.join(', ')}`) : null) : null,
        call.diff?.length ? h('div', { style: { fontSize: 12, color: look.secondary } }, `Matched with differences ignored at: ${call.diff.join(', ')}`) : null,
        call.id && call.ordinal !== undefined ? h(Interaction, { rpc, conversation, id: call.id, ordinal: call.ordinal, title: 'Recorded call' }) : null,
        call.id && call.miss?.nearestOrdinal !== undefined && call.miss?.nearestOrdinal !== null
          ? h(Interaction, { rpc, conversation, id: call.id, ordinal: call.miss.nearestOrdinal, title: 'Nearest recorded call' }) : null);
    }

    /**
     * The Echo tab: this conversation's MCP calls that went through Echo, as DSH
     * stored them (each `tool/result`'s `meta.dshCassette`), with counts and a
     * filter by server and outcome.
     */
    function EchoView({ dshkitRpc: rpc, sessionId: conversation }) {
      const { state, pollError } = usePolled(rpc, 'echo.calls', conversation);
      const [server, setServer] = React.useState('');
      const [outcome, setOutcome] = React.useState('');
      if (pollError && !state) return h('div', { 'data-dshkit': 'echo', role: 'alert', style: { padding: 12 } }, `dshkit Echo: ${pollError}`);
      if (!state) return h('div', { 'data-dshkit': 'echo', style: { padding: 12 } }, 'dshkit Echo: loading…');
      const servers = [...new Set(state.calls.map((c) => c.server))].sort();
      const shown = state.calls.filter((c) => (!server || c.server === server) && (!outcome || c.outcome === outcome));
      const counts = Object.entries(state.counts).filter(([, n]) => n > 0).map(([name, n]) => `${n} ${OUTCOMES[name]?.label ?? name}`);
      const select = (label, value, onChange, options) => h('label', { style: { display: 'flex', gap: 4, alignItems: 'center', fontSize: 12 } }, label,
        h('select', { value, onChange: (e) => onChange(e.target.value), 'aria-label': label, style: { font: 'inherit', color: look.text, background: look.field, border: `1px solid ${look.border}`, borderRadius: 6, padding: '2px 4px' } },
          h('option', { value: '' }, 'all'), ...options.map((o) => h('option', { key: o, value: o }, o))));
      return h('div', { 'data-dshkit': 'echo', style: { padding: 12, display: 'flex', flexDirection: 'column', gap: 8, height: '100%', overflow: 'auto', fontSize: 13, color: look.text } },
        h('div', { style: { display: 'flex', justifyContent: 'space-between', gap: 8 } },
          h('strong', null, 'dshkit Echo'),
          pollError ? h('span', { role: 'alert', style: { fontSize: 11, color: look.error } }, `could not refresh: ${pollError}`) : null),
        ...(state.servers ?? []).filter((s) => s.sideEffects).map((s) => h('div', { key: s.id, 'data-dshkit': 'echo-live', style: { color: look.error, fontSize: 12 } },
          `${s.server} is in ${s.mode} mode: ${s.sideEffects}.`)),
        state.total === 0
          ? h('div', { 'data-dshkit': 'echo-empty' }, 'No call of this conversation went through Echo. Calls to the servers of the plugin\'s Echo registry (dshkit dsh install --echo FILE) show here with their cassette, hit or miss.')
          : h(React.Fragment, null,
            h('div', { 'data-dshkit': 'echo-counts' }, `${state.total} call(s) through Echo: ${counts.join(', ')}`,
              state.truncated ? ` · showing the newest ${state.calls.length}` : ''),
            h('div', { style: { display: 'flex', gap: 12 } },
              select('Server', server, setServer, servers),
              select('Outcome', outcome, setOutcome, Object.keys(OUTCOMES).filter((o) => state.counts[o] > 0))),
            h('ul', { style: { listStyle: 'none', margin: 0, padding: 0 } },
              ...shown.map((call) => h(EchoCall, { key: call.seq, call, rpc, conversation })))));
    }

    /** Fibers in tree order (parents first), each with its depth; cycles and orphans end at the root. */
    function fiberTree(fibers) {
      const children = new Map();
      const known = new Set(fibers.map((f) => f.id));
      for (const fiber of fibers) {
        const parent = known.has(fiber.parent) && fiber.parent !== fiber.id ? fiber.parent : null;
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(fiber);
      }
      const ordered = [];
      const seen = new Set();
      const visit = (parent, depth) => {
        for (const fiber of children.get(parent) ?? []) {
          if (seen.has(fiber.id)) continue;
          seen.add(fiber.id);
          ordered.push({ fiber, depth });
          visit(fiber.id, depth + 1);
        }
      };
      visit(null, 0);
      for (const fiber of fibers) if (!seen.has(fiber.id)) ordered.push({ fiber, depth: 0 });
      // Leaf siblings alike (name, state, effects) in a row read as one line with a count.
      const rows = [];
      for (const row of ordered) {
        const before = rows[rows.length - 1];
        const leaf = !children.has(row.fiber.id);
        if (leaf && before?.leaf && before.depth === row.depth && before.fiber.name === row.fiber.name
          && before.fiber.state === row.fiber.state && before.fiber.effects === row.fiber.effects) {
          before.count += 1;
        } else {
          rows.push({ ...row, leaf, count: 1 });
        }
      }
      return rows;
    }

    const FIBER_DOTS = { active: 'done', failed: 'error', loading: 'ongoing', pending: 'warning', unloading: 'warning', disposed: undefined };

    /**
     * Cordis DevTools for the person at DSH's screen, read from this DSH's own
     * collector over the plugin's loopback channel (no MCP session): the runtime,
     * its fibers and events, the experiment with its owner and time left, a
     * person's finite profile, and the emergency stop, which always ends the
     * running experiment whoever owns it.
     */
    function DevToolsView({ dshkitRpc: rpc }) {
      const { state, pollError, refresh } = usePolled(rpc, 'devtools.state', undefined);
      const [event, setEvent] = React.useState('');
      const [seconds, setSeconds] = React.useState('10');
      const [busy, setBusy] = React.useState(undefined);
      const [message, setMessage] = React.useState(undefined);
      const box = { padding: 12, display: 'flex', flexDirection: 'column', gap: 10, height: '100%', overflow: 'auto', fontSize: 13, color: look.text };
      if (!state) return h('div', { 'data-dshkit': 'devtools', role: pollError ? 'alert' : undefined, style: box }, pollError ? `Cordis DevTools: ${pollError}` : 'Cordis DevTools: loading…');
      if (!state.enabled) return h('div', { 'data-dshkit': 'devtools', style: box }, 'Cordis DevTools is not installed in this DSH: dshkit dsh install --devtools.');
      if (state.failure) return h('div', { 'data-dshkit': 'devtools', role: 'alert', style: { ...box, color: look.error } }, `Cordis DevTools did not start: ${state.failure.message}`);
      const act = async (name, endpoint, payload, said) => {
        setBusy(name);
        try {
          setMessage({ ok: true, text: said(await rpc(endpoint, payload)) });
          refresh();
        } catch (e) {
          setMessage({ ok: false, text: e.message });
        } finally {
          setBusy(undefined);
        }
      };
      const ownerOf = (x) => (x.human ?? x.owner === 'human' ? 'you (a person)' : `an agent (${x.owner})`);
      const { running, last } = state;
      const chosen = event || state.events[0]?.name || '';
      const section = (title, ...body) => h('section', { style: { display: 'flex', flexDirection: 'column', gap: 4 } }, h('strong', null, title), ...body);
      return h('div', { 'data-dshkit': 'devtools', style: box },
        h('div', { style: { display: 'flex', justifyContent: 'space-between', gap: 8, flexWrap: 'wrap' } },
          h('strong', null, 'Cordis DevTools'),
          h('span', { style: { color: look.secondary, fontSize: 12 } },
            `${state.target.label} · pid ${state.target.pid} · Node ${state.target.node} · since ${new Date(state.target.epoch).toLocaleTimeString()} · ${state.cores} core(s) attached${state.live?.watching ? ', this view\'s included' : ''}`),
          pollError ? h('span', { role: 'alert', style: { fontSize: 11, color: look.error } }, `could not refresh: ${pollError}`) : null),
        section('Experiment',
          h('div', { 'data-dshkit': 'devtools-experiment', style: { display: 'flex', alignItems: 'center', gap: 8, flexWrap: 'wrap' } },
            h(Dot, { state: running ? 'ongoing' : 'done' }),
            running
              ? `Profiling ${running.event}, owned by ${ownerOf(running)}: ${Math.ceil(running.leftMs / 1000)} s left, ${running.dispatches} dispatch(es) traced.`
              : last ? `Nothing runs. The last, on ${last.event} by ${ownerOf(last)}, ended: ${last.reason} (dispatch restored: ${last.restored}).` : 'Nothing runs.',
            h(Button, {
              variant: 'outline', style: { color: look.error, borderColor: look.error }, onClick: () => act('stop', 'devtools.stop', {}, (a) => (a.stopped ? `Emergency stop: ${a.last.event} ended; DSH's dispatch restored (${a.last.restored}).` : 'Nothing was running.')),
              pending: busy === 'stop', disabled: busy === 'stop', 'data-dshkit': 'devtools-emergency-stop',
            }, 'Emergency stop')),
          state.experiments
            ? h('div', { style: { display: 'flex', alignItems: 'center', gap: 8, flexWrap: 'wrap' } },
              h('label', { style: { display: 'flex', gap: 4, alignItems: 'center', fontSize: 12 } }, 'Event',
                h('select', { value: chosen, onChange: (e) => setEvent(e.target.value), 'aria-label': 'Event to profile', style: { font: 'inherit', color: look.text, background: look.field, border: `1px solid ${look.border}`, borderRadius: 6, padding: '2px 4px' } },
                  ...state.events.map((e) => h('option', { key: e.name, value: e.name }, `${e.name} (${e.listeners})`)))),
              h('label', { style: { display: 'flex', gap: 4, alignItems: 'center', fontSize: 12 } }, 'Seconds',
                h('input', {
                  type: 'number', min: 1, max: state.maxLeaseMs / 1000, 'aria-label': 'Seconds to profile', value: seconds, onChange: (e) => setSeconds(e.target.value),
                  style: { width: 56, font: 'inherit', color: look.text, background: look.field, border: `1px solid ${look.border}`, borderRadius: 6, padding: '2px 4px' },
                })),
              h(Button, {
                onClick: () => act('profile', 'devtools.profile', { event: chosen, seconds: Number(seconds) }, (x) => `Profiling ${x.event} for ${Math.round((x.expiresAt - x.startedAt) / 1000)} s as a person: an agent can neither take it over nor stop it.`),
                disabled: busy !== undefined || running !== null || !chosen, pending: busy === 'profile',
              }, 'Profile'))
            : h('small', { style: { color: look.secondary } }, 'Experiments are off in this DSH: dshkit dsh install --devtools-experiments.'),
          message ? h('div', { role: message.ok ? 'status' : 'alert', 'data-dshkit': 'devtools-message', style: { color: message.ok ? look.success : look.error } }, message.text) : null),
        h(LiveSections, { live: state.live, section }),
        section(`Fibers (${state.fibersTotal}${state.fibers.length < state.fibersTotal ? `, the first ${state.fibers.length} shown` : ''})`,
          h('ul', { 'data-dshkit': 'devtools-fibers', style: { listStyle: 'none', margin: 0, padding: 0, fontSize: 12 } },
            ...fiberTree(state.fibers).map(({ fiber, depth, count }) => h('li', { key: fiber.id, style: { display: 'flex', alignItems: 'center', gap: 6, paddingLeft: Math.min(depth, 12) * 14 } },
              h(Dot, { state: FIBER_DOTS[fiber.state] }),
              h('code', null, `${fiber.name || '(anonymous)'}${count > 1 ? ` ×${count}` : ''}`),
              h('span', { style: { color: look.secondary } }, `${fiber.state} · ${fiber.effects} effect(s)`))))),
        section(`Events (${state.eventsTotal}${state.events.length < state.eventsTotal ? `, the ${state.events.length} most listened shown` : ''})`,
          h('ul', { 'data-dshkit': 'devtools-events', style: { listStyle: 'none', margin: 0, padding: 0, fontSize: 12 } },
            ...state.events.map((e) => h('li', { key: e.name }, h('code', null, e.name), ` · ${e.listeners} listener(s)`)))));
    }

    // What the view's own core (dshkit's, attached only while the tab looks) says:
    // candidates, recent dispatches and the journal's tail, newest first.
    function LiveSections({ live, section }) {
      if (!live) return null;
      const small = { listStyle: 'none', margin: 0, padding: 0, fontSize: 12, display: 'flex', flexDirection: 'column', gap: 2 };
      const when = (ms) => new Date(ms).toLocaleTimeString();
      const newest = [...live.journal].reverse();
      const dispatches = newest.filter((r) => r.kind === 'dispatch-observed');
      const said = (r) => {
        const { seq, at_ms: at, kind, formatVersion, ...rest } = r;
        return `${Object.entries(rest).map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' · ')}`;
      };
      const candidates = live.candidates;
      return h(React.Fragment, null,
        live.error ? h('div', { role: 'alert', 'data-dshkit': 'devtools-live-error', style: { color: look.error, fontSize: 12 } }, `The view's core: ${live.error}`) : null,
        section(candidates ? `Candidates (${candidates.total}${candidates.items.length < candidates.total ? `, the first ${candidates.items.length} shown` : ''}): facts to look at, never causes` : 'Candidates: asking dshkit…',
          candidates && candidates.items.length === 0 ? h('small', { style: { color: look.secondary } }, `None as of ${when(live.candidatesAt)}.`) : null,
          h('ul', { 'data-dshkit': 'devtools-candidates', style: small },
            ...(candidates?.items ?? []).map((c, i) => h('li', { key: i, style: { display: 'flex', gap: 6, alignItems: 'baseline' } },
              h(Dot, { state: 'warning' }), h('code', { style: { whiteSpace: 'nowrap', flexShrink: 0 } }, c.kind), h('span', null, `${c.subject}: ${c.detail}`))))),
        section(`Recent dispatches (${dispatches.length}${live.watching ? ', watching' : ', not watching'})`,
          dispatches.length === 0 ? h('small', { style: { color: look.secondary } }, live.watching ? 'None since this view attached.' : 'The view attaches while this tab is open.') : null,
          h('ul', { 'data-dshkit': 'devtools-dispatches', style: small },
            ...dispatches.slice(0, 20).map((r) => h('li', { key: r.seq },
              h('span', { style: { color: look.secondary } }, `#${r.seq} ${when(r.at_ms)} `), h('code', null, r.event), ` · ${r.mode} · ${r.argc} argument(s)`)))),
        section(`Journal (the newest ${newest.length} of ${live.journalTotal} since this view attached${live.gaps ? `; ${live.gaps} gap(s): records fell out before they were read` : ''})`,
          h('ul', { 'data-dshkit': 'devtools-journal', style: small },
            ...newest.map((r) => h('li', { key: r.seq },
              h('span', { style: { color: look.secondary } }, `#${r.seq} ${when(r.at_ms)} `), h('code', null, r.kind), ` ${said(r)}`)))));
    }

    const inject = ['slots', 'connection'];

    function apply(ctx) {
      try {
        const dshkitRpc = rpcOf(ctx);
        const Card = guarded(VerificationCard);
        const Preview = guarded(LivePreview);
        ctx.slots.inject('tool.call.toolview', () => ctx.slots.register({
          name: 'tool.call.toolview',
          key: 'liveloop_verify',
          inject: () => ({ dshkitRpc }),
        }, Card));
        ctx.slots.inject('settings.section', () => ctx.slots.register({
          name: 'settings.section',
          id: 'dshkit',
          order: 90,
          label: () => 'dshkit',
          inject: () => ({ dshkitRpc }),
        }, guarded(SettingsSection)));
        // The conversation's tabs, beside DSH's Chat and Trajectory.
        const tab = (id, order, label, View) => ctx.slots.inject('conversation.view', () => ctx.slots.register({
          name: 'conversation.view', id, order, label: () => label, inject: () => ({ dshkitRpc }),
        }, View));
        tab('dshkit-live-preview', 50, 'Live Preview', Preview);
        tab('dshkit-echo', 51, 'Echo', guarded(EchoView));
        // DevTools only where the plugin was installed with it.
        dshkitRpc('devtools.state', { probe: true }).then((devtools) => {
          if (devtools?.enabled) tab('dshkit-devtools', 52, 'DevTools', guarded(DevToolsView));
        }, (error) => console.warn('[dshkit] could not ask whether DevTools runs:', error));
      } catch (error) {
        console.error('[dshkit] the client half could not register its views:', error);
      }
    }

    return { inject, apply };
  },
});
