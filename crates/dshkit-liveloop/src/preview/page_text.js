// dshkit's page text: the text a person reads on the page, in the order it is
// shown. Evaluated as `(PAGE_TEXT)(skip)`, `skip` the tag names of framework
// tooling and error overlays, which are not the app (left out with everything
// inside them). It reads the page and never changes it.
//
// `innerText` leaves out what open shadow roots show and puts slotted content
// where it sits in the DOM, not where its slot shows it. So the parts of the page
// where the composed ("flat") tree differs from the DOM are read node by node,
// and every other subtree is read whole by its own `innerText`. A page without
// open shadow roots is read by `document.body.innerText` alone.
(function (skip) {
  const body = document.body;
  if (!body) return "";
  const skipped = new Set(skip);
  // Open hosts and the slots in their roots: where the flat tree departs from the DOM.
  const seeds = [];
  const scan = (root, inShadow) => {
    for (const e of root.querySelectorAll("*")) {
      // Left out: read node by node only when it holds text of its own to leave out.
      if (skipped.has(e.localName)) {
        if (e.firstChild) seeds.push(e);
        continue;
      }
      if (inShadow && e.localName === "slot") seeds.push(e);
      if (e.shadowRoot) {
        seeds.push(e);
        scan(e.shadowRoot, true);
      }
    }
  };
  scan(body, false);
  if (!seeds.length) return body.innerText || "";
  // Every element above a seed in the flat tree is read node by node.
  const marked = new Set([body]);
  for (const seed of seeds) {
    let node = seed;
    while (node && !marked.has(node)) {
      marked.add(node);
      const up = node.assignedSlot || node.parentNode;
      node = up instanceof ShadowRoot ? up.host : up;
    }
  }
  let out = "";
  const newline = () => {
    out = out.replace(/ +$/, "");
    if (out && !out.endsWith("\n")) out += "\n";
  };
  const add = (text) => {
    if (!text) return;
    if ((!out || /\s$/.test(out)) && text.startsWith(" ")) text = text.slice(1);
    out += text;
  };
  const styleOf = new Map();
  const style = (e) => {
    let s = styleOf.get(e);
    if (!s) styleOf.set(e, (s = getComputedStyle(e)));
    return s;
  };
  const childrenOf = (e) => {
    if (e.shadowRoot) return e.shadowRoot.childNodes;
    if (e.localName === "slot" && e.getRootNode() instanceof ShadowRoot) return e.assignedNodes({ flatten: true });
    return e.childNodes;
  };
  const read = (e) => {
    for (const child of childrenOf(e)) {
      if (child.nodeType === Node.TEXT_NODE) {
        // Text right under a shadow root takes its host's style.
        const parent = child.parentElement || child.parentNode.host;
        if (!parent || style(parent).visibility !== "visible") continue;
        add(style(parent).whiteSpace.startsWith("pre") ? child.data : child.data.replace(/[ \t\n\r\f]+/g, " "));
        continue;
      }
      if (child.nodeType !== Node.ELEMENT_NODE || skipped.has(child.localName)) continue;
      // An element outside the flat tree (not slotted) has no display at all.
      const display = style(child).display;
      if (!display || display === "none") continue;
      if (child.localName === "br") {
        out += "\n";
        continue;
      }
      const block = !display.startsWith("inline") && display !== "contents";
      if (block) newline();
      if (marked.has(child)) read(child);
      else add(child.innerText);
      if (block) newline();
    }
  };
  read(body);
  return out.replace(/\n{3,}/g, "\n\n").trim();
})
