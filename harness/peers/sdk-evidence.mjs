// What an MCP host gets from dshkit beyond text, through the official TypeScript
// SDK client: progress during a verification, the screenshot as image content,
// the evidence as resources (linked, listed, read), and a log message after the
// preview browser is killed under the server and relaunched. Prints one JSON report.
//
//   node sdk-evidence.mjs <app url> stdio <command> [args...]
//   node sdk-evidence.mjs <app url> http <url> <token> <server pid>
import { createHash } from "node:crypto";
import fs from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema, ResourceListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [appUrl, mode, ...rest] = process.argv.slice(2);
const transport = mode === "stdio"
  ? new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit", env: process.env })
  : new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } } });
const client = new Client({ name: "dshkit-evidence-client", version: "1.0.0" });
const logs = [];
let listChanged = 0;
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => { listChanged++; });
await client.connect(transport);
const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const report = { capabilities: client.getServerCapabilities() };

const progress = [];
const verified = await client.callTool(
  { name: "liveloop_verify", arguments: { appUrl, steps: [{ action: "press", key: "Tab" }], assertions: [{ kind: "text_present", text: "Todo" }], allowConsoleErrors: true, image: true } },
  undefined,
  { onprogress: (p) => progress.push(p.message) },
);
report.progress = progress;
report.verdict = verified.structuredContent?.verdict;
report.screenshotPath = verified.structuredContent?.screenshot?.path ?? null;
report.images = verified.content.filter((c) => c.type === "image").map((c) => ({ mimeType: c.mimeType, sha256: sha256(Buffer.from(c.data, "base64")) }));
report.links = verified.content.filter((c) => c.type === "resource_link").map((c) => ({ uri: c.uri, mimeType: c.mimeType }));
report.listChangedBeforeResult = listChanged;
report.listed = (await client.listResources()).resources.map((r) => r.uri);
report.reads = [];
for (const link of report.links) {
  const read = await client.readResource({ uri: link.uri });
  const content = read.contents[0];
  report.reads.push({ uri: link.uri, mimeType: content.mimeType, sha256: content.blob ? sha256(Buffer.from(content.blob, "base64")) : sha256(content.text) });
}

// Kill the preview browser under the server (every process descending from
// it), then open a preview: the server relaunches it and says so.
await client.setLoggingLevel("warning");
const opened = await client.callTool({ name: "liveloop_browser", arguments: { operation: "open", url: appUrl } });
const serverPid = mode === "stdio" ? transport.pid : Number(rest[2]);
const descendants = () => {
  const parent = new Map();
  for (const p of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] !== "Z") parent.set(Number(p), Number(fields[1]));
    } catch {}
  }
  const below = (pid) => { for (let at = parent.get(pid); at; at = parent.get(at)) if (at === serverPid) return true; return false; };
  return [...parent.keys()].filter(below);
};
for (const pid of descendants()) { try { process.kill(pid, "SIGKILL"); } catch {} }
for (let i = 0; i < 200 && descendants().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
const before = logs.length;
const reopened = await client.callTool({ name: "liveloop_browser", arguments: { operation: "open", url: appUrl } });
report.firstOpen = !opened.isError;
report.reopened = !reopened.isError;
report.reopenedText = reopened.isError ? reopened.content[0]?.text : undefined;
report.logsAfterRelaunch = logs.slice(before);
report.listChangedTotal = listChanged;
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
