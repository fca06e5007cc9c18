// A TLS front for a plain HTTP server on loopback, as a hosted MCP server sits
// behind a TLS proxy (Node's TLS, which is OpenSSL's): every connection is
// decrypted and piped to 127.0.0.1:UPSTREAM_PORT as it is.
//
//   node tls-front.mjs KEY.pem CERT.pem UPSTREAM_PORT
//
// Prints `tls-front: https://127.0.0.1:PORT/mcp` once it listens.
import { readFileSync } from "node:fs";
import net from "node:net";
import tls from "node:tls";

const [key, cert, upstreamPort] = process.argv.slice(2);
const options = { key: readFileSync(key), cert: readFileSync(cert) };
const server = tls.createServer(options, (client) => {
  const upstream = net.connect(Number(upstreamPort), "127.0.0.1");
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const socket of [client, upstream]) {
    socket.on("error", end);
    socket.on("close", end);
  }
  client.pipe(upstream).pipe(client);
});
// A client that refuses the certificate ends its handshake: not our failure.
server.on("tlsClientError", () => {});
server.listen(0, "127.0.0.1", () => {
  console.log(`tls-front: https://127.0.0.1:${server.address().port}/mcp`);
});
