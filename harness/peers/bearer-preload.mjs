// Preloaded with `node --import` into MCP clients that cannot be given headers (the
// conformance runner): adds `Authorization: Bearer $DSHKIT_BEARER_TOKEN` to every
// HTTP request sent to $DSHKIT_BEARER_ORIGIN, as a configured client would. It
// installs an undici global dispatcher, which Node's fetch and every undici copy
// in the process share. The server under test keeps its default security.
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.DSHKIT_BEARER_TOKEN;
const origin = process.env.DSHKIT_BEARER_ORIGIN;
if (!token || !origin) throw new Error("set DSHKIT_BEARER_TOKEN and DSHKIT_BEARER_ORIGIN");

function withAuthorization(headers) {
  const value = `Bearer ${token}`;
  if (Array.isArray(headers)) {
    for (let i = 0; i < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() === "authorization") return headers;
    }
    return [...headers, "authorization", value];
  }
  const entries = headers ? Object.entries(headers) : [];
  if (entries.some(([k]) => k.toLowerCase() === "authorization")) return headers;
  return { ...Object.fromEntries(entries), authorization: value };
}

const agent = new Agent().compose((dispatch) => (opts, handler) => {
  let target;
  try {
    target = new URL(String(opts.origin)).origin;
  } catch {
    target = null;
  }
  return dispatch(target === origin ? { ...opts, headers: withAuthorization(opts.headers) } : opts, handler);
});
setGlobalDispatcher(agent);
