// dshkit's fixed DOM snapshot. Evaluated as `(SNAPSHOT)(generation, limits, PAGE_TEXT)`;
// neither the model nor the client can supply script. It walks visible elements in
// the order they are shown (the flat tree: into open shadow roots, slotted content
// where its slot is), derives role, accessible name, value and state, and gives
// interactive elements refs `r<generation>-<index>`. Refs live in a registry of
// weak references that replaces the previous generation's; the DOM is never
// touched (an attribute would break the hydration of server-rendered apps).
// Framework tooling that is not the app (`limits.tooling`) and a framework's
// error overlay (`limits.overlays`) are left out whole; the overlay is read for
// its message.
(function (generation, limits, pageText) {
  const registry = new Map();
  Object.defineProperty(globalThis, Symbol.for("dshkit.refs"), { value: registry, configurable: true, enumerable: false });
  const warnings = [];
  const nodes = [];
  const overlays = new Set(limits.overlays);
  const skipped = new Set([...limits.tooling, ...limits.overlays]);
  // Hosts whose closed root a page script attached (see `closed_roots.js`).
  const closedHosts = globalThis[Symbol.for("dshkit.closedShadowHosts")];
  const closed = [];
  let errorOverlay = null;
  let visited = 0;
  let index = 0;
  const IMPLICIT = {
    A: (e) => (e.hasAttribute("href") ? "link" : null), BUTTON: () => "button", SELECT: () => "combobox",
    TEXTAREA: () => "textbox", H1: () => "heading", H2: () => "heading", H3: () => "heading", H4: () => "heading",
    H5: () => "heading", H6: () => "heading", IMG: () => "img", NAV: () => "navigation", MAIN: () => "main",
    FORM: () => "form", DIALOG: () => "dialog", SUMMARY: () => "button", LABEL: () => null,
    INPUT: (e) => ({ checkbox: "checkbox", radio: "radio", range: "slider", button: "button", submit: "button",
      reset: "button", image: "button", search: "searchbox", email: "textbox", tel: "textbox", url: "textbox",
      text: "textbox", password: "textbox", number: "spinbutton", hidden: null }[(e.type || "text").toLowerCase()] ?? "textbox"),
  };
  const INTERACTIVE_ROLES = new Set(["link", "button", "textbox", "searchbox", "checkbox", "radio", "combobox",
    "slider", "spinbutton", "switch", "tab", "menuitem", "menuitemcheckbox", "menuitemradio", "option", "listbox",
    "treeitem"]);
  // Containers get refs too, so a part of a large page can be shown on its own
  // (`snapshot {within: ref}`).
  const SCOPES = new Set(["navigation", "main", "form", "dialog", "region", "list", "table", "group", "menu", "tablist",
    "tree"]);
  const clip = (s, n) => { s = (s || "").replace(/\s+/g, " ").trim(); return s.length > n ? s.slice(0, n) + "…" : s; };
  // Whether an element is shown (SHOWN), only what it holds may be (INSIDE: a box
  // of no size whose content overflows it, as a host whose root holds a fixed
  // panel), or neither (HIDDEN).
  const HIDDEN = 0, INSIDE = 1, SHOWN = 2;
  const shown = (e) => {
    if (e.getAttribute("aria-hidden") === "true" || e.hidden) return HIDDEN;
    const style = getComputedStyle(e);
    if (style.display === "none" || style.visibility === "hidden" || style.visibility === "collapse") return HIDDEN;
    if (style.display === "contents") return SHOWN;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) return SHOWN;
    return style.overflowX === "visible" && style.overflowY === "visible" ? INSIDE : HIDDEN;
  };
  // An id names an element of the same tree (the document or one shadow root).
  const byIds = (e, ids) => {
    const root = e.getRootNode();
    const scope = typeof root.getElementById === "function" ? root : document;
    return ids.split(/\s+/).map((id) => scope.getElementById(id)).filter(Boolean).map((n) => n.textContent).join(" ");
  };
  // The children as shown: an open root's instead of the host's own (those show
  // only through its slots), a slot's assigned elements (or its fallback).
  const childrenOf = (e) => {
    if (e.shadowRoot) return e.shadowRoot.children;
    if (e.localName === "slot" && e.getRootNode() instanceof ShadowRoot) {
      return e.assignedNodes({ flatten: true }).filter((n) => n.nodeType === Node.ELEMENT_NODE);
    }
    return e.children;
  };
  // Text content as shown, for names: through open roots and slots, without the
  // text of styles and scripts; it stops once it has more than `limit` characters.
  const NO_TEXT = new Set(["style", "script", "template", "noscript"]);
  const shownText = (e, limit) => {
    let text = "";
    const read = (node) => {
      const kids = node.shadowRoot ? node.shadowRoot.childNodes
        : node.localName === "slot" && node.getRootNode() instanceof ShadowRoot ? node.assignedNodes({ flatten: true })
        : node.childNodes;
      for (const child of kids) {
        if (text.length > limit) return;
        if (child.nodeType === Node.TEXT_NODE) text += child.data.replace(/\s+/g, " ");
        else if (child.nodeType === Node.ELEMENT_NODE && !NO_TEXT.has(child.localName)) read(child);
      }
    };
    read(e);
    return text;
  };
  // The content name: `textContent` where the flat tree is the DOM (no open root
  // or slot inside), else the text as shown.
  const contentOf = (e) => e.shadowRoot || e.querySelector("slot") ? shownText(e, limits.maxName * 4) : e.textContent;
  // The element that has the focus, inside open shadow roots too.
  let focused = document.activeElement;
  while (focused && focused.shadowRoot && focused.shadowRoot.activeElement) focused = focused.shadowRoot.activeElement;
  const describe = (e) => "<" + e.localName + (e.id ? "#" + e.id : "")
    + (typeof e.className === "string" && e.className.trim() ? "." + e.className.trim().split(/\s+/)[0] : "") + ">";
  // Landmarks and containers are named only by ARIA, never by their content: the
  // content is in the outline already (interactive parts) and in the page text.
  const NAMED_BY_ARIA_ONLY = new Set(["navigation", "main", "form", "dialog", "region", "list", "table", "group"]);
  const nameOf = (e, role) => {
    if (e.hasAttribute("aria-labelledby")) { const t = byIds(e, e.getAttribute("aria-labelledby")); if (t.trim()) return t; }
    if (e.getAttribute("aria-label")) return e.getAttribute("aria-label");
    if (NAMED_BY_ARIA_ONLY.has(role)) return "";
    if (e.labels && e.labels.length) return [...e.labels].map((l) => l.textContent).join(" ");
    if (e.tagName === "IMG") return e.getAttribute("alt") || "";
    if (e.tagName === "INPUT" && ["submit", "button", "reset"].includes(e.type)) return e.value || e.type;
    if (["textbox", "searchbox", "combobox", "spinbutton"].includes(role)) return e.getAttribute("placeholder") || e.getAttribute("title") || "";
    return contentOf(e) || e.getAttribute("title") || "";
  };
  // The message and place of an error overlay: Vite's own `vite-error-overlay`, or
  // Astro's, which takes Vite's element name with a layout of its own.
  const readOverlay = (root) => {
    const part = (selector) => clip(root.querySelector(selector)?.textContent, limits.maxOverlay);
    if (root.querySelector("#message-content")) {
      const file = root.querySelector("#code header h2");
      return {
        source: "astro", message: clip([part("#name"), part("#message-content")].filter(Boolean).join(": "), limits.maxOverlay),
        file: clip(file && (file.title || file.textContent), limits.maxOverlay),
      };
    }
    // Vite's: the message without the code frame a parser may put in it (its
    // header names the line and column when the overlay's own place does not).
    const full = root.querySelector(".message-body")?.textContent || "";
    const lines = full.split("\n");
    const frame = lines.findIndex((line) => /^\s*(?:[╭╰│┬|]|\d+\s*[│|])/.test(line));
    const message = clip(part(".plugin") + " " + (frame < 0 ? lines : lines.slice(0, frame)).join(" "), limits.maxOverlay);
    let file = part(".file");
    const header = full.match(/╭─\[\s*([^\]]+?):(\d+):(\d+)\s*\]/);
    if (header && !/:\d+:\d+$/.test(file)) {
      file = file && file.endsWith(header[1]) ? file + ":" + header[2] + ":" + header[3] : header.slice(1).join(":");
    }
    return { source: "vite", message, file };
  };
  const walk = (e, depth) => {
    if (visited >= limits.maxVisited) return;
    visited++;
    if (overlays.has(e.localName) && e.shadowRoot && !errorOverlay && shown(e) !== HIDDEN) errorOverlay = readOverlay(e.shadowRoot);
    const seen = skipped.has(e.localName) ? HIDDEN : shown(e);
    if (seen === HIDDEN) return;
    if (!e.shadowRoot && closedHosts && closedHosts.has(e)) closed.push(describe(e));
    if (seen === INSIDE) {
      for (const child of childrenOf(e)) walk(child, depth);
      return;
    }
    const explicit = e.getAttribute("role");
    const role = explicit || (IMPLICIT[e.tagName] ? IMPLICIT[e.tagName](e) : null);
    const interactive = (role && INTERACTIVE_ROLES.has(role)) || e.isContentEditable && e === e.closest("[contenteditable]")
      || (e.tabIndex >= 0 && e.hasAttribute("tabindex"));
    if (e.tagName === "IFRAME") warnings.push("iframe content is not included: " + clip(e.src, 120));
    if (role || interactive) {
      if (nodes.length >= limits.maxNodes) { if (!walk.cut) { warnings.push("outline cut at " + limits.maxNodes + " nodes"); walk.cut = true; } return; }
      const node = { role: role || "generic", name: clip(nameOf(e, role), limits.maxName), depth };
      if (interactive || SCOPES.has(role)) {
        node.ref = "r" + generation + "-" + ++index;
        registry.set(node.ref, new WeakRef(e));
      }
      if (role === "heading") node.level = Number(e.tagName.slice(1)) || Number(e.getAttribute("aria-level")) || undefined;
      if ("value" in e && ["textbox", "searchbox", "combobox", "spinbutton", "slider"].includes(role) && e.type !== "password") node.value = clip(String(e.value), limits.maxName);
      const state = [];
      if (e.disabled) state.push("disabled");
      if (e.checked) state.push("checked");
      if (e.getAttribute("aria-expanded") === "true") state.push("expanded");
      if (e.getAttribute("aria-selected") === "true") state.push("selected");
      if (e.required) state.push("required");
      if (focused === e) state.push("focused");
      if (state.length) node.state = state;
      nodes.push(node);
      depth++;
    }
    for (const child of childrenOf(e)) walk(child, depth);
  };
  if (document.body) walk(document.body, 0);
  if (closed.length) {
    const named = closed.slice(0, limits.maxNamedHosts).join(", ");
    const more = closed.length > limits.maxNamedHosts ? " and " + (closed.length - limits.maxNamedHosts) + " more" : "";
    warnings.push("closed shadow root" + (closed.length > 1 ? "s" : "") + " of " + named + more
      + ": shown on the screenshot, but not in the outline or the page text and not reachable by refs");
  }
  const text = pageText([...skipped]);
  return {
    url: location.href, title: document.title, nodes, warnings, errorOverlay,
    text: text.length > limits.maxText ? text.slice(0, limits.maxText) : text,
    textTruncated: text.length > limits.maxText, textLength: text.length,
    readyState: document.readyState,
  };
})
