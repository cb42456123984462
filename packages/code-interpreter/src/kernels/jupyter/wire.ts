// The Jupyter messaging protocol's wire format (v5.3): `<IDS|MSG>`, an HMAC-SHA256 signature, then header,
// parent header, metadata and content as JSON frames, then binary buffers.
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol/errors";

export const DELIMITER = "<IDS|MSG>";
export const PROTOCOL_VERSION = "5.3";

export interface MessageHeader {
  msg_id: string;
  msg_type: string;
  session: string;
  username: string;
  date: string;
  version: string;
}

export interface JupyterMessage<C = Record<string, unknown>> {
  header: MessageHeader;
  parent_header: Partial<MessageHeader>;
  metadata: Record<string, unknown>;
  content: C;
}

/** The reason of a kernel message with a bad signature or shape (DataLoss: the bytes are not a message of ours). */
export const BAD_KERNEL_MESSAGE = "bad_kernel_message";

function wireError(message: string): BurrowError {
  return new BurrowError(Code.DataLoss, message, { reason: BAD_KERNEL_MESSAGE });
}

export class MessageCodec {
  readonly #key: Buffer;

  constructor(
    key: string,
    readonly session: string,
  ) {
    this.#key = Buffer.from(key, "utf8");
  }

  create<C>(msgType: string, content: C): JupyterMessage<C> {
    return {
      header: {
        msg_id: randomUUID(),
        msg_type: msgType,
        session: this.session,
        username: "burrow",
        date: new Date().toISOString(),
        version: PROTOCOL_VERSION,
      },
      parent_header: {},
      metadata: {},
      content,
    };
  }

  encode(msg: JupyterMessage<unknown>): Buffer[] {
    const parts = [msg.header, msg.parent_header, msg.metadata, msg.content].map((p) => Buffer.from(JSON.stringify(p), "utf8"));
    return [Buffer.from(DELIMITER), Buffer.from(this.#sign(parts)), ...parts];
  }

  /** Frames as received (routing ids first); throws (BAD_KERNEL_MESSAGE) on a bad signature or shape. */
  decode(frames: Buffer[]): JupyterMessage {
    const at = frames.findIndex((f) => f.length === DELIMITER.length && f.toString("latin1") === DELIMITER);
    if (at < 0 || frames.length < at + 6) throw wireError("message without delimiter or frames");
    const signature = frames[at + 1]!;
    const parts = frames.slice(at + 2, at + 6);
    const expected = Buffer.from(this.#sign(parts));
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) throw wireError("bad message signature");
    const [header, parent, metadata, content] = parts.map((p) => JSON.parse(p.toString("utf8")) as unknown);
    if (typeof header !== "object" || header === null || typeof content !== "object" || content === null) {
      throw wireError("malformed message");
    }
    return {
      header: header as MessageHeader,
      parent_header: (parent ?? {}) as Partial<MessageHeader>,
      metadata: (metadata ?? {}) as Record<string, unknown>,
      content: content as Record<string, unknown>,
    };
  }

  #sign(parts: Buffer[]): string {
    const hmac = createHmac("sha256", this.#key);
    for (const p of parts) hmac.update(p);
    return hmac.digest("hex");
  }
}
