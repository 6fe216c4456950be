// Webview side of the plan graph: renders the Mermaid text the extension posts.
/* global mermaid, acquireVsCodeApi */
(function () {
  const vscode = acquireVsCodeApi();
  const dark = document.body.classList.contains("vscode-dark") || document.body.classList.contains("vscode-high-contrast");
  mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: dark ? "dark" : "default" });
  let counter = 0;
  let latest = 0;
  const error = document.getElementById("error");
  window.addEventListener("message", async (event) => {
    const msg = event.data;
    if (msg.type === "error") {
      error.hidden = false;
      error.textContent = msg.message;
      return;
    }
    if (msg.type !== "render") return;
    const mine = ++latest;
    document.getElementById("title").textContent = msg.title;
    document.getElementById("summary").textContent = msg.summary;
    try {
      const { svg } = await mermaid.render("baton-graph-" + ++counter, msg.mermaid);
      if (mine !== latest) return; // a newer state arrived while this one rendered
      document.getElementById("graph").innerHTML = svg;
      error.hidden = true;
      document.body.dataset.rendered = String(counter);
    } catch (err) {
      error.hidden = false;
      error.textContent = String(err && err.message ? err.message : err);
    }
  });
  vscode.postMessage({ type: "ready" });
})();
