"""torchtriage: why is my PyTorch training slow? Static hot-loop hazards and runtime profiles."""

__version__ = "0.1.0"
