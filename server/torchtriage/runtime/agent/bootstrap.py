"""Entry point run by the user's interpreter: ``python bootstrap.py SCRIPT [ARGS...]``.

Loads the agent package from this folder under a private name (nothing to
install in the user's environment), makes the process look like
``python SCRIPT ARGS`` (argv, sys.path[0]) and runs the session (the lab's
measuring session when the settings have a ``lab`` key).  Settings
arrive as JSON in the ``TORCHTRIAGE_AGENT`` environment variable; progress
goes to the file descriptor named there.

Under torchrun (settings with ``"ranks": true`` and torchrun's ``RANK`` in the
environment) each rank writes into ``rank<RANK>/`` of the run folder and sends
its progress into the FIFO named by ``progress_path`` (torchrun passes no file
descriptors to its workers); every event then carries the rank.
"""

import fcntl
import importlib.util
import json
import os
import sys

PACKAGE = "_torchtriage_agent"


def _load_package(folder):
    spec = importlib.util.spec_from_file_location(PACKAGE, os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = module
    spec.loader.exec_module(module)
    return module


def _write_status(out_dir, status, message, code):
    data = {"status": {"status": status, "message": message, "traceback": "", "exit_code": code},
            "meta": {"python": sys.version.split()[0], "executable": sys.executable}, "warnings": []}
    with open(os.path.join(out_dir, "agent.json"), "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def _rank_setup(config):
    """Under torchrun: this rank's folder, and its end of the progress FIFO (None if nobody reads it)."""
    rank = os.environ.get("RANK")
    if not config.get("ranks") or rank is None:
        return
    config["rank"] = int(rank)
    config["root_dir"] = config["out_dir"]
    config["out_dir"] = os.path.join(config["out_dir"], "rank" + rank)
    os.makedirs(config["out_dir"], exist_ok=True)
    config["progress_fd"] = None
    path = config.get("progress_path")
    if path:
        try:  # non-blocking open: fails at once instead of waiting when the reader is gone
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            return
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        config["progress_fd"] = fd


def main():
    folder = os.path.dirname(os.path.abspath(__file__))
    _load_package(folder)  # imports nothing that needs torch: the exit codes are read before torch is
    from _torchtriage_agent.wire import EXIT_AGENT_ERROR, EXIT_NO_TORCH

    config = json.loads(os.environ.pop("TORCHTRIAGE_AGENT", "{}"))
    _rank_setup(config)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    config["script"] = script
    fd = config.get("progress_fd")
    try:
        import torch  # noqa: F401
    except ImportError as exc:
        _write_status(config["out_dir"], "no_torch", f"{sys.executable} cannot import torch ({exc})", EXIT_NO_TORCH)
        sys.exit(EXIT_NO_TORCH)
    from _torchtriage_agent.channel import Channel

    if config.get("lab"):  # torchtriage lab: one measured configuration instead of a profile
        from _torchtriage_agent.lab.session import LabSession as Session
    else:
        from _torchtriage_agent.session import Session

    channel = Channel(fd, {"rank": config["rank"]} if "rank" in config else None)
    try:
        session = Session(config, channel)
    except Exception as exc:
        _write_status(config["out_dir"], "raised", f"the profiling agent could not start: {exc}", EXIT_AGENT_ERROR)
        sys.exit(EXIT_AGENT_ERROR)
    code = session.run()
    channel.close()
    sys.stdout.flush()
    sys.stderr.flush()
    sys.exit(code)


if __name__ == "__main__":
    main()
