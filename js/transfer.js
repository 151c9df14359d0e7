// `outbox.export()` and `outbox.import(source)`: a queue moved between browsers, devices
// and runtimes as NDJSON. The .wasm writes and checks every line (`exportPage`,
// `importLines`: the format, the events' signatures, the records' consistency, the
// queue's rules); this file only streams pages out and reads a source into lines.
// Imported by the package entry (index.js), which adds both methods to Outbox.prototype;
// `nostr-outbox/transfer` also exports them as functions.
import { Outbox } from "./nostr_outbox.js";

const PAGE = 200;

/** The export of `outbox` as a stream of UTF-8 NDJSON bytes. */
export function exportRecords(outbox) {
  const encoder = new TextEncoder();
  let cursor;
  let ended = false;
  return new ReadableStream({
    async pull(controller) {
      if (ended) return controller.close();
      const page = await outbox.exportPage(cursor, PAGE);
      if (page.lines.length > 0) controller.enqueue(encoder.encode(page.lines.join("\n") + "\n"));
      if (page.next === null) ended = true;
      else cursor = page.next;
    },
  });
}

// The chunks of a source, as strings or bytes.
async function* chunks(source) {
  if (typeof source === "string") {
    yield source;
  } else if (source instanceof Uint8Array || source instanceof ArrayBuffer) {
    yield new Uint8Array(source);
  } else if (typeof Blob !== "undefined" && source instanceof Blob) {
    yield* chunks(source.stream());
  } else if (typeof Response !== "undefined" && source instanceof Response) {
    if (source.body === null) return;
    yield* chunks(source.body);
  } else if (source && typeof source.getReader === "function") {
    const reader = source.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  } else if (source && (typeof source[Symbol.asyncIterator] === "function" || typeof source[Symbol.iterator] === "function")) {
    for await (const chunk of source) yield chunk;
  } else {
    throw new BadSource(source);
  }
}

// A source (or a chunk of one) that is neither text nor bytes: the .wasm refuses it with
// `invalid_argument`, as every other argument.
class BadSource {
  constructor(value) {
    this.value = value;
  }
}

// The lines of a source (a line ends at "\n"; a "\r" before it is dropped). Bytes that
// are not UTF-8 become U+FFFD, so the line they are on fails its checks in the .wasm.
async function lines(source) {
  const decoder = new TextDecoder();
  const out = [];
  let rest = "";
  for await (const chunk of chunks(source)) {
    if (typeof chunk === "string") rest += chunk;
    else if (chunk instanceof Uint8Array || chunk instanceof ArrayBuffer) rest += decoder.decode(chunk, { stream: true });
    else throw new BadSource(chunk);
    const parts = rest.split("\n");
    rest = parts.pop();
    out.push(...parts);
  }
  rest += decoder.decode();
  if (rest !== "") out.push(rest);
  return out.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line));
}

/** Imports an export into `outbox` (see `Outbox.import`). */
export async function importRecords(outbox, source) {
  let read;
  try {
    read = await lines(source);
  } catch (e) {
    if (e instanceof BadSource) return outbox.importLines(e.value);
    throw e;
  }
  return outbox.importLines(read);
}

Outbox.prototype.export = function () {
  return exportRecords(this);
};

Outbox.prototype.import = function (source) {
  return importRecords(this, source);
};
