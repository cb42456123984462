// JSON request bodies must already carry the types their schema declares. Fastify's validator coerces types
// (`"30"` → 30, `5` → "5", `0` → false) because query strings need it; for a JSON body that would silently
// accept what E2B's API rejects with 400. This check runs before validation, on the body as sent.
import type { FastifyRequest } from "fastify";
import { BurrowError, Code } from "@burrow/protocol";

interface TypeSchema {
  type?: string | readonly string[];
  properties?: Record<string, TypeSchema>;
  additionalProperties?: boolean | TypeSchema;
  items?: TypeSchema;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function typeMatches(actual: string, expected: string): boolean {
  return actual === expected || (expected === "number" && actual === "integer");
}

/** The first place where `value` has a JSON type its schema does not allow, or undefined. */
export function typeMismatch(value: unknown, schema: TypeSchema, path: string): string | undefined {
  if (schema.type !== undefined) {
    const expected = typeof schema.type === "string" ? [schema.type] : schema.type;
    const actual = jsonType(value);
    if (!expected.some((t) => typeMatches(actual, t))) return `${path || "body"} must be ${expected.join(" or ")}, got ${actual}`;
  }
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      const extra = typeof schema.additionalProperties === "object" ? schema.additionalProperties : undefined;
      const sub = schema.properties?.[key] ?? extra;
      const found = sub ? typeMismatch(child, sub, path ? `${path}.${key}` : key) : undefined;
      if (found) return found;
    }
  }
  if (Array.isArray(value) && schema.items) {
    for (const [i, child] of value.entries()) {
      const found = typeMismatch(child, schema.items, `${path}[${i}]`);
      if (found) return found;
    }
  }
  return undefined;
}

/** preValidation hook for routes with a JSON body schema. */
export async function strictJsonBody(request: FastifyRequest): Promise<void> {
  const schema = request.routeOptions.schema?.body as TypeSchema | undefined;
  if (!schema || request.body === undefined) return;
  const mismatch = typeMismatch(request.body, schema, "");
  if (mismatch) throw new BurrowError(Code.InvalidArgument, `invalid request body: ${mismatch}`);
}
