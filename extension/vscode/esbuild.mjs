// Bundles the extension (dist/extension.js) or, with --tests, the unit tests (out/test/*.test.js).
import { build, context } from "esbuild";
import { readdirSync } from "node:fs";

const args = new Set(process.argv.slice(2));
const production = args.has("--production");

const options = args.has("--tests")
  ? {
      entryPoints: readdirSync("test/unit").filter((f) => f.endsWith(".test.ts")).map((f) => `test/unit/${f}`),
      outdir: "out/test",
      bundle: true,
      platform: "node",
      format: "cjs",
      target: "node20",
      external: ["vscode"], // a pure module that imports it fails loudly under plain node
      logLevel: "warning",
    }
  : {
      entryPoints: ["src/extension.ts"],
      outfile: "dist/extension.js",
      bundle: true,
      platform: "node",
      format: "cjs",
      target: "node20",
      external: ["vscode"],
      minify: production,
      sourcemap: !production,
      logLevel: "warning",
    };

if (args.has("--watch")) {
  await (await context(options)).watch();
} else {
  await build(options);
}
