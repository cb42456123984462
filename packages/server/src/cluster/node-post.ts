// A POST from one node to another with node:http rather than fetch: fetch gives up on an answer that takes more than
// five minutes to start (undici's headers timeout), and a drain or a take-over (a cold boot after a transfer) may.
import { request as httpRequest } from "node:http";

export function postToNode(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: "POST", headers: { "content-type": "application/json", ...headers, "content-length": String(Buffer.byteLength(body)) }, ...(signal ? { signal } : {}) },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 502, body: text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
