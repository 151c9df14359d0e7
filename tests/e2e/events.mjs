// Signed test events made with nostr-tools (another implementation than ours).
import { generateSecretKey, finalizeEvent } from "nostr-tools/pure";

export function signedEvents(count, { content = (i) => `note ${i}`, kind = 1, sk = generateSecretKey() } = {}) {
  const base = Math.floor(Date.now() / 1000);
  return Array.from({ length: count }, (_, i) =>
    finalizeEvent({ kind, created_at: base - i, tags: [["t", "e2e"]], content: content(i) }, sk),
  );
}
