// Installed before any page script in every preview: notes each element that a
// page script gives a closed shadow root, so a snapshot can say which content it
// cannot read instead of leaving a silent gap. Only the host is kept (weakly);
// the root stays closed, and the page gets the same root it always would.
(() => {
  const KEY = Symbol.for("dshkit.closedShadowHosts");
  if (globalThis[KEY] || typeof Element === "undefined") return;
  const hosts = new WeakSet();
  Object.defineProperty(globalThis, KEY, { value: hosts });
  const descriptor = Object.getOwnPropertyDescriptor(Element.prototype, "attachShadow");
  if (!descriptor || typeof descriptor.value !== "function") return;
  const attach = descriptor.value;
  // A method, so it has the native one's name, length and no prototype.
  const wrapped = {
    attachShadow(init) {
      const root = attach.call(this, init);
      if (init && init.mode === "closed") hosts.add(this);
      return root;
    },
  }.attachShadow;
  Object.defineProperty(Element.prototype, "attachShadow", { ...descriptor, value: wrapped });
})();
