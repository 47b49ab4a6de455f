"""Static analysis: source text -> findings (and fixes).  Imports no host."""

from .autofix import FixResult, fix_source
from .engine import analyze_source
from .parsing import parse_source
from .rules import Rule, all_rules, rule_by_code

__all__ = ["FixResult", "Rule", "all_rules", "analyze_source", "fix_source", "parse_source", "rule_by_code"]
