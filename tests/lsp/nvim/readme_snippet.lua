-- Runs the README's Neovim snippet as a user's config would, on the file given on the command line.
-- Env: TT_SNIPPET (the snippet, cut from README.md), TT_OUT (result path). Records notifications,
-- the last error message and the clients started (and initialized), then quits.
local notes = {}
vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level }) end
dofile(os.getenv("TT_SNIPPET"))
vim.api.nvim_create_autocmd("VimEnter", {
  callback = function()
    -- A started client counts once initialized; a notification ends the wait at once.
    vim.wait(20000, function() return #notes > 0 or #vim.lsp.get_active_clients() > 0 end, 50)
    local clients = {}
    for _, client in ipairs(vim.lsp.get_active_clients()) do table.insert(clients, client.name) end
    local handle = io.open(os.getenv("TT_OUT"), "w")
    local result = { filetype = vim.bo.filetype, notes = notes, errmsg = vim.v.errmsg, clients = clients }
    handle:write(vim.fn.json_encode(result))
    handle:close()
    vim.cmd("qall!")
  end,
})
