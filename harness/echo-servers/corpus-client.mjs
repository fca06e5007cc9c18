// Drives an MCP server over stdio with the official TypeScript SDK client, the
// way an agent would: it lists what the server offers, then makes the calls of a
// plan in order, and prints one JSON report of everything it received. The Echo
// corpus runs it against a live server through `dshkit echo record` and against
// the cassette through `dshkit echo replay`, and compares the two reports.
//
//   node corpus-client.mjs '<plan>' <command> [args...]
//
// The plan is a JSON array of steps: {"tool": NAME, "arguments": {...}} calls a
// tool; {"resource": URI} reads a resource. The server's child gets this
// process's whole environment (the SDK would pass only a safe subset), and its
// stderr is this process's (where `dshkit echo replay` says what it hit).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [planText, command, ...args] = process.argv.slice(2);
if (!planText || !command) {
  console.error("usage: corpus-client.mjs '<plan>' <command> [args...]");
  process.exit(2);
}
const plan = JSON.parse(planText);
const transport = new StdioClientTransport({ command, args, stderr: "inherit", env: process.env });
const client = new Client({ name: "dshkit-echo-corpus-client", version: "1.0.0" });
await client.connect(transport);
const capabilities = client.getServerCapabilities() ?? {};
const report = { server: client.getServerVersion(), steps: [] };
if (capabilities.tools) {
  report.tools = (await client.listTools()).tools.map((t) => t.name);
}
if (capabilities.prompts) {
  report.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
}
if (capabilities.resources) {
  report.resources = (await client.listResources()).resources.map((r) => r.uri);
}
// A step that fails is reported with its error, and the plan goes on: a
// replay's misses show up in its report instead of ending it.
for (const step of plan) {
  const entry = step.resource ? { resource: step.resource } : { tool: step.tool };
  try {
    entry.result = step.resource
      ? await client.readResource({ uri: step.resource })
      : await client.callTool({ name: step.tool, arguments: step.arguments ?? {} });
  } catch (error) {
    entry.error = { code: error.code ?? null, message: String(error.message) };
  }
  report.steps.push(entry);
}
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
