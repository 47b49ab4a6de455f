-- Headless Neovim (0.7.2+) as a second real LSP client: attach torchtriage to a
-- file, wait for its diagnostics, request code actions, print JSON, quit.
-- Env: TT_FILE (the Python file), TT_PYTHON (interpreter), TT_OUT (result path).
local file = os.getenv("TT_FILE")
local out = os.getenv("TT_OUT")
local result = { diagnostics = {}, actions = {}, errors = {} }

local function finish()
  local handle = io.open(out, "w")
  handle:write(vim.fn.json_encode(result))
  handle:close()
  vim.cmd("qall!")
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = "torchtriage",
  cmd = { os.getenv("TT_PYTHON"), "-m", "torchtriage", "lsp" },
  root_dir = vim.fn.fnamemodify(file, ":h"),
  init_options = { select = { "TT101", "TT301", "TT303" } },
  on_error = function(code, err) table.insert(result.errors, tostring(code) .. " " .. tostring(err)) end,
})
vim.lsp.buf_attach_client(bufnr, client_id)

local deadline = vim.loop.now() + 30000
local function poll()
  local diagnostics = vim.diagnostic.get(bufnr)
  if #diagnostics == 0 then
    if vim.loop.now() > deadline then
      table.insert(result.errors, "no diagnostics in 30 s")
      return finish()
    end
    return vim.defer_fn(poll, 50)
  end
  for _, d in ipairs(diagnostics) do
    table.insert(result.diagnostics, { code = d.code, lnum = d.lnum, col = d.col, source = d.source, message = d.message })
  end
  local client = vim.lsp.get_client_by_id(client_id)
  local line = 9 -- 0-based: the line with the two blocking copies
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = { start = { line = line, character = 0 }, ["end"] = { line = line, character = 0 } },
    context = { diagnostics = {} },
  }
  client.request("textDocument/codeAction", params, function(err, actions)
    if err then table.insert(result.errors, vim.inspect(err)) end
    for _, action in ipairs(actions or {}) do
      local edits = {}
      for _, change in ipairs((action.edit or {}).documentChanges or {}) do
        for _, e in ipairs(change.edits) do table.insert(edits, e) end
      end
      table.insert(result.actions, { title = action.title, kind = action.kind, edits = edits })
    end
    finish()
  end, bufnr)
end
vim.defer_fn(poll, 50)
