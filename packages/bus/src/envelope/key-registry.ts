import { BurrowError, Code } from "@burrow/protocol";
import type { Bus, KV } from "../types.js";
import { keyIdOf } from "./agent-key.js";

export interface RegisteredKey {
  agentId: string;
  keyId: string;
  publicKey: Uint8Array;
}

/** Where receivers look up senders' public keys. The server registers them; agents only read. */
export interface KeyRegistry {
  register(agentId: string, publicKey: Uint8Array): Promise<RegisteredKey>;
  lookup(agentId: string, keyId: string): Promise<RegisteredKey | null>;
  revoke(agentId: string, keyId: string): Promise<void>;
}

export const KEY_BUCKET = "burrow_agent_keys";

const idRe = /^[A-Za-z0-9_-]{1,128}$/;

export function assertAgentId(agentId: string): void {
  if (!idRe.test(agentId)) throw new BurrowError(Code.InvalidArgument, `invalid agent id "${agentId}" (want [A-Za-z0-9_-]{1,128})`);
}

/** Keys kept in a bus KV bucket, so every server and agent on the bus sees the same registry. */
export class BusKeyRegistry implements KeyRegistry {
  private constructor(private readonly kv: KV) {}

  static async open(bus: Bus): Promise<BusKeyRegistry> {
    return new BusKeyRegistry(await bus.kv(KEY_BUCKET));
  }

  async register(agentId: string, publicKey: Uint8Array): Promise<RegisteredKey> {
    assertAgentId(agentId);
    if (publicKey.length !== 32) throw new BurrowError(Code.InvalidArgument, "an Ed25519 public key is 32 bytes");
    const keyId = keyIdOf(publicKey);
    await this.kv.put(`${agentId}.${keyId}`, publicKey);
    return { agentId, keyId, publicKey };
  }

  async lookup(agentId: string, keyId: string): Promise<RegisteredKey | null> {
    if (!idRe.test(agentId) || !/^[0-9a-f]{16}$/.test(keyId)) return null;
    const e = await this.kv.get(`${agentId}.${keyId}`);
    return e ? { agentId, keyId, publicKey: e.value } : null;
  }

  async revoke(agentId: string, keyId: string): Promise<void> {
    assertAgentId(agentId);
    await this.kv.delete(`${agentId}.${keyId}`);
  }
}
