// Which node runs a trigger's or task's run when the nodes share one bus (the runner's `nodeFor`): a run in a sandbox
// goes to the node that has it (from the owners' mirror; a lost one, or one nobody is known to have, stays here and
// fails here as it would anywhere), and a run in a fresh sandbox goes where placement would put a create of its
// template, so that trigger sandboxes spread over the cluster like any other.
import type { RunTarget } from "@burrow/bus";
import type { CreatePlacement } from "./create-placement.js";
import type { Membership } from "./membership.js";
import type { SandboxOwners } from "./sandbox-owners.js";

export interface TaskNodesDeps {
  membership: Membership;
  owners: SandboxOwners;
  /** Whether this node has the sandbox (running or paused). */
  isLocal: (sandboxId: string) => boolean;
  /** The create placement, once the server has made it. */
  placement: () => CreatePlacement | undefined;
}

export function taskNodes(d: TaskNodesDeps): (target: RunTarget) => string | undefined {
  const self = d.membership.nodeName;
  const upElsewhere = (node: string | undefined) => (node !== undefined && node !== self && d.membership.node(node)?.status === "up" ? node : undefined);
  return (target) => {
    if ("sandboxId" in target) {
      if (d.isLocal(target.sandboxId)) return undefined;
      const record = d.owners.cachedRecord(target.sandboxId);
      return record?.lostAt === undefined ? upElsewhere(record?.node) : undefined;
    }
    return upElsewhere(d.placement()?.choose(target.template));
  };
}
