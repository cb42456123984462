import type { Logger } from "./log.js";
import type { ProcessTable } from "./process/process-table.js";
import type { EnvdState } from "./state.js";
import type { UserDb } from "./users/user-db.js";

/** Everything a request handler may touch; created once per envd and passed in (no module-level state). */
export interface EnvdContext {
  readonly state: EnvdState;
  readonly users: UserDb;
  readonly processes: ProcessTable;
  readonly log: Logger;
}
