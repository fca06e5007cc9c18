// Drives an MCP server with the official TypeScript SDK client the way an agent
// test would, and prints one JSON report of everything it received, so a recorded
// run and a replayed run can be compared byte for byte.
//
//   node echo-client.mjs stdio <command> [args...]
//   node echo-client.mjs http <url>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
const transport =
  mode === "http"
    ? new StreamableHTTPClientTransport(new URL(rest[0]))
    : new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "ignore", env: process.env });
const client = new Client({ name: "dshkit-echo-test-client", version: "1.0.0" });
await client.connect(transport);
const progress = [];
const report = {
  server: client.getServerVersion(),
  tools: (await client.listTools()).tools.map((t) => t.name),
  echo: await client.callTool({ name: "echo", arguments: { message: "hello from the cassette" } }),
  sum: await client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } }),
  structured: await client.callTool({ name: "get-structured-content", arguments: { location: "Chicago" } }),
  // A base64 PNG: ordinary data that redaction must leave byte for byte.
  image: await client.callTool({ name: "get-tiny-image", arguments: {} }),
  longRunning: await client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 2 } },
    undefined,
    { onprogress: (p) => progress.push(p) },
  ),
  prompts: (await client.listPrompts()).prompts.map((p) => p.name),
};
report.progress = progress;
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
