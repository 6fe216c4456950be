-- Headless Neovim starts a workflow through `workspace/executeCommand` and reads its final
-- status, as a user's `:lua` mapping would. Inputs: BATON_E2E_* environment variables (see
-- diagnostics.lua); the result is JSON in BATON_E2E_OUT. Works on 0.7.2 and 0.8+.

local env = vim.env
local root = env.BATON_E2E_ROOT
local out_path = env.BATON_E2E_OUT
local timeout_ms = tonumber(env.BATON_E2E_TIMEOUT_MS or "30000")
local cmd = vim.fn.json_decode(env.BATON_E2E_CMD)

local result = { changed = {}, progress = {} }

local function write_result()
  vim.fn.writefile({ vim.fn.json_encode(result) }, out_path)
end

local function request(client, command, args)
  local answer, failure
  local done = false
  client.request("workspace/executeCommand", { command = command, arguments = { args } },
    function(err, res)
      failure, answer, done = err, res, true
    end, 0)
  if not vim.wait(timeout_ms, function() return done end, 20) then
    error("no answer to " .. command)
  end
  if failure then
    error(command .. " failed: " .. vim.inspect(failure))
  end
  return answer
end

local function main()
  vim.lsp.handlers["baton/workflowChanged"] = function(_, params)
    table.insert(result.changed, params)
  end
  local original_progress = vim.lsp.handlers["$/progress"]
  vim.lsp.handlers["$/progress"] = function(err, params, ctx, config)
    if params and params.value then
      table.insert(result.progress, params.value.kind)
    end
    if original_progress then
      return original_progress(err, params, ctx, config)
    end
  end
  local config = {
    name = "baton",
    cmd = cmd,
    root_dir = root,
    init_options = { trusted = true },
    on_exit = function(code, signal)
      result.server_exit = { code = code, signal = signal }
    end,
  }
  local id = vim.lsp.start_client(config)
  if not id then
    error("the LSP client did not start")
  end
  local client
  vim.wait(timeout_ms, function()
    client = vim.lsp.get_client_by_id(id)
    return client ~= nil and client.initialized
  end, 20)
  if not (client and client.initialized) then
    error("the server did not initialize")
  end

  local started = request(client, "baton.server.workflow.start",
    { description = "Add a greeting", scope = "research-and-plan", complexity = 1 })
  result.started = started
  local finished = vim.wait(timeout_ms, function()
    for _, p in ipairs(result.changed) do
      if p.workflow_id == started.workflow_id and p.event and p.event.event == "finished" then
        return true
      end
    end
    return false
  end, 20)
  result.timed_out = not finished
  result.status = request(client, "baton.server.workflow.status", { id = started.workflow_id })

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
