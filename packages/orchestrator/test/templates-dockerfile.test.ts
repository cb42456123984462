import { describe, expect, it } from "vitest";
import { DockerfileError, parseDockerfile } from "../src/templates/dockerfile/parse-dockerfile.js";

describe("parseDockerfile", () => {
  it("converts every supported instruction to steps", () => {
    const parsed = parseDockerfile(
      [
        "# comment",
        "ARG SUITE=bookworm",
        "FROM debian:${SUITE}",
        "ARG VERSION=1",
        "ENV A=1 B=\"two words\"",
        "ENV LEGACY some value",
        "RUN apt-get update && \\",
        "    apt-get install -y curl",
        "WORKDIR /app",
        "COPY --chown=user:user --chmod=755 a.txt b/ /app/",
        "ADD c.txt /c.txt",
        "USER user",
        'RUN ["echo", "hi there"]',
        "EXPOSE 8080",
        'ENTRYPOINT ["python3", "-m"]',
        "CMD http.server",
      ].join("\n"),
    );
    expect(parsed.from).toBe("debian:bookworm");
    expect(parsed.startCmd).toBe("python3 -m http.server");
    expect(parsed.userChanged).toBe(true);
    expect(parsed.steps.map((s) => [s.type, s.args, s.line])).toEqual([
      ["ARG", ["VERSION", "1"], 4],
      ["ENV", ["A", "1", "B", "two words"], 5],
      ["ENV", ["LEGACY", "some value"], 6],
      ["RUN", ["apt-get update &&  apt-get install -y curl"], 7],
      ["WORKDIR", ["/app"], 9],
      ["COPY", ["a.txt", "/app/", "user:user", "0755"], 10],
      ["COPY", ["b/", "/app/", "user:user", "0755"], 10],
      ["COPY", ["c.txt", "/c.txt", "", ""], 11],
      ["USER", ["user"], 12],
      ["RUN", ["echo 'hi there'"], 13],
    ]);
  });

  it("names the line of an unsupported instruction", () => {
    const text = "FROM debian:bookworm\nRUN true\n\nHEALTHCHECK CMD true\n";
    expect(() => parseDockerfile(text)).toThrow(DockerfileError);
    expect(() => parseDockerfile(text)).toThrow(/line 4: unsupported instruction HEALTHCHECK/);
  });

  it("rejects what needs a Docker engine", () => {
    expect(() => parseDockerfile("FROM a AS x\nFROM b\n")).toThrow(/line 2: multi-stage/);
    expect(() => parseDockerfile("FROM debian\nCOPY --from=x /a /b\n")).toThrow(/line 2/);
    expect(() => parseDockerfile("FROM debian\nADD https://example.com/x /x\n")).toThrow(/URL/);
    expect(() => parseDockerfile("RUN true\n")).toThrow(/line 1: RUN before FROM/);
    expect(() => parseDockerfile("FROM debian\nCOPY ../x /x\n")).toThrow(/build context/);
  });
});
