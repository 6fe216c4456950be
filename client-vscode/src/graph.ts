// Plan graph: the server's Mermaid text plus one class per phase from the live workflow state.
import type { NodeStatus } from "./treeModel";

const CLASS_DEFS: Record<string, string> = {
  done: "fill:#2e7d32,stroke:#1b5e20,color:#ffffff",
  running: "fill:#1565c0,stroke:#0d47a1,color:#ffffff",
  failed: "fill:#c62828,stroke:#8e0000,color:#ffffff",
  pending: "fill:#eceff1,stroke:#607d8b,color:#263238",
};

/** Mermaid node ids the server uses: `P` + phase id with dots as underscores. */
export function nodeId(phase: string): string {
  return `P${phase.replace(/\./g, "_")}`;
}

export function colourGraph(mermaidText: string, statuses: Record<string, NodeStatus>): string {
  const lines = mermaidText.replace(/\s+$/, "").split("\n");
  const defined = new Set<string>();
  for (const line of lines) {
    const m = /^\s*(P[\w]+)\[/.exec(line);
    if (m) defined.add(m[1]);
  }
  const extra: string[] = [];
  for (const [cls, style] of Object.entries(CLASS_DEFS)) extra.push(`    classDef ${cls} ${style}`);
  for (const id of defined) {
    const status = Object.entries(statuses).find(([p]) => nodeId(p) === id)?.[1];
    const cls = status && status in CLASS_DEFS ? status : "pending";
    extra.push(`    class ${id} ${cls}`);
  }
  return [...lines, ...extra].join("\n") + "\n";
}
