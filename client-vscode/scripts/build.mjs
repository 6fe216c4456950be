// Bundles the extension with esbuild and copies what the .vsix must carry: the checkpoint
// JSON Schemas from ../schemas (single source of truth) and Mermaid for the graph webview.
import { build, context } from "esbuild";
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const schemas = join(root, "..", "schemas");
mkdirSync(join(root, "schemas"), { recursive: true });
for (const name of readdirSync(schemas).filter((n) => n.endsWith(".schema.json"))) {
  copyFileSync(join(schemas, name), join(root, "schemas", name));
}
const require = createRequire(import.meta.url);
copyFileSync(join(dirname(require.resolve("mermaid/package.json")), "dist", "mermaid.min.js"), join(root, "media", "mermaid.min.js"));

const options = {
  entryPoints: [join(root, "src", "extension.ts")],
  bundle: true,
  outfile: join(root, "dist", "extension.js"),
  external: ["vscode"],
  format: "cjs",
  platform: "node",
  target: "node20",
  sourcemap: !production,
  minify: production,
  logLevel: "info",
};
if (watch) {
  await (await context(options)).watch();
} else {
  await build(options);
}
