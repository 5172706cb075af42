"""The simplifier's rule sets, one file per family; DEFAULT_RULE_SETS is what Analyzer uses."""

from tessel.arith.rules.divmod import DIVMOD_RULES
from tessel.arith.rules.logical import LOGICAL_RULES
from tessel.arith.rules.minmax import MINMAX_RULES
from tessel.arith.rules.select import SELECT_RULES

DEFAULT_RULE_SETS = (DIVMOD_RULES, MINMAX_RULES, SELECT_RULES, LOGICAL_RULES)

__all__ = ["DEFAULT_RULE_SETS", "DIVMOD_RULES", "LOGICAL_RULES", "MINMAX_RULES", "SELECT_RULES"]
