// Drives an MCP server with the official TypeScript SDK client and prints one JSON
// report on stdout: the negotiated version, the tool list, a dshkit_doctor call,
// a call with bad arguments and a call of an unknown tool.
//
//   node sdk-client.mjs stdio <command> [args...]
//   node sdk-client.mjs http <url> <token>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "inherit" });
} else if (mode === "http") {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), {
    requestInit: { headers: { Authorization: `Bearer ${rest[1]}` } },
  });
} else {
  console.error("usage: sdk-client.mjs stdio <command> [args...] | http <url> <token>");
  process.exit(2);
}

const client = new Client({ name: "dshkit-test-sdk-client", version: "1.0.0" });
await client.connect(transport);
const report = {
  protocolVersion: transport.protocolVersion ?? null,
  serverVersion: client.getServerVersion(),
  tools: (await client.listTools()).tools.map((t) => ({ name: t.name, annotations: t.annotations, hasOutputSchema: !!t.outputSchema })),
};
report.doctor = await client.callTool({ name: "dshkit_doctor", arguments: {} });
report.badArguments = await client.callTool({ name: "dshkit_doctor", arguments: { unexpected: 1 } });
try {
  await client.callTool({ name: "no_such_tool", arguments: {} });
  report.unknownTool = { error: null };
} catch (err) {
  report.unknownTool = { error: { code: err.code, message: err.message } };
}
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
