// Jupyter message framing and signing.
import { describe, expect, it } from "vitest";
import { DELIMITER, MessageCodec } from "../src/kernels/jupyter/wire.js";

const badMessage = expect.objectContaining({ reason: "bad_kernel_message" });

describe("MessageCodec", () => {
  const codec = new MessageCodec("secret", "session-1");

  it("round-trips a message with routing ids in front", () => {
    const msg = codec.create("execute_request", { code: "1+1" });
    const frames = codec.encode(msg);
    expect(frames[0]!.toString()).toBe(DELIMITER);
    const decoded = codec.decode([Buffer.from("routing-id"), ...frames]);
    expect(decoded.header.msg_type).toBe("execute_request");
    expect(decoded.header.session).toBe("session-1");
    expect(decoded.header.version).toBe("5.3");
    expect(decoded.content).toEqual({ code: "1+1" });
  });

  it("refuses a message signed with another key or tampered with", () => {
    const frames = new MessageCodec("other", "s").encode(codec.create("status", {}));
    expect(() => codec.decode(frames)).toThrow(badMessage);
    const good = codec.encode(codec.create("status", { execution_state: "idle" }));
    good[5] = Buffer.from(JSON.stringify({ execution_state: "busy" }));
    expect(() => codec.decode(good)).toThrow(badMessage);
    expect(() => codec.decode([Buffer.from("no delimiter")])).toThrow(badMessage);
  });
});
