// dshkit's fixed DOM snapshot. Evaluated as `(SNAPSHOT)(generation, limits)`; neither
// the model nor the client can supply script. It walks visible elements in document
// order, derives role, accessible name, value and state, and gives interactive
// elements refs `r<generation>-<index>`. Refs live in a registry of weak references
// that replaces the previous generation's; the DOM is never touched (an attribute
// would break the hydration of server-rendered apps).
(function (generation, limits) {
  const registry = new Map();
  Object.defineProperty(globalThis, Symbol.for("dshkit.refs"), { value: registry, configurable: true, enumerable: false });
  const warnings = [];
  const nodes = [];
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
    "slider", "spinbutton", "switch", "tab", "menuitem", "option", "listbox"]);
  // Containers get refs too, so a part of a large page can be shown on its own
  // (`snapshot {within: ref}`).
  const SCOPES = new Set(["navigation", "main", "form", "dialog", "region", "list", "table", "group", "menu", "tablist"]);
  const clip = (s, n) => { s = (s || "").replace(/\s+/g, " ").trim(); return s.length > n ? s.slice(0, n) + "…" : s; };
  const visible = (e) => {
    if (e.getAttribute("aria-hidden") === "true" || e.hidden) return false;
    const style = getComputedStyle(e);
    if (style.display === "none" || style.visibility === "hidden" || style.visibility === "collapse") return false;
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 || style.display === "contents";
  };
  const byIds = (ids) => ids.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean)
    .map((n) => n.textContent).join(" ");
  // Landmarks and containers are named only by ARIA, never by their content: the
  // content is in the outline already (interactive parts) and in the page text.
  const NAMED_BY_ARIA_ONLY = new Set(["navigation", "main", "form", "dialog", "region", "list", "table", "group"]);
  const nameOf = (e, role) => {
    if (e.hasAttribute("aria-labelledby")) { const t = byIds(e.getAttribute("aria-labelledby")); if (t.trim()) return t; }
    if (e.getAttribute("aria-label")) return e.getAttribute("aria-label");
    if (NAMED_BY_ARIA_ONLY.has(role)) return "";
    if (e.labels && e.labels.length) return [...e.labels].map((l) => l.textContent).join(" ");
    if (e.tagName === "IMG") return e.getAttribute("alt") || "";
    if (e.tagName === "INPUT" && ["submit", "button", "reset"].includes(e.type)) return e.value || e.type;
    if (["textbox", "searchbox", "combobox", "spinbutton"].includes(role)) return e.getAttribute("placeholder") || e.getAttribute("title") || "";
    return e.textContent || e.getAttribute("title") || "";
  };
  const walk = (e, depth) => {
    if (visited >= limits.maxVisited) return;
    visited++;
    if (!visible(e)) return;
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
      if (document.activeElement === e) state.push("focused");
      if (state.length) node.state = state;
      nodes.push(node);
      depth++;
    }
    if (e.shadowRoot) warnings.push("shadow DOM content is not included");
    for (const child of e.children) walk(child, depth);
  };
  if (document.body) walk(document.body, 0);
  const text = document.body ? document.body.innerText || "" : "";
  return {
    url: location.href, title: document.title, nodes, warnings,
    text: text.length > limits.maxText ? text.slice(0, limits.maxText) : text,
    textTruncated: text.length > limits.maxText, textLength: text.length,
    readyState: document.readyState,
  };
})
