// What a sandbox's network plumbing needs: the veth pair's host end and the bridge it joins, eth0's MAC, address
// and default route. The launcher does the plumbing itself over netlink for the sandboxes it starts (native/
// netlink.c, before the sandbox runs anything); burrow-netattach does the same for a namespace made elsewhere.

export interface NetPlumbing {
  /** Host end of the veth pair; its peer is the sandbox's eth0. */
  hostVeth: string;
  bridge: string;
  /** eth0's MAC address. */
  mac: string;
  /** eth0's address with the subnet's prefix length, `a.b.c.d/len`. */
  address: string;
  /** Default route (the bridge's address). */
  gateway: string;
  mtu: number;
}

/** The `--net-*` options of burrow-sandbox and burrow-netattach. */
export function netPlumbingArgs(p: NetPlumbing): string[] {
  return [
    "--net-veth", p.hostVeth,
    "--net-bridge", p.bridge,
    "--net-mac", p.mac,
    "--net-addr", p.address,
    "--net-gateway", p.gateway,
    "--net-mtu", String(p.mtu),
  ];
}
