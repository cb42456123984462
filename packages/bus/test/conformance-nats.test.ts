import { NatsBus, type Bus } from "../src/index.js";
import { runConformance } from "./conformance/index.js";
import { NatsServerFixture } from "./helpers/nats-server.js";

runConformance("nats", async () => {
  const server = await NatsServerFixture.start();
  let open: Bus[] = [];
  const closeAll = async () => {
    for (const b of open) await b.close().catch(() => undefined);
    open = [];
  };
  return {
    name: "nats",
    async open() {
      const b = await NatsBus.connect({ servers: server.url });
      open.push(b);
      return b;
    },
    async restart() {
      await closeAll();
      await server.restart();
    },
    async dispose() {
      try {
        await closeAll();
      } finally {
        await server.stop();
      }
    },
  };
});
