import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["conformance.test.mjs"],
    // Adds HERALD_KEY to the suite's requests when the server runs with
    // access control on (scripts/conformance.sh --auth).
    setupFiles: ["auth-setup.mjs"],
    // The slowest tests wait for TTL expiry (a few seconds) or run
    // property-based loops of HTTP requests.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ["default"],
  },
});
