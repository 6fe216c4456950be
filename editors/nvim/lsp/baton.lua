-- Baton's language server for Neovim >= 0.11, in nvim-lspconfig's `lsp/<name>.lua` form.
-- Put this file on 'runtimepath' as lsp/baton.lua (e.g. ~/.config/nvim/lsp/baton.lua), then
-- call vim.lsp.enable("baton") in init.lua. `baton` must be on PATH, or write its full path.
---@type vim.lsp.Config
return {
  cmd = { "baton", "lsp" },
  -- Plans, agents, commands and skills (markdown), settings, checkpoints and MCP/OpenCode
  -- configuration (json, jsonc), errors.jsonl, .claude/baton.toml and the state files.
  filetypes = { "markdown", "json", "jsonc", "jsonl", "toml", "sh" },
  -- Only inside a workspace: the nearest directory holding .claude/ or .opencode/ is the
  -- root, and a buffer with neither above it gets no client (on_dir is not called).
  root_dir = function(bufnr, on_dir)
    local root = vim.fs.root(bufnr, { ".claude", ".opencode" })
    if root then
      on_dir(root)
    end
  end,
}
