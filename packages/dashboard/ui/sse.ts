// Server-sent events over fetch: EventSource cannot send the X-API-Key header, so the stream is read and split into
// events here. Yields until the server ends the stream or `signal` aborts (then it returns quietly).
import { ApiError, apiKey } from "./api.js";

export interface SseEvent {
  event: string;
  data: string;
}

/** `onOpen` runs once the server has answered 200 (for the bus: the subscription exists). */
export async function* readSse(path: string, signal: AbortSignal, onOpen?: () => void): AsyncGenerator<SseEvent> {
  let res: Response;
  try {
    res = await fetch(path, { headers: { "x-api-key": apiKey(), accept: "text/event-stream" }, signal });
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  }
  if (!res.ok || !res.body) {
    const text = await res.text().catch(() => "");
    let message = text || res.statusText;
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the raw text says enough
    }
    if (res.status === 401) window.dispatchEvent(new CustomEvent("burrow:signed-out"));
    throw new ApiError(res.status, message);
  }
  onOpen?.();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        const data: string[] = [];
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue; // comments: the server's keep-alive pings
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
          if (field === "event") event = text;
          else if (field === "data") data.push(text);
        }
        if (data.length > 0) yield { event, data: data.join("\n") };
      }
    }
  } catch (err) {
    if (signal.aborted) return;
    throw err;
  } finally {
    reader.releaseLock();
  }
}
