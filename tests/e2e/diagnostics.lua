-- Headless Neovim as a real LSP client for tests/e2e/test_neovim.py.
--
-- Inputs come from environment variables (BATON_E2E_*) because 0.7 has no `-l` and argv
-- handling differs between versions. Works on 0.7.2 (Debian bookworm: `start_client`,
-- push diagnostics) and 0.8+ (`vim.lsp.start`; 0.10 pulls diagnostics). The result is
-- written as JSON to BATON_E2E_OUT; nvim exits non-zero when the script itself failed.

local env = vim.env
local file = env.BATON_E2E_FILE
local root = env.BATON_E2E_ROOT
local out_path = env.BATON_E2E_OUT
local timeout_ms = tonumber(env.BATON_E2E_TIMEOUT_MS or "20000")
local cmd = vim.fn.json_decode(env.BATON_E2E_CMD)

local v = vim.version()
local result = {
  nvim = string.format("%d.%d.%d", v.major, v.minor, v.patch),
  diagnostics = {},
  publications = {},
  timed_out = false,
}

local function write_result()
  -- vim.fn.json_encode behaves the same on every version (vim.json varies between them).
  vim.fn.writefile({ vim.fn.json_encode(result) }, out_path)
end

local function main()
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local fname = vim.api.nvim_buf_get_name(buf)

  -- Record every answer about this file, so we can wait for the one that reflects our
  -- didOpen: a push carrying the document version (background indexing pushes without
  -- one), or a pull response (0.10+ advertise pull diagnostics, so the server never pushes).
  local function hook(method, kind, items_of)
    local original = vim.lsp.handlers[method]
    if not original then
      return
    end
    vim.lsp.handlers[method] = function(err, res, ctx, config)
      local uri = res and res.uri or (ctx and ctx.params and ctx.params.textDocument
        and ctx.params.textDocument.uri)
      if res and uri and vim.uri_to_fname(uri) == fname then
        local version = res.version
        if version == vim.NIL then
          version = nil
        end
        if kind == "pull" then
          version = ctx.version or 0 -- a pull always answers for the current text
        end
        table.insert(result.publications,
          { kind = kind, version = version or -1, count = #(items_of(res) or {}) })
      end
      return original(err, res, ctx, config)
    end
  end
  hook("textDocument/publishDiagnostics", "push", function(res) return res.diagnostics end)
  hook("textDocument/diagnostic", "pull", function(res) return res.items end)

  local config = {
    name = "baton",
    cmd = cmd,
    root_dir = root,
    on_exit = function(code, signal)
      result.server_exit = { code = code, signal = signal }
    end,
  }
  local id
  if vim.lsp.start then
    id = vim.lsp.start(config, { bufnr = buf })
  else
    id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(buf, id)
  end
  if not id then
    error("the LSP client did not start")
  end

  local answered = vim.wait(timeout_ms, function()
    for _, p in ipairs(result.publications) do
      if p.version >= 0 then
        return true
      end
    end
    return false
  end, 20)
  result.timed_out = not answered

  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics, {
      code = d.code,
      line = d.lnum,
      col = d.col,
      message = d.message,
      severity = d.severity,
      source = d.source,
    })
  end

  -- A clean shutdown/exit handshake; the client disappears once the server process exits.
  vim.lsp.stop_client(id)
  result.stopped = vim.wait(10000, function()
    return vim.lsp.get_client_by_id(id) == nil
  end, 20)
end

local ok, err = xpcall(main, debug.traceback)
if not ok then
  result.error = tostring(err)
end
write_result()
vim.cmd(ok and "qa!" or "cq!")
