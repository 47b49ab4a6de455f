// Starts an isolated code-server (own user-data, extensions and config dirs) and stops it.
import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import * as path from "node:path";

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** tools: {codeServer, nodeBin}; returns {url, stop, log()} */
export async function startCodeServer({ tools, root, vsix, userSettings, env }) {
  const userData = path.join(root, "user-data");
  const extensions = path.join(root, "extensions");
  const config = path.join(root, "config.yaml");
  mkdirSync(path.join(userData, "User"), { recursive: true });
  writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify(userSettings, null, 2));
  writeFileSync(config, "auth: none\ncert: false\n");
  const fullEnv = { ...process.env, ...env, PATH: `${tools.nodeBin}:${process.env.PATH}` };
  const common = ["--config", config, "--user-data-dir", userData, "--extensions-dir", extensions];
  execFileSync(tools.codeServer, [...common, "--install-extension", vsix, "--force"], { env: fullEnv, stdio: "pipe" });
  const port = await freePort();
  const child = spawn(
    tools.codeServer,
    [...common, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check"],
    { env: fullEnv, stdio: ["ignore", "pipe", "pipe"], detached: true },
  );
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const deadline = Date.now() + 60_000;
  while (!/HTTP server listening/.test(output)) {
    if (child.exitCode !== null) throw new Error(`code-server exited: ${output}`);
    if (Date.now() > deadline) throw new Error(`code-server did not start: ${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url: `http://127.0.0.1:${port}/`,
    log: () => output,
    stop: () => {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // gone
      }
    },
  };
}
