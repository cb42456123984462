// A Dockerfile as an SDK Template: parsed by Burrow's parser (errors carry line numbers), then expressed with
// the SDK's builder so that uploads, file hashes and the build protocol are exactly the SDK's.
import { isAbsolute } from "node:path";
import { Template, waitForTimeout, type TemplateBuilder, type TemplateClass } from "e2b";
import { parseDockerfile } from "@burrow/orchestrator";

export interface DockerfileTemplateOptions {
  contextDir: string;
  /** Whether FROM names an existing template on the server (then it is used with fromTemplate). */
  isTemplate: (name: string) => Promise<boolean>;
  readyCmd?: string | undefined;
}

const IMAGE_LIKE = /^(?:oci:|oci-archive:|docker-archive:|(?:docker\.io\/)?(?:library\/)?debian(?::|$)|e2bdev\/)/;

export async function dockerfileTemplate(text: string, opts: DockerfileTemplateOptions): Promise<TemplateClass> {
  const parsed = parseDockerfile(text);
  const start = Template({ fileContextPath: opts.contextDir });
  const localImage = isAbsolute(parsed.from) || /^(?:oci|oci-archive|docker-archive):/.test(parsed.from);
  let t: TemplateBuilder =
    !IMAGE_LIKE.test(parsed.from) && !isAbsolute(parsed.from) && (await opts.isTemplate(parsed.from))
      ? start.fromTemplate(parsed.from)
      : start.fromImage(parsed.from);
  // Docker's defaults while building; E2B's (user in /home/user) afterwards unless the Dockerfile chose.
  t = t.setUser("root").setWorkdir("/");
  for (const step of parsed.steps) {
    switch (step.type) {
      case "RUN":
        t = t.runCmd(step.args[0] ?? "");
        break;
      case "COPY": {
        const [src = "", dest = "", owner = "", mode = ""] = step.args;
        t = t.copy(src, dest, {
          ...(owner ? { user: owner } : {}),
          ...(mode ? { mode: Number.parseInt(mode, 8) } : {}),
        });
        break;
      }
      case "WORKDIR":
        t = t.setWorkdir(step.args[0] ?? "/");
        break;
      case "USER":
        t = t.setUser(step.args[0] ?? "root");
        break;
      case "ENV":
      case "ARG": {
        // The SDK has no ARG step; like its own fromDockerfile, build args become ENV.
        const envs: Record<string, string> = {};
        for (let i = 0; i + 1 < step.args.length; i += 2) envs[step.args[i] as string] = step.args[i + 1] as string;
        if (Object.keys(envs).length > 0) t = t.setEnvs(envs);
        break;
      }
    }
  }
  if (!localImage) {
    if (!parsed.userChanged) t = t.setUser("user");
    if (!parsed.workdirChanged) t = t.setWorkdir("/home/user");
  }
  if (parsed.startCmd) return t.setStartCmd(parsed.startCmd, opts.readyCmd ?? waitForTimeout(1000));
  return t;
}
