// The outbox every app below opens: the .wasm from /pkg/ (see the bundler tier for the
// recipes that find it by themselves), short retry delays for the test.
import init, { Outbox } from "nostr-outbox";

/**
 * The wait each app gives its library (maxWait, timeout): far beyond the tests' own timeouts,
 * so an answer that came only at the end of the wait fails the test (promptness by causality).
 */
export const SLOW = 600_000;

export async function openOutbox(name) {
  await init({ module_or_path: "/pkg/nostr_outbox_bg.wasm" });
  return Outbox.open({ name, connectTimeoutMs: 1000, baseDelayMs: 300, maxDelayMs: 1000, autoFlush: true });
}
