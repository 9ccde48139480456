// With HERALD_KEY set, every request the suite makes to the server at
// HERALD_URL carries that key as a bearer credential: the suite has no
// option for headers, and its client resolves the global fetch at each
// call, so wrapping the global is enough. Without HERALD_KEY this does
// nothing (the development mode run).
const key = process.env.HERALD_KEY;
const base = process.env.HERALD_URL;

if (key && base) {
  const original = globalThis.fetch;
  globalThis.fetch = (input, init = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(base)) {
      return original(input, init);
    }
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has("Authorization")) {
      headers.set("Authorization", `Bearer ${key}`);
    }
    return original(input, { ...init, headers });
  };
}
