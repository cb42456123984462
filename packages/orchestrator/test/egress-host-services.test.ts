// Host services (egress/host-services.ts): names share a port only when they share its listener (the model gateway's
// provider hosts on 443), and a service may stay out of sandboxes' /etc/hosts.
import { describe, expect, it } from "vitest";
import { HostServices } from "../src/egress/host-services.js";

describe("host services", () => {
  it("lets names share a port with the same listener, refuses another listener on it, and keeps hostsFile", () => {
    const services = new HostServices();
    services.add({ name: "api.openai.com", hostPort: 40001, port: 443, hostsFile: false });
    expect(services.add({ name: "API.Anthropic.com", hostPort: 40001, port: 443, hostsFile: false })).toEqual({ name: "api.anthropic.com", hostPort: 40001, port: 443, hostsFile: false });
    expect(() => services.add({ name: "other.burrow", hostPort: 40002, port: 443 })).toThrow(/port 443 is already api\.openai\.com's/);
    expect(services.add({ name: "models.burrow", hostPort: 40003 })).toEqual({ name: "models.burrow", hostPort: 40003, port: 80, hostsFile: true });
    expect(services.list().filter((s) => s.hostsFile).map((s) => s.name)).toEqual(["models.burrow"]);
  });
});
