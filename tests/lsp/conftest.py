"""pytest-lsp fixture: the real server process over stdio."""

from __future__ import annotations

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_helpers import SELECT, SERVER, make_client, start


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def client(lsp_client: LanguageClient):
    await start(lsp_client, options={"select": SELECT})
    yield
    await lsp_client.shutdown_session()
