// The error class of nostr-outbox. Every failure of the JavaScript API is an
// OutboxError: a real Error (stack, instanceof Error) with a stable string `code`
// and, where useful, structured `details`. The package entry re-exports this class,
// so `err instanceof OutboxError` works for applications.

export class OutboxError extends Error {
  constructor(code, message, details, options) {
    super(message, options);
    this.name = "OutboxError";
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

// Called from Rust: builds an OutboxError; `details` is a plain object or undefined,
// `cause` (a thrown JavaScript value) is kept as the standard `cause` when given.
export function makeError(code, message, details, cause) {
  return new OutboxError(code, message, details, cause === undefined ? undefined : { cause });
}
