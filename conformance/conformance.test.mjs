// Runs the official Durable Streams server conformance suite against the
// Herald server at HERALD_URL. scripts/conformance.sh starts a server and
// sets HERALD_URL and HERALD_LONG_POLL_TIMEOUT_MS.
import { runConformanceTests } from "@durable-streams/server-conformance-tests";

const baseUrl = process.env.HERALD_URL;
if (!baseUrl) {
  throw new Error("HERALD_URL must be the base URL of a running Herald server (scripts/conformance.sh sets it)");
}

runConformanceTests({
  baseUrl,
  // The server's --long-poll-timeout: the suite waits this long, plus a
  // second, for long-poll tests.
  longPollTimeoutMs: Number(process.env.HERALD_LONG_POLL_TIMEOUT_MS ?? 2000),
  // The reserved subscription API (webhook and pull-wake), under the
  // stream root /v1/stream that scripts/conformance.sh gives the server.
  subscriptions: true,
});
