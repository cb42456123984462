import { afterAll, afterEach, beforeAll, beforeEach, describe } from "vitest";
import type { Bus } from "../../src/index.js";
import type { BackendFactory, BusBackend } from "./backend.js";
import { coreSuite } from "./core.js";
import { durableSuite, restartSuite } from "./durable.js";
import { livenessSuite } from "./liveness.js";
import { messagingSuite } from "./messaging.js";
import { queueSuite } from "./queues.js";
import { queueAdminSuite } from "./queue-admin.js";

export type { BackendFactory, BusBackend } from "./backend.js";

/** The one conformance suite: every backend must pass every test in it unchanged. */
export function runConformance(label: string, factory: BackendFactory): void {
  describe(`bus conformance (${label})`, () => {
    let backend: BusBackend | undefined;
    let bus: Bus | undefined;
    beforeAll(async () => {
      backend = await factory();
    });
    afterAll(async () => {
      await backend?.dispose();
    });
    beforeEach(async () => {
      bus = await backend!.open();
    });
    afterEach(async () => {
      await bus?.close();
    });
    const get = () => ({ backend: backend!, bus: bus! });
    coreSuite(get);
    durableSuite(get);
    messagingSuite(get);
    queueSuite(get);
    queueAdminSuite(get);
    livenessSuite(get);
    restartSuite(get, () => backend!.open());
  });
}
