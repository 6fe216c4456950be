-- Headless Neovim running a user's Baton configuration as written, for
-- tests/e2e/test_neovim_config.py. BATON_E2E_INIT is the configuration (sourced as init.lua
-- would be); then a markdown file outside any workspace is opened (no client may start),
-- then a plan of the workspace (the configuration must start `baton lsp` and its
-- diagnostics must reach vim.diagnostic). The result is JSON in BATON_E2E_OUT.

local env = vim.env
local timeout_ms = tonumber(env.BATON_E2E_TIMEOUT_MS or "30000")
local expected = vim.fn.json_decode(env.BATON_E2E_EXPECT)
local result = { timed_out = false, outside_clients = -1, clients = {}, diagnostics = {} }

-- Runs after whatever opening a buffer scheduled (vim.lsp.enable starts clients from a
-- vim.schedule callback): the event queue is FIFO, so this is an event, not a sleep.
local function settle()
  local done = false
  vim.schedule(function()
    done = true
  end)
  vim.wait(timeout_ms, function()
    return done
  end, 10)
end

local function seen(buf)
  local keys = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    keys[#keys + 1] = string.format("%s:%d", tostring(d.code), d.lnum)
  end
  table.sort(keys)
  return keys
end

local function main()
  dofile(env.BATON_E2E_INIT)

  vim.cmd.edit(vim.fn.fnameescape(env.BATON_E2E_OUTSIDE))
  settle()
  result.outside_clients = #vim.lsp.get_clients()

  vim.cmd.edit(vim.fn.fnameescape(env.BATON_E2E_FILE))
  local buf = vim.api.nvim_get_current_buf()
  settle()
  result.timed_out = not vim.wait(timeout_ms, function()
    return vim.deep_equal(seen(buf), expected)
  end, 20)
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(result.diagnostics, { code = d.code, line = d.lnum, source = d.source })
  end
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    table.insert(result.clients, {
      name = client.name,
      root_dir = client.root_dir or vim.NIL,
      cmd = client.config.cmd,
      server = client.server_info and client.server_info.name or vim.NIL,
    })
    client:stop()
  end
  result.stopped = vim.wait(10000, function()
    return #vim.lsp.get_clients() == 0
  end, 20)
end

-- After start-up, as a user's session runs: Neovim turns filetype detection (which
-- vim.lsp.enable and FileType autocommands start from) on only once -u's file was sourced.
vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  nested = true, -- so that opening a file fires BufRead and FileType as it does for a user
  callback = function()
    local ok, err = xpcall(main, debug.traceback)
    if not ok then
      result.error = tostring(err)
    end
    vim.fn.writefile({ vim.fn.json_encode(result) }, env.BATON_E2E_OUT)
    vim.cmd(ok and "qa!" or "cq!")
  end,
})
