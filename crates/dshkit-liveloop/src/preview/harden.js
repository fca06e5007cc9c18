// Installed before any page script in every preview: no service workers (they
// would outlive the preview and bypass the request-stage policy), no WebRTC or
// WebTransport (peer connections and raw QUIC would too).
(() => {
  try {
    if (navigator.serviceWorker) {
      Object.defineProperty(navigator.serviceWorker, "register", {
        value: () => Promise.reject(new DOMException("service workers are disabled in dshkit previews", "SecurityError")),
      });
    }
  } catch (_) {}
  for (const name of ["RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "WebTransport"]) {
    try { Object.defineProperty(window, name, { value: undefined, configurable: false, writable: false }); } catch (_) {}
  }
})();
