import { join } from "node:path";
import { EmbeddedBus, type Bus } from "../src/index.js";
import { runConformance } from "./conformance/index.js";
import { tempDir } from "./helpers/temp-dir.js";

runConformance("embedded", async () => {
  const dir = tempDir();
  const path = join(dir.path, "bus.db");
  let open: Bus[] = [];
  const closeAll = async () => {
    for (const b of open) await b.close();
    open = [];
  };
  return {
    name: "embedded",
    open: () => {
      const b = new EmbeddedBus({ path });
      open.push(b);
      return Promise.resolve(b);
    },
    // The embedded bus is the server process: a restart is closing the file and opening it again.
    restart: closeAll,
    async dispose() {
      try {
        await closeAll();
      } finally {
        dir.remove();
      }
    },
  };
});
