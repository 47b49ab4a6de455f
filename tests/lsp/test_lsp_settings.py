"""The client's options as the server reads them (no server process)."""

from __future__ import annotations

from torchtriage.lsp.settings import SettingsManager


def test_profile_steps_null_or_0_is_the_adaptive_window_and_a_number_is_kept() -> None:
    warnings: list[str] = []
    manager = SettingsManager(warn=warnings.append)
    manager.update_client({"profileSteps": 3})
    assert manager.profile_steps == 3
    for automatic in ({"profileSteps": 0}, {"profileSteps": None}, {}):
        manager.update_client(automatic)
        assert manager.profile_steps is None, automatic  # no --active: the CLI records until the mean step is known
    assert warnings == []
    for bad in (-1, 2.5, "5", 1001):
        manager.update_client({"profileSteps": bad})
        assert manager.profile_steps is None
    assert len(warnings) == 4 and all("profileSteps" in w for w in warnings), warnings
