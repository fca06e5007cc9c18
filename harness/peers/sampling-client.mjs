// Calls server-everything's `trigger-sampling-request` tool with the official
// TypeScript SDK client, which declares sampling and answers the server's
// `sampling/createMessage` with a fixed message, and prints one JSON report:
// the tool's result (or the error it was answered with) and what the client
// was asked to sample.
//
//   node sampling-client.mjs <answer text> stdio <command> [args...]
//   node sampling-client.mjs <answer text> http <url>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [answer, mode, ...rest] = process.argv.slice(2);
const transport =
  mode === "http"
    ? new StreamableHTTPClientTransport(new URL(rest[0]))
    : new StdioClientTransport({ command: rest[0], args: rest.slice(1), stderr: "ignore", env: process.env });
const client = new Client(
  { name: "dshkit-echo-sampling-client", version: "1.0.0" },
  { capabilities: { sampling: {} } },
);
const asked = [];
client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
  asked.push(request.params);
  return {
    model: "dshkit-test-model",
    role: "assistant",
    content: { type: "text", text: answer },
    stopReason: "endTurn",
  };
});
await client.connect(transport);
let result;
try {
  result = await client.callTool({
    name: "trigger-sampling-request",
    arguments: { prompt: "name a colour", maxTokens: 20 },
  });
} catch (error) {
  result = { error: { code: error.code, message: error.message, data: error.data } };
}
await client.close();
process.stdout.write(JSON.stringify({ result, asked }) + "\n");
