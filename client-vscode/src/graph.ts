// Plan graph: the server's Mermaid text plus one class per phase, both from `baton.showGraph`
// (the phase statuses are the server's run follower's, else the plan's own markers).
import type { NodeStatus } from "./treeModel";
import type { RunSnapshot } from "./workflows";

/** `baton.showGraph`'s answer. */
export interface GraphResult {
  mermaid: string;
  waves: string[][];
  cycles: string[][];
  critical_path: string[];
  /** Phase id → status: what the plan's latest run did to it, else its `[COMPLETE]` marker. */
  phases?: Record<string, NodeStatus>;
  /** The plan's latest run as the server holds it; null: no workflow has run the plan. */
  run?: RunSnapshot | null;
}

/** The line above the graph: waves, critical path, cycles and the run's state in the words
 * every other surface uses. */
export function graphSummary(graph: GraphResult): string {
  const waves = graph.waves ?? [];
  return [`${waves.length} wave${waves.length === 1 ? "" : "s"}`,
    graph.critical_path?.length ? `critical path: ${graph.critical_path.join(" → ")}` : "",
    graph.cycles?.length ? `${graph.cycles.length} dependency cycle(s): ${graph.cycles.map((c) => c.join(" → ")).join("; ")}` : "",
    graph.run ? `${graph.run.running ? "running" : "latest run"}: ${graph.run.text}` : "no workflow has run this plan yet"].filter(Boolean).join(" · ");
}

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
