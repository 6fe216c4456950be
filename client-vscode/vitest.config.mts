import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    // The real `vscode` module only exists inside VS Code; tests use a small fake of the API.
    alias: { vscode: fileURLToPath(new URL("./test/vscode.ts", import.meta.url)) },
  },
  test: { include: ["test/**/*.test.ts"], environment: "node" },
});
