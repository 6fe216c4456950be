// Platform-specific .vsix files with the language server bundled: for each target,
// scripts/bundle_libs.py fills bundled/libs (baton_lsp and its hash-checked runtime wheels from
// PyPI), then `vsce package --target`. No argument: this machine's target (CI's e2e);
// `--all`: every target Baton ships (this machine's last, so bundled/libs matches it after).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
export const TARGETS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"];

/** This machine's `vsce --target`, or undefined when Baton ships none for it. */
export function hostTarget(platform = process.platform, arch = process.arch) {
  const target = `${platform}-${arch}`;
  return TARGETS.includes(target) ? target : undefined;
}

/** The Python that builds the wheel and runs pip: BATON_BUNDLE_PYTHON, the repository's venv
 * (it has the locked setuptools), else python3. */
function buildPython() {
  if (process.env.BATON_BUNDLE_PYTHON) return process.env.BATON_BUNDLE_PYTHON;
  for (const p of [join(root, "..", ".venv", "bin", "python"), join(root, "..", ".venv", "Scripts", "python.exe")]) {
    if (existsSync(p)) return p;
  }
  return process.platform === "win32" ? "python" : "python3";
}

function main(argv) {
  const host = hostTarget();
  let targets;
  if (argv.includes("--all")) {
    targets = [...TARGETS.filter((t) => t !== host), ...(host ? [host] : [])];
  } else {
    const i = argv.indexOf("--target");
    targets = [i >= 0 ? argv[i + 1] : host];
  }
  for (const t of targets) {
    if (!t || !TARGETS.includes(t)) {
      console.error(`package: no bundle for ${t ?? `this machine (${process.platform}-${process.arch})`}; targets: ${TARGETS.join(", ")}`);
      process.exit(2);
    }
  }
  const { version, name } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const python = buildPython();
  const vsce = join(root, "node_modules", ".bin", process.platform === "win32" ? "vsce.cmd" : "vsce");
  for (const target of targets) {
    execFileSync(python, [join(root, "scripts", "bundle_libs.py"), "--target", target], { cwd: root, stdio: "inherit" });
    const out = `${name}-${target}-${version}.vsix`;
    execFileSync(vsce, ["package", "--no-dependencies", "--allow-missing-repository", "--target", target, "--out", out],
      { cwd: root, stdio: "inherit" });
    console.log(`package: ${out}`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
