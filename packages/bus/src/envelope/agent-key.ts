import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, createHash, type KeyObject } from "node:crypto";
import { BurrowError, Code } from "@burrow/protocol";

/** One Ed25519 key per agent. The private half never leaves the agent; the raw 32-byte public half is registered. */
export interface AgentKey {
  readonly agentId: string;
  /** Short stable id of the public key (first 16 hex chars of its SHA-256), so keys can rotate. */
  readonly keyId: string;
  readonly publicKey: Uint8Array;
  sign(data: Uint8Array): Uint8Array;
}

export function keyIdOf(publicKey: Uint8Array): string {
  return createHash("sha256").update(publicKey).digest("hex").slice(0, 16);
}

function rawPublic(k: KeyObject): Uint8Array {
  const jwk = k.export({ format: "jwk" });
  return new Uint8Array(Buffer.from(jwk.x!, "base64url"));
}

export function publicKeyObject(raw: Uint8Array): KeyObject {
  if (raw.length !== 32) throw new BurrowError(Code.InvalidArgument, "an Ed25519 public key is 32 bytes");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") }, format: "jwk" });
}

function fromPrivate(agentId: string, priv: KeyObject): AgentKey {
  const publicKey = rawPublic(createPublicKey(priv));
  return {
    agentId,
    keyId: keyIdOf(publicKey),
    publicKey,
    sign: (data) => new Uint8Array(sign(null, data, priv)),
  };
}

export function generateAgentKey(agentId: string): AgentKey {
  return fromPrivate(agentId, generateKeyPairSync("ed25519").privateKey);
}

/** Loads an agent key from a PKCS#8 PEM private key (e.g. one kept in a secret). */
export function agentKeyFromPem(agentId: string, pem: string): AgentKey {
  const priv = createPrivateKey(pem);
  if (priv.asymmetricKeyType !== "ed25519") throw new BurrowError(Code.InvalidArgument, "agent keys are Ed25519");
  return fromPrivate(agentId, priv);
}

export function verifySignature(publicKey: KeyObject, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    return verify(null, data, publicKey, signature);
  } catch {
    return false;
  }
}
