from __future__ import annotations

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("ipykernel")

